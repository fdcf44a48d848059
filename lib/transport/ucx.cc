#include "transport/ucx.h"

#include <sched.h>

#include <chrono>
#include <cstdlib>

namespace collx {

namespace {

Status ucx_error(const char* what, ucs_status_t s) {
  return error(COLLX_ERR_TRANSPORT, "%s failed: %s", what, ucs_status_string(s));
}

// Tag layout: comm id (16 bits) | source rank (20) | sequence number mod 4096 (12) | step (16).
constexpr int kRankBits = 20;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

}  // namespace

template <typename F>
bool UcxWorker::progress_until(F done, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  for (;;) {
    {
      LockGuard g(*this);
      if (done()) return true;
      ucp_worker_progress(worker_);
    }
    if (Clock::now() > deadline) return false;
    sched_yield();
  }
}

bool UcxWorker::complete_all(std::vector<void*>& reqs, double seconds, ucs_status_t* failure) {
  auto all_done = [&] {
    bool done = true;
    for (void*& req : reqs) {
      if (req == nullptr) continue;
      const ucs_status_t s = ucp_request_check_status(req);
      if (s == UCS_INPROGRESS) {
        done = false;
        continue;
      }
      if (s != UCS_OK) *failure = s;
      ucp_request_free(req);
      req = nullptr;
    }
    return done;
  };
  if (progress_until(all_done, seconds)) return true;
  LockGuard g(*this);
  for (void*& req : reqs) {
    if (req == nullptr) continue;
    ucp_request_cancel(worker_, req);
    ucp_request_free(req);
    req = nullptr;
  }
  return false;
}

Status UcxWorker::create(UcxWorker** out) {
  UcxWorker* w = new (std::nothrow) UcxWorker();
  if (w == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory creating the UCX worker");
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) {
    delete w;
    return ucx_error("ucp_config_read", s);
  }
  // Endpoints use peer error handling; UCX then checks every endpoint's peer at this
  // interval (a dead process over shared memory is noticed by that check, not by a socket
  // error), so a failure is reported well inside the collective's deadline.
  if (getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;
  s = ucp_init(&params, config, &w->context_);
  ucp_config_release(config);
  if (s != UCS_OK) {
    delete w;
    return ucx_error("ucp_init", s);
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  s = ucp_worker_create(w->context_, &wp, &w->worker_);
  if (s != UCS_OK) {
    delete w;
    return ucx_error("ucp_worker_create", s);
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(w->worker_, &addr, &len);
  if (s != UCS_OK) {
    delete w;
    return ucx_error("ucp_worker_get_address", s);
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(addr);
  w->address_.assign(bytes, bytes + len);
  ucp_worker_release_address(w->worker_, addr);
  *out = w;
  return Status();
}

UcxWorker::~UcxWorker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

Status UcxTransport::create(UcxWorker& worker, int rank, int size, uint16_t comm_id,
                            const std::vector<std::vector<uint8_t>>& addresses, double timeout_s,
                            UcxTransport** out) {
  if (size > (1 << kRankBits)) {
    return error(COLLX_ERR_UNSUPPORTED, "communicator size %d exceeds the limit of %d ranks", size,
                 1 << kRankBits);
  }
  auto* t = new (std::nothrow) UcxTransport(worker, rank, size, comm_id);
  if (t == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory creating a transport");
  t->close_timeout_s_ = timeout_s < 5 ? timeout_s : 5;  // closing after the barrier is local
  t->eps_.assign(size, nullptr);
  t->peer_status_ = std::make_unique<std::atomic<int>[]>(size);
  for (int i = 0; i < size; ++i) t->peer_status_[i].store(UCS_OK);
  Status st;
  {
    LockGuard g(worker);
    for (int peer = 0; peer < size && st.ok(); ++peer) {
      if (peer == rank) continue;
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.address = reinterpret_cast<const ucp_address_t*>(addresses[peer].data());
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcxTransport::on_peer_error;
      ep.err_handler.arg = t;
      ucs_status_t s = ucp_ep_create(worker.worker(), &ep, &t->eps_[peer]);
      if (s != UCS_OK) {
        st = error(COLLX_ERR_TRANSPORT, "rank %d: connecting to rank %d failed: %s", rank, peer,
                   ucs_status_string(s));
      }
    }
  }
  if (!st.ok()) {
    delete t;
    return st;
  }
  *out = t;
  return Status();
}

UcxTransport::~UcxTransport() {
  // Flush and close every endpoint (forcibly where the peer failed, or after an error:
  // nothing is owed to a peer then); past the deadline, whatever is left is dropped.
  std::vector<void*> closing;
  {
    LockGuard g(worker_);
    for (int peer = 0; peer < size(); ++peer) {
      ucp_ep_h ep = eps_[peer];
      if (ep == nullptr) continue;
      ucp_request_param_t p{};
      if (force_close_ || peer_status_[peer].load() != UCS_OK) {
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      }
      void* req = ucp_ep_close_nbx(ep, &p);
      if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
    }
  }
  ucs_status_t ignored;
  worker_.complete_all(closing, close_timeout_s_, &ignored);
}

Status UcxTransport::connect(double timeout_s) {
  std::vector<void*> flushing;
  {
    LockGuard g(worker_);
    for (ucp_ep_h ep : eps_) {
      if (ep == nullptr) continue;
      ucp_request_param_t p{};
      void* req = ucp_ep_flush_nbx(ep, &p);
      if (UCS_PTR_IS_ERR(req)) {
        return error(COLLX_ERR_TRANSPORT, "rank %d: connecting endpoints failed: %s", rank(),
                     ucs_status_string(UCS_PTR_STATUS(req)));
      }
      if (req != nullptr) flushing.push_back(req);
    }
  }
  ucs_status_t failure = UCS_OK;
  if (!worker_.complete_all(flushing, timeout_s, &failure)) {
    return error(COLLX_ERR_TIMEOUT, "rank %d: connecting to the peers timed out after %g s",
                 rank(), timeout_s);
  }
  if (failure != UCS_OK) {
    return error(COLLX_ERR_TRANSPORT, "rank %d: connecting endpoints failed: %s", rank(),
                 ucs_status_string(failure));
  }
  return Status();
}

void UcxTransport::on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* t = static_cast<UcxTransport*>(arg);
  for (int peer = 0; peer < t->size(); ++peer) {
    if (t->eps_[peer] != ep) continue;
    t->peer_status_[peer].store(status);
    int none = -1;
    t->failed_peer_.compare_exchange_strong(none, peer);
  }
}

// Every rank's data is part of every result: once any peer has failed, no collective on this
// communicator can complete, whichever peer the caller happens to be waiting for.
Status UcxTransport::peer_failure(const Request& r) const {
  int failed = failed_peer_.load(std::memory_order_relaxed);
  if (failed < 0) return Status();
  if (peer_status_[r.peer].load() != UCS_OK) failed = r.peer;
  const auto s = static_cast<ucs_status_t>(peer_status_[failed].load());
  if (failed == r.peer) {
    return describe(r, COLLX_ERR_PEER_FAILED,
                    format("peer failed (UCX: %s) during", ucs_status_string(s)).c_str());
  }
  return describe(r, COLLX_ERR_PEER_FAILED,
                  format("rank %d failed (UCX: %s) while waiting for", failed,
                         ucs_status_string(s)).c_str());
}

Status UcxTransport::request_error(const Request& r, ucs_status_t s, const char* when) const {
  Status failed = peer_failure(r);
  if (!failed.ok()) return failed;
  const bool peer_lost = s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT ||
                         s == UCS_ERR_UNREACHABLE;
  return describe(r, peer_lost ? COLLX_ERR_PEER_FAILED : COLLX_ERR_TRANSPORT,
                  format("UCX error (%s) %s", ucs_status_string(s), when).c_str());
}

ucp_tag_t UcxTransport::tag(int src, uint32_t seq, uint32_t step) const {
  return (ucp_tag_t{comm_id_} << 48) | (ucp_tag_t(static_cast<uint32_t>(src)) << 28) |
         (ucp_tag_t{seq & 0xfffu} << 16) | ucp_tag_t{step & 0xffffu};
}

Status UcxTransport::post(Request& r, uint32_t seq) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  LockGuard g(worker_);
  void* req;
  if (r.is_recv) {
    // Always get a request back: UCX 1.13 leaves recv_info unset when a receive completes
    // immediately from the unexpected queue, and the received length must be checked.
    p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    req = ucp_tag_recv_nbx(worker_.worker(), r.buf, r.bytes, tag(r.peer, seq, r.step), kFullMask,
                           &p);
  } else {
    req = ucp_tag_send_nbx(eps_[r.peer], r.buf, r.bytes, tag(rank(), seq, r.step), &p);
    if (req == nullptr) {
      r.done = true;
      return Status();
    }
  }
  if (UCS_PTR_IS_ERR(req)) {
    r.done = true;
    return request_error(r, UCS_PTR_STATUS(req), "posting");
  }
  r.impl = req;
  return Status();
}

Status UcxTransport::test(Request& r) {
  LockGuard g(worker_);
  ucs_status_t s;
  ucp_tag_recv_info_t info{};
  if (r.is_recv) {
    s = ucp_tag_recv_request_test(r.impl, &info);
  } else {
    s = ucp_request_check_status(r.impl);
  }
  if (s == UCS_INPROGRESS) return Status();
  ucp_request_free(r.impl);
  r.impl = nullptr;
  r.done = true;
  if (s == UCS_ERR_MESSAGE_TRUNCATED) {
    return describe(r, COLLX_ERR_MISMATCH, "message longer than expected in");
  }
  if (s != UCS_OK) return request_error(r, s, "in");
  if (r.is_recv && info.length != r.bytes) {
    return describe(r, COLLX_ERR_MISMATCH,
                    format("got %zu bytes instead of the expected in", info.length).c_str());
  }
  return Status();
}

void UcxTransport::progress() {
  LockGuard g(worker_);
  ucp_worker_progress(worker_.worker());
}

void UcxTransport::cancel(const std::vector<Request*>& pending) {
  std::vector<void*> receives;
  {
    LockGuard g(worker_);
    for (Request* r : pending) {
      if (r->is_recv) {
        ucp_request_cancel(worker_.worker(), r->impl);
        receives.push_back(r->impl);
      } else {
        // A send only reads the user's buffer: UCX releases it when it completes or when
        // the endpoint is closed.
        ucp_request_free(r->impl);
      }
      r->impl = nullptr;
      r->done = true;
    }
  }
  // Cancelled receives complete at once; a matched rendezvous receive may not be cancellable,
  // so all of them together get one second to finish before they are dropped.
  ucs_status_t ignored;
  worker_.complete_all(receives, 1.0, &ignored);
}

}  // namespace collx
