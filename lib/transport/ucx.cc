#include "transport/ucx.h"

#include <algorithm>
#include <cstring>

#include "transport/peer_memory.h"

namespace collx {

namespace {

// Tag layout: comm id (16 bits) | acknowledgement (1) | source (19) |
// sequence number mod 4096 (12) | step (16). The source is the sending rank, plus the
// communicator's size times the sender's lane (Request::lane_self: a rank in several groups of
// one operation); so every rank may use 2^19 / size lanes. Announcements (ucx_announce.cc)
// take the acknowledgement bit with sequence 0xfff and step 0xffff.
constexpr int kRankBits = 19;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr uint64_t kRtsMagic = 0x5354524158434c43ull;  // "CLCXARTS"
constexpr uint64_t kAckMagic = 0x4b43414158434c43ull;  // "CLCXAACK"

// Hands the contents of `items` to the worker (UcxWorker::park).
template <typename T>
void park(UcxWorker& worker, std::deque<T>& items) {
  try {
    auto* kept = new std::deque<T>;
    kept->swap(items);
    worker.park(kept, [](void* p) { delete static_cast<std::deque<T>*>(p); });
  } catch (...) {
  }
}

}  // namespace

Status UcxTransport::create(UcxWorker& worker, int rank, int size, uint16_t comm_id,
                            const std::vector<PeerInfo>& peers, uint64_t my_node, size_t cma_min,
                            double timeout_s, UcxTransport** out) {
  if (size > (1 << kRankBits)) {
    return error(COLLX_ERR_UNSUPPORTED, "communicator size %d exceeds the limit of %d ranks", size,
                 1 << kRankBits);
  }
  std::unique_ptr<UcxTransport> t(new (std::nothrow) UcxTransport(worker, rank, size, comm_id));
  if (t == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory creating a transport");
  t->close_timeout_s_ = timeout_s < 5 ? timeout_s : 5;  // closing after the barrier is local
  t->cma_min_ = cma_min;
  t->eps_.assign(size, nullptr);
  t->completing_.reserve(size);
  t->watches_.assign(size, nullptr);
  t->cma_pid_.assign(size, 0);
  t->local_.assign(size, 0);
  Status st;
  {
    LockGuard g(worker);
    for (int peer = 0; peer < size && st.ok(); ++peer) {
      if (peer == rank) continue;
      const bool local = peers[peer].node == my_node;
      PeerWatch* w = worker.watch(peers[peer].address, local ? peers[peer].pid : 0);
      t->watches_[peer] = w;
      if (w->pidfd >= 0) {
        t->pidfds_.push_back(pollfd{w->pidfd, POLLIN, 0});
        t->polled_.push_back(w);
      }
      if (local && cma_min != SIZE_MAX) t->cma_pid_[peer] = peers[peer].pid;
      t->local_[peer] = local;
      const Status e = worker.endpoint(w, peers[peer].address, local, &t->eps_[peer]);
      if (!e.ok()) {
        st = error(COLLX_ERR_TRANSPORT, "rank %d: connecting to rank %d failed: %s", rank, peer,
                   e.message().c_str());
      }
    }
  }
  if (!st.ok()) return st;  // (t is freed, as on an exception)
  *out = t.release();
  return Status();
}

UcxTransport::~UcxTransport() {
  stop_announcing();
  // Releases every endpoint. The worker keeps one whose last user this was for the next
  // communicator with that peer, but for a failed peer or after an error (nothing is owed to
  // a peer then), where it is closed forcibly here; past the deadline, whatever is left is
  // dropped.
  // (Without the list's room, create found no memory: the closes are then not awaited, for a
  // destructor must not allocate where it could throw.)
  std::vector<void*>& closing = completing_;
  closing.clear();
  {
    LockGuard g(worker_);
    for (size_t peer = 0; peer < eps_.size(); ++peer) {  // (empty if create found no memory)
      if (eps_[peer] == nullptr) continue;
      void* req = worker_.release_endpoint(watches_[peer], force_close_);
      if (req == nullptr) continue;
      if (closing.size() < closing.capacity()) {
        closing.push_back(req);
      } else {
        ucp_request_free(req);  // UCX frees it when the close completes
      }
    }
  }
  ucs_status_t ignored;
  worker_.complete_all(closing, close_timeout_s_, &ignored);
  // What UCX may still use for a request let go (the one-copy transfers' messages, the
  // Guarded messages) stays with the worker; where there is no memory for that, it goes with
  // the transport.
  if (gave_up_) {
    park(worker_, cma_ops_);
    park(worker_, guarded_);
  }
}

Status UcxTransport::connect(double timeout_s) {
  std::vector<void*>& flushing = completing_;
  flushing.clear();
  ucs_status_t failure = UCS_OK;
  {
    LockGuard g(worker_);
    for (ucp_ep_h ep : eps_) {
      if (ep == nullptr) continue;
      ucp_request_param_t p{};
      void* req = ucp_ep_flush_nbx(ep, &p);
      if (UCS_PTR_IS_ERR(req)) failure = UCS_PTR_STATUS(req);
      if (UCS_PTR_IS_PTR(req)) flushing.push_back(req);
    }
  }
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

// Every rank's data is part of every result: once any peer has failed, no collective on this
// communicator can complete, whichever peer the caller happens to be waiting for.
int UcxTransport::known_failure(int prefer, std::string* why) const {
  if (!pidfds_.empty()) {
    auto& fds = const_cast<std::vector<pollfd>&>(pidfds_);
    if (poll(fds.data(), fds.size(), 0) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) polled_[i]->fail(UCS_ERR_CONNECTION_RESET);
      }
    }
  }
  const uint64_t failures = worker_.failures();
  if (failures == failures_seen_) return -1;
  auto failed = [&](int peer) {
    return watches_[peer] != nullptr && watches_[peer]->status.load() != UCS_OK;
  };
  int dead = failed(prefer) ? prefer : -1;
  for (int peer = 0; peer < size() && dead < 0; ++peer) {
    if (failed(peer)) dead = peer;
  }
  if (dead < 0) {
    failures_seen_ = failures;  // a failure elsewhere, outside this communicator
    return -1;
  }
  if (why == nullptr) return dead;
  const PeerWatch& w = *watches_[dead];
  *why = w.pidfd >= 0
             ? std::string("its process exited")
             : format("UCX: %s", ucs_status_string(static_cast<ucs_status_t>(w.status.load())));
  return dead;
}

int UcxTransport::dead_peer(int prefer, std::string* why) const {
  const int dead = known_failure(prefer, why);
  if (dead < 0) return -1;
  // Waiting for a live peer while another is dead: what the caller waits for may already be
  // on its way (the dead rank may have finished this collective before it died), so that
  // wait gets a short grace before it is failed too, naming the dead rank.
  const auto now = std::chrono::steady_clock::now();
  if (first_dead_seen_ == std::chrono::steady_clock::time_point{}) first_dead_seen_ = now;
  if (dead != prefer && now - first_dead_seen_ < std::chrono::milliseconds(250)) return -1;
  return dead;
}

Status UcxTransport::peer_failure(const Request& r) const {
  std::string why;
  const int dead = dead_peer(r.peer, &why);
  if (dead < 0) return Status();
  if (dead == r.peer) {
    return describe(r, COLLX_ERR_PEER_FAILED, format("peer failed (%s) during", why.c_str()).c_str());
  }
  return describe(r, COLLX_ERR_PEER_FAILED,
                  format("rank %d failed (%s) while waiting for", dead, why.c_str()).c_str());
}

Status UcxTransport::request_error(const Request& r, ucs_status_t s, const char* when) const {
  Status failed = peer_failure(r);
  if (!failed.ok()) return failed;
  const bool peer_lost = s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT ||
                         s == UCS_ERR_UNREACHABLE;
  return describe(r, peer_lost ? COLLX_ERR_PEER_FAILED : COLLX_ERR_TRANSPORT,
                  format("UCX error (%s) %s", ucs_status_string(s), when).c_str());
}

int UcxTransport::lanes_for(int size) { return (1 << kRankBits) / size; }

uint32_t UcxTransport::source(int rank, uint32_t lane) const {
  return static_cast<uint32_t>(rank) + static_cast<uint32_t>(size()) * lane;
}

ucp_tag_t UcxTransport::tag(uint32_t source, uint32_t seq, uint32_t step, bool ack) const {
  return (ucp_tag_t{comm_id_} << 48) | (ucp_tag_t{ack} << 47) | (ucp_tag_t{source} << 28) |
         (ucp_tag_t{seq & 0xfffu} << 16) | ucp_tag_t{step & 0xffffu};
}

void* UcxTransport::send_ctrl(int peer, const void* buf, size_t bytes, ucp_tag_t t) {
  ucp_request_param_t p{};
  return ucp_tag_send_nbx(eps_[peer], buf, bytes, t, &p);
}

void* UcxTransport::recv_ctrl(void* buf, size_t bytes, ucp_tag_t t) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  return ucp_tag_recv_nbx(worker_.worker(), buf, bytes, t, kFullMask, &p);
}

