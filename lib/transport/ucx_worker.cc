// The UCX worker shared by every communicator of the process: context and worker creation,
// one endpoint and one liveness watch per peer process, and bounded progress loops.
#include "transport/ucx.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace collx {

namespace {

Status ucx_error(const char* what, ucs_status_t s) {
  return error(COLLX_ERR_TRANSPORT, "%s failed: %s", what, ucs_status_string(s));
}

// Whether the context's only network transport is TCP (its other resources: memory within
// the node, or GPU copies), from ucp_context_print_info's "resource" lines.
bool tcp_only(ucp_context_h context) {
  char* text = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (f == nullptr) return false;
  ucp_context_print_info(context, f);
  fclose(f);
  const std::unique_ptr<char, decltype(&free)> owned(text, &free);  // also if parsing throws
  return tcp_is_the_only_network(std::string(text, len));
}

// The generic datatype of Guarded messages: the buffer UCX is given is the Guarded itself.
void* start_unpack_guarded(void*, void* buffer, size_t) { return buffer; }

void* start_pack_guarded(void*, const void* buffer, size_t) { return const_cast<void*>(buffer); }

size_t guarded_size(void* state) {
  const auto& r = *static_cast<Guarded*>(state);
  return r.bytes + kSealBytes;
}

ucs_status_t unpack_guarded(void* state, size_t offset, const void* src, size_t length) {
  auto& r = *static_cast<Guarded*>(state);
  if (offset > guarded_size(state) || length > guarded_size(state) - offset) {
    return UCS_ERR_MESSAGE_TRUNCATED;
  }
  if (r.let_go) return UCS_OK;
  const size_t data = offset < r.bytes ? std::min(length, r.bytes - offset) : 0;
  if (data != 0) std::memcpy(r.buf + offset, src, data);  // (buf: null if 0)
  if (data < length) {  // the seal, or a part of it
    std::memcpy(reinterpret_cast<uint8_t*>(&r.seal) + (offset + data - r.bytes),
                static_cast<const uint8_t*>(src) + data, length - data);
  }
  return UCS_OK;
}

// A send let go still delivers its length (the peer's receive expects it), in zeros, and its
// seal, broken. UCX packs a message's fragments in order: a seal packed intact follows data
// that was all read from the buffer.
size_t pack_guarded(void* state, size_t offset, void* dest, size_t max) {
  const auto& r = *static_cast<Guarded*>(state);
  const size_t total = guarded_size(state);
  const size_t n = offset < total ? std::min(max, total - offset) : 0;
  const size_t data = offset < r.bytes ? std::min(n, r.bytes - offset) : 0;
  if (data != 0 && !r.let_go) std::memcpy(dest, r.buf + offset, data);
  if (data != 0 && r.let_go) std::memset(dest, 0, data);
  if (data < n) {
    std::memcpy(static_cast<uint8_t*>(dest) + data,
                reinterpret_cast<const uint8_t*>(&r.seal) + (offset + data - r.bytes), n - data);
  }
  return n;
}

void finish_guarded(void*) {}

const ucp_generic_dt_ops_t kGuardedOps = {start_pack_guarded, start_unpack_guarded,
                                          guarded_size,       pack_guarded,
                                          unpack_guarded,     finish_guarded};

}  // namespace

