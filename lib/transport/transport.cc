#include "transport/transport.h"

#include <sched.h>

namespace collx {

namespace {
thread_local OuterProgress t_outer_progress = nullptr;
}  // namespace

OuterProgress set_outer_progress(OuterProgress fn) {
  const OuterProgress before = t_outer_progress;
  t_outer_progress = fn;
  return before;
}

void outer_progress() {
  if (t_outer_progress != nullptr) t_outer_progress();
}

bool has_outer_progress() { return t_outer_progress != nullptr; }

void Transport::begin_op(uint32_t seq, double timeout_s, int spin_us) {
  seq_ = seq;
  timeout_s_ = timeout_s;
  spin_ = std::chrono::microseconds(spin_us);
  deadline_ = Clock::time_point{};
  deadline_of_ = nullptr;
  requests_.clear();
  first_pending_ = 0;
  step_base_ = 0;
  reset_op();
}

void Transport::begin_nested(const Transport& outer) {
  begin_op(outer.seq_, outer.timeout_s_, 0);
  spin_ = outer.spin_;
  step_base_ = outer.step_base_;
  deadline_of_ = &outer;
}

Status Transport::end_op(Status st) {
  if (!st.ok()) cancel(requests_, st.code());
  requests_.clear();
  return st;
}

Status Transport::describe(const Request& r, collx_status_t code, const char* what) const {
  return error(code, "rank %d: %s %s rank %d (%zu bytes, collective #%u, step %u)", named_, what,
               r.is_recv ? "receive from" : "send to", r.peer, r.bytes, seq_, r.step);
}

void Transport::yield() { sched_yield(); }

bool Transport::past_deadline() const {
  if (deadline_of_ != nullptr) return deadline_of_->past_deadline();
  const Clock::time_point now = Clock::now();
  if (deadline_ == Clock::time_point{}) {
    deadline_ = now + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(timeout_s_));
  }
  return now > deadline_;
}

Status Transport::check_wait(int peer, const char* what) const {
  std::string why;
  const int dead = dead_peer(peer, &why);
  if (dead >= 0) {
    return error(COLLX_ERR_PEER_FAILED,
                 "rank %d: rank %d failed (%s) while waiting for rank %d to %s (collective #%u, "
                 "shared-memory step)",
                 named_, dead, why.c_str(), peer, what, seq_);
  }
  if (past_deadline()) {
    return error(COLLX_ERR_TIMEOUT,
                 "rank %d: timed out after %g s waiting for rank %d to %s (collective #%u, "
                 "shared-memory step)",
                 named_, timeout_s_, peer, what, seq_);
  }
  return Status();
}

Status Transport::step_error(const Status& cause, int peer, const char* what) const {
  return error(cause.code(), "rank %d: %s rank %d failed (collective #%u, shared-memory step): %s",
               named_, what, peer, seq_, cause.message().c_str());
}

Status Transport::post_request(int peer, uint32_t step, void* buf, size_t bytes, bool is_recv,
                               Handle* h) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return error(COLLX_ERR_INTERNAL, "rank %d: algorithm addressed invalid peer %d (step %u)",
                 named_, peer, step);
  }
  Request& r = requests_.emplace_back();
  r.buf = buf;
  r.bytes = bytes;
  r.peer = peer;
  r.step = step + step_base_;
  r.is_recv = is_recv;
  if (h != nullptr) *h = static_cast<Handle>(requests_.size() - 1);
  return post(r, seq_);
}

Status Transport::isend(int peer, uint32_t step, const void* buf, size_t bytes, Handle* h) {
  return post_request(peer, step, const_cast<void*>(buf), bytes, false, h);
}

Status Transport::irecv(int peer, uint32_t step, void* buf, size_t bytes, Handle* h) {
  return post_request(peer, step, buf, bytes, true, h);
}

Status Transport::wait_request(Request& r) {
  for (Backoff b(spin_);;) {
    if (r.done) return Status();
    COLLX_TRY(test(r));
    if (r.done) return Status();
    progress();
    if (b.idle()) {
      COLLX_TRY(peer_failure(r));
      if (past_deadline()) {
        return describe(r, COLLX_ERR_TIMEOUT,
                        format("timed out after %g s waiting for", timeout_s_).c_str());
      }
    }
  }
}

Status Transport::wait(Handle h) {
  if (h >= requests_.size()) {
    return error(COLLX_ERR_INTERNAL, "rank %d: wait on unknown handle %u", named_, h);
  }
  return wait_request(requests_[h]);
}

Status Transport::wait_all() {
  for (size_t i = first_pending_; i < requests_.size(); ++i) {
    COLLX_TRY(wait_request(requests_[i]));
  }
  first_pending_ = requests_.size();
  return Status();
}

}  // namespace collx