ucs_status_t UcxTransport::check(void*& req, size_t* received) {
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  ucs_status_t s;
  if (received != nullptr) {
    ucp_tag_recv_info_t info{};
    s = ucp_tag_recv_request_test(req, &info);
    *received = info.length;
  } else {
    s = ucp_request_check_status(req);
  }
  if (s != UCS_INPROGRESS) {
    ucp_request_free(req);
    req = nullptr;
  }
  return s;
}

Status UcxTransport::post_one_copy(Request& r, uint32_t seq) {
  if (cma_used_ == cma_ops_.size()) cma_ops_.emplace_back();
  CmaOp& op = cma_ops_[cma_used_++];
  op = CmaOp{};
  op.seq = seq;
  r.one_copy = true;
  r.impl = &op;
  LockGuard g(worker_);
  if (r.is_recv) {
    op.ctrl = recv_ctrl(op.rts, sizeof op.rts, tag(from_peer(r), seq, r.step));
  } else {
    op.rts[0] = kRtsMagic;
    op.rts[1] = reinterpret_cast<uint64_t>(r.buf);
    op.rts[2] = r.bytes;
    op.rts[3] = reinterpret_cast<uint64_t>(&op.seal);
    op.ctrl = send_ctrl(r.peer, op.rts, sizeof op.rts, tag(from_me(r), seq, r.step));
    op.ack_req = recv_ctrl(&op.ack, sizeof op.ack, tag(from_peer(r), seq, r.step, true));
  }
  for (void* req : {op.ctrl, op.ack_req}) {
    if (UCS_PTR_IS_ERR(req)) return request_error(r, UCS_PTR_STATUS(req), "posting");
  }
  return Status();
}