bool tcp_is_the_only_network(const std::string& info) {
  static const char* const kNotNetworks[] = {"self",     "sysv",      "posix",     "cma",
                                             "knem",     "xpmem",     "cuda_copy", "cuda_ipc",
                                             "gdr_copy", "rocm_copy", "rocm_ipc",  "rocm_gdr"};
  bool tcp = false;
  for (size_t at = info.find("resource"); at != std::string::npos;
       at = info.find("resource", at + 1)) {
    const size_t name = info.find("-- ", at);
    const size_t eol = info.find('\n', at);
    if (name == std::string::npos || name > eol) continue;
    const std::string tl = info.substr(name + 3, info.find('/', name) - name - 3);
    if (tl == "tcp") {
      tcp = true;
    } else if (std::find(std::begin(kNotNetworks), std::end(kNotNetworks), tl) ==
               std::end(kNotNetworks)) {
      return false;
    }
  }
  return tcp;
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
  std::unique_ptr<UcxWorker> w(new (std::nothrow) UcxWorker());  // freed on every failure
  if (w == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory creating the UCX worker");
  ucp_config_t* read = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &read);
  if (s != UCS_OK) {
    return ucx_error("ucp_config_read", s);
  }
  // Released on every way out, an exception's too (tcp_only allocates).
  const std::unique_ptr<ucp_config_t, decltype(&ucp_config_release)> owned(read,
                                                                           &ucp_config_release);
  ucp_config_t* config = owned.get();
  // Endpoints to other nodes are checked at this interval: a peer that stops answering
  // without closing its connections is reported well inside a collective's deadline.
  if (getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s");
  }
  // UCX's rendezvous is off: between ranks of a node, large messages take libcollx's own
  // one-copy path (see UcxTransport), because UCX 1.13 aborts the process when its CMA
  // rendezvous meets a dead peer. (Excluding UCX's CMA transport instead makes UCX use TCP for
  // rendezvous, and polling TCP triples the latency of every small message.)
  if (getenv("UCX_RNDV_THRESH") == nullptr) ucp_config_modify(config, "RNDV_THRESH", "inf");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;
  s = ucp_init(&params, config, &w->context_);
  // UCX's TCP transport completes a short or buffered-copy send once the message is in its
  // own buffer, however little of it the socket took; the rest is written only while this
  // worker is progressed. An operation could then return with the end of a message unsent:
  // its peer would wait for it until this process next progressed libcollx's worker, and this
  // rank might first wait for that peer in something else (an MPI call), both until the
  // deadline (docs/RELIABILITY.md, "A rare stall on two pretended nodes"). A zero-copy send
  // completes only once the socket has taken all of it. So where TCP is the only network,
  // every eager send is zero-copy. (Not on RDMA networks, whose short sends need no progress
  // once posted; within a node, UCX's shared-memory transports have no zero-copy sends.)
  if (s == UCS_OK && getenv("UCX_ZCOPY_THRESH") == nullptr && tcp_only(w->context_)) {
    ucp_cleanup(w->context_);
    w->context_ = nullptr;
    ucp_config_modify(config, "ZCOPY_THRESH", "0");
    s = ucp_init(&params, config, &w->context_);
    w->zcopy_always_ = s == UCS_OK;
  }
  if (s != UCS_OK) {  // most often a UCX_TLS or UCX_NET_DEVICES that leaves nothing usable
    return error(COLLX_ERR_TRANSPORT,
                 "UCX could not start: ucp_init failed: %s (UCX says why on stderr; check "
                 "UCX_TLS and UCX_NET_DEVICES; ucx_info -d lists what this machine has)",
                 ucs_status_string(s));
  }
  s = ucp_dt_create_generic(&kGuardedOps, nullptr, &w->guarded_dt_);
  if (s != UCS_OK) return ucx_error("ucp_dt_create_generic", s);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  s = ucp_worker_create(w->context_, &wp, &w->worker_);
  if (s != UCS_OK) {
    return ucx_error("ucp_worker_create", s);
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(w->worker_, &addr, &len);
  if (s != UCS_OK) {
    return ucx_error("ucp_worker_get_address", s);
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(addr);
  try {
    w->address_.assign(bytes, bytes + len);
  } catch (...) {
    ucp_worker_release_address(w->worker_, addr);
    throw;
  }
  ucp_worker_release_address(w->worker_, addr);
  *out = w.release();
  return Status();
}

UcxWorker::~UcxWorker() {
  // The endpoints kept after their last communicator, closed gracefully (the data sent on
  // them is delivered) where the peer is alive. Every communicator is gone, so a peer either
  // finalizes too (and answers while it waits for its own closes) or has exited (its
  // connections report that at once); one that answers neither is given up after a bound.
  std::vector<void*> closing;
  try {
    closing.reserve(watches_.size());
  } catch (...) {  // no memory: the closes are not awaited (a destructor must not throw)
  }
  for (auto& [address, w] : watches_) {
    if (w->ep == nullptr) continue;
    void* req = close_endpoint(w.get(), w->status.load() != UCS_OK);
    if (req == nullptr) continue;
    if (closing.size() < closing.capacity()) {
      closing.push_back(req);
    } else {
      ucp_request_free(req);  // UCX frees it when the close completes
    }
  }
  ucs_status_t ignored = UCS_OK;
  if (!closing.empty()) complete_all(closing, kCloseSeconds, &ignored);
  try {
    if (worker_ != nullptr) drop_unexpected();
  } catch (...) {  // no memory to receive them into: ucp_worker_destroy drops them
  }
  for (auto& [address, w] : watches_) {
    if (w->pidfd >= 0) close(w->pidfd);
  }
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  if (guarded_dt_ != 0) ucp_dt_destroy(guarded_dt_);
  for (const Parked& m : parked_) m.free_fn(m.memory);
}

void* UcxWorker::send_guarded(ucp_ep_h ep, Guarded* g, bool over_network, ucp_tag_t tag) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_DATATYPE;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  if (!over_network) {
    p.datatype = guarded_dt_;
    return ucp_tag_send_nbx(ep, g, 1, tag, &p);
  }
  g->iov[0] = ucp_dt_iov_t{g->buf, g->bytes};
  g->iov[1] = ucp_dt_iov_t{&g->seal, kSealBytes};
  p.datatype = ucp_dt_make_iov();
  const size_t first = g->bytes == 0 ? 1 : 0;
  return ucp_tag_send_nbx(ep, g->iov + first, 2 - first, tag, &p);
}

void UcxWorker::park(void* memory, void (*free_fn)(void*)) noexcept {
  LockGuard g(*this);
  try {
    parked_.push_back({memory, free_fn});
  } catch (...) {  // no memory to record it: leaked rather than freed while UCX may use it
  }
}

size_t UcxWorker::drop_unexpected() {
  using Seconds = std::chrono::duration<double>;
  const auto deadline = std::chrono::steady_clock::now() + Seconds(kCloseSeconds);
  std::vector<char> sink;
  size_t dropped = 0;
  for (double left = kCloseSeconds; left > 0;
       left = Seconds(deadline - std::chrono::steady_clock::now()).count()) {
    std::vector<void*> reqs;
    {
      LockGuard g(*this);
      ucp_worker_progress(worker_);
      ucp_tag_recv_info_t info{};
      const ucp_tag_message_h m = ucp_tag_probe_nb(worker_, 0, 0, 1, &info);
      if (m == nullptr) break;
      sink.resize(std::max<size_t>(info.length, 1));
      ucp_request_param_t p{};
      void* req = ucp_tag_msg_recv_nbx(worker_, sink.data(), info.length, m, &p);
      if (UCS_PTR_IS_PTR(req)) reqs.push_back(req);
    }
    ++dropped;
    ucs_status_t ignored = UCS_OK;
    complete_all(reqs, left, &ignored);  // (not under the lock: it takes it)
  }
  return dropped;
}

void PeerWatch::fail(ucs_status_t why) {
  int alive = UCS_OK;
  if (status.compare_exchange_strong(alive, why)) owner->failures_.fetch_add(1);
}

void UcxWorker::on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<PeerWatch*>(arg)->fail(status == UCS_OK ? UCS_ERR_CONNECTION_RESET : status);
}