Status UcxTransport::test_one_copy(Request& r) {
  auto& op = *static_cast<CmaOp*>(r.impl);
  ucs_status_t s;
  size_t got = 0;
  if (!op.ctrl_done) {
    {
      LockGuard g(worker_);
      s = check(op.ctrl, r.is_recv ? &got : nullptr);
    }
    if (s == UCS_INPROGRESS) return Status();
    if (s == UCS_ERR_MESSAGE_TRUNCATED) {
      return describe(r, COLLX_ERR_MISMATCH, "message longer than expected in");
    }
    if (s != UCS_OK) return request_error(r, s, "in");
    op.ctrl_done = true;
    if (r.is_recv) {
      // Everything in the rendezvous message comes from the peer: check it before use.
      if (got != sizeof op.rts || op.rts[0] != kRtsMagic) {
        return describe(r, COLLX_ERR_MISMATCH,
                        format("got a %zu-byte message that is not a transfer offer in", got)
                            .c_str());
      }
      if (op.rts[2] != r.bytes) {
        return describe(r, COLLX_ERR_MISMATCH,
                        format("peer offers %llu bytes instead of the expected in",
                               static_cast<unsigned long long>(op.rts[2]))
                            .c_str());
      }
      // The one copy, outside the worker lock, and then the seal.
      uint64_t seal = 0;
      const Status st = peer_read(cma_pid_[r.peer], op.rts[1], r.buf, r.bytes, op.rts[3], &seal);
      if (st.code() == COLLX_ERR_PEER_FAILED) watches_[r.peer]->fail(UCS_ERR_CONNECTION_RESET);
      if (!st.ok()) return describe(r, st.code(), (st.message() + " in").c_str());
      if (seal != kSealIntact) return seal_error(r, seal);
      op.ack = kAckMagic;
      LockGuard g(worker_);
      op.ack_req = send_ctrl(r.peer, &op.ack, sizeof op.ack, tag(from_me(r), op.seq, r.step, true));
      }
  }
  {
    LockGuard g(worker_);
    s = check(op.ack_req, r.is_recv ? nullptr : &got);
  }
  if (s == UCS_INPROGRESS) return Status();
  if (s != UCS_OK) return request_error(r, s, "in");
  if (!r.is_recv && (got != sizeof op.ack || op.ack != kAckMagic)) {
    return describe(r, COLLX_ERR_MISMATCH, "got a malformed acknowledgement in");
  }
  r.impl = nullptr;
  r.done = true;
  return Status();
}

Guarded* UcxTransport::take_guarded(const Request& r) {
  while (guarded_used_ < guarded_.size() && guarded_[guarded_used_].let_go) ++guarded_used_;
  if (guarded_used_ == guarded_.size()) guarded_.emplace_back();
  Guarded* g = &guarded_[guarded_used_++];
  const uint64_t seal = r.is_recv ? 0 : kSealIntact;
  *g = Guarded{nullptr, static_cast<uint8_t*>(r.buf), r.bytes, false, seal, {}};
  return g;
}

Status UcxTransport::post(Request& r, uint32_t seq) {
  if (r.bytes >= cma_min_ && cma_pid_[r.peer] != 0) return post_one_copy(r, seq);
  const ucp_tag_t t = r.is_recv ? tag(from_peer(r), seq, r.step) : tag(from_me(r), seq, r.step);
  LockGuard lock(worker_);
  Guarded* g = nullptr;
  void* req = UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  if (r.is_recv) {
    // Always get a request back: UCX 1.13 leaves recv_info unset when a receive completes
    // immediately from the unexpected queue, and the received length must be checked.
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.datatype = worker_.guarded_datatype();
    g = take_guarded(r);
    req = ucp_tag_recv_nbx(worker_.worker(), g, 1, t, kFullMask, &p);
  } else {
    // To a peer on this node, a short message with its seal, copied, where UCX sends it at once
    // (room in the peer's FIFO: nothing reads it later); any other send through a Guarded.
    const bool over_network = local_[r.peer] == 0;
    if (!over_network && r.bytes <= sizeof short_ - kSealBytes) {
      if (r.bytes != 0) std::memcpy(short_, r.buf, r.bytes);
      std::memcpy(short_ + r.bytes, &kSealIntact, kSealBytes);
      p.op_attr_mask |= UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
      req = ucp_tag_send_nbx(eps_[r.peer], short_, r.bytes + kSealBytes, t, &p);
    }
    if (UCS_PTR_IS_ERR(req) && UCS_PTR_STATUS(req) == UCS_ERR_NO_RESOURCE) {
      g = take_guarded(r);
      req = worker_.send_guarded(eps_[r.peer], g, over_network, t);
    }
  }
  if (req == nullptr) {  // a send complete at once
    r.done = true;
    return Status();
  }
  if (UCS_PTR_IS_ERR(req)) {
    r.done = true;
    return request_error(r, UCS_PTR_STATUS(req), "posting");
  }
  g->req = req;  // (only a Guarded's request is left pending)
  r.impl = g;
  return Status();
}

Status UcxTransport::test(Request& r) {
  if (r.one_copy) return test_one_copy(r);
  LockGuard g(worker_);
  ucs_status_t s;
  ucp_tag_recv_info_t info{};
  Guarded* m = static_cast<Guarded*>(r.impl);
  void*& req = m->req;
  if (r.is_recv) {
    s = ucp_tag_recv_request_test(req, &info);
  } else {
    s = ucp_request_check_status(req);
  }
  if (s == UCS_INPROGRESS) return Status();
  ucp_request_free(req);
  req = nullptr;
  r.impl = nullptr;
  r.done = true;
  if (s == UCS_ERR_MESSAGE_TRUNCATED) {
    return describe(r, COLLX_ERR_MISMATCH, "message longer than expected in");
  }
  if (s != UCS_OK) return request_error(r, s, "in");
  if (!r.is_recv) return Status();
  if (info.length != r.bytes + kSealBytes) {
    const size_t got = info.length - std::min(info.length, kSealBytes);
    return describe(r, COLLX_ERR_MISMATCH,
                    format("got %zu bytes instead of the expected in", got).c_str());
  }
  if (m->seal != kSealIntact) return seal_error(r, m->seal);
  return Status();
}