Status UcxWorker::endpoint(PeerWatch* w, const std::vector<uint8_t>& address, bool local,
                           ucp_ep_h* out) {
  if (w->ep == nullptr) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
    if (!local) {
      // Between nodes the data endpoints report failures themselves (TCP, InfiniBand).
      ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcxWorker::on_peer_error;
      ep.err_handler.arg = w;
    }
    const ucs_status_t s = ucp_ep_create(worker_, &ep, &w->ep);
    if (s != UCS_OK) {
      w->ep = nullptr;
      return error(COLLX_ERR_TRANSPORT, "ucp_ep_create: %s", ucs_status_string(s));
    }
  }
  ++w->ep_users;
  *out = w->ep;
  return Status();
}

void* UcxWorker::release_endpoint(PeerWatch* w, bool force) {
  if (w->ep == nullptr || --w->ep_users > 0) return nullptr;
  if (!force && w->status.load() == UCS_OK) return nullptr;  // kept for the next user
  return close_endpoint(w, true);
}

void* UcxWorker::close_endpoint(PeerWatch* w, bool force) {
  ucp_request_param_t p{};
  if (force) {
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  }
  void* req = ucp_ep_close_nbx(w->ep, &p);
  w->ep = nullptr;
  w->ep_users = 0;
  return UCS_PTR_IS_PTR(req) ? req : nullptr;
}

PeerWatch* UcxWorker::watch(const std::vector<uint8_t>& address, int64_t pid) {
  const std::string key(address.begin(), address.end());
  auto it = watches_.find(key);
  if (it != watches_.end()) return it->second.get();
  auto w = std::make_unique<PeerWatch>();
  w->owner = this;
  PeerWatch* raw = w.get();
  watches_.emplace(key, std::move(w));
  // Opened once the map holds the watch (its emplace may throw), so that the destructor
  // closes it. Without pidfds (Linux < 5.3) a dead local peer is found by the deadline.
  if (pid > 0) raw->pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  return raw;
}

}  // namespace collx