Status UcxTransport::seal_error(const Request& r, uint64_t seal) const {
  // The sender's code and failed rank where the seal carries them (a seal torn between two
  // fragments does not).
  const bool carried = seal >> 32 == kSealBroken >> 32;
  const auto sent = static_cast<collx_status_t>(-static_cast<int>(seal & 0xff));
  const collx_status_t code =
      carried && sent < 0 && sent >= COLLX_ERR_INTERNAL ? sent : COLLX_ERR_PEER_FAILED;
  int failed = carried ? static_cast<int>((seal >> 8) & 0xffffff) - 1 : -1;
  std::string why = "as the sender saw";
  if (failed >= 0 && failed < size()) {
    relayed_failure_ = failed;
  } else {
    failed = known_failure(r.peer, &why);  // as seen here
  }
  const std::string gave_up =
      format("the sender gave up on this collective (its call failed: %s) during its message:",
             status_name(code));
  if (failed >= 0) {
    return describe(r, code, format("rank %d failed (%s), and %s", failed, why.c_str(),
                                    gave_up.c_str())
                                 .c_str());
  }
  return describe(r, code, gave_up.c_str());
}

void UcxTransport::progress() {
  LockGuard g(worker_);
  ucp_worker_progress(worker_.worker());
  // A rank that announced an operation and now waits in it sends the number that an earlier
  // announcement in flight held back: a peer's test may wait for it.
  if (unsent_) send_announcements();
}

void UcxTransport::cancel(std::vector<Request>& reqs, collx_status_t why) {
  // Every pending request's UCX requests are let go at once, nothing allocated. A receive that
  // has not matched a message is cancelled. One that has, whose message is still arriving (its
  // sender stopped or died in the middle of it), cannot be: UCX keeps it while the endpoint is
  // shared with other communicators, and after a close too (Guarded). Its rest is dropped
  // (Guarded::let_go) or, for a one-copy transfer's control message, lands in cma_ops_. A send
  // still queued breaks its seal with `why` and the rank known to have failed, seen here or
  // named by a peer's seal (Guarded): to a peer on this node it packs zeros before the seal,
  // one over the network may read its buffer later; a one-copy send breaks its seal, which its
  // peer may read, with the data, later.
  // Where UCX keeps a request, or a peer may read, the memory it may use stays with the worker
  // (gave_up()).
  const int seen = known_failure(rank(), nullptr);
  const uint64_t broken = broken_seal(why, seen >= 0 ? seen : relayed_failure_);
  LockGuard g(worker_);
  auto let_go = [&](void*& req, bool receive) {
    if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
      if (receive) ucp_request_cancel(worker_.worker(), req);  // (unmatched: completes now)
      if (ucp_request_check_status(req) == UCS_INPROGRESS) gave_up_ = true;
      ucp_request_free(req);
    }
    req = nullptr;
  };
  for (Request& r : reqs) {
    if (r.done || r.impl == nullptr) continue;
    if (r.one_copy) {
      auto& op = *static_cast<CmaOp*>(r.impl);
      let_go(op.ctrl, r.is_recv);
      let_go(op.ack_req, !r.is_recv);
      if (!r.is_recv) {  // the peer may have the offer, and read the data and the seal later
        // Before the caller has the data back.
        __atomic_store_n(&op.seal, broken, __ATOMIC_SEQ_CST);
        gave_up_ = true;
      }
    } else {
      auto& m = *static_cast<Guarded*>(r.impl);
      let_go(m.req, r.is_recv);
      if (!r.is_recv) m.seal = broken;
      m.let_go = true;
    }
    r.impl = nullptr;
    r.done = true;
  }
}

}  // namespace collx
