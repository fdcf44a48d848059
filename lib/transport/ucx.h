// UCX implementation of Transport: the tag API, one worker per process (UcxWorker), one
// endpoint per peer per communicator. UCX picks the protocol: eager (inline/bcopy) for small
// messages, zero-copy rendezvous (CMA/xpmem/RDMA get) above its threshold.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace collx {

// The worker is shared by every communicator; calls into it are serialised by a spinlock so
// that communicators may be driven from different threads (UCS_THREAD_MODE_SERIALIZED).
class UcxWorker {
 public:
  static Status create(UcxWorker** out);
  ~UcxWorker();

  ucp_worker_h worker() const { return worker_; }
  const std::vector<uint8_t>& address() const { return address_; }

  void lock() {
    while (lock_.exchange(true, std::memory_order_acquire)) {
      while (lock_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  void unlock() { lock_.store(false, std::memory_order_release); }

  // Progress until `done()` or `seconds` elapse; returns whether done() became true.
  template <typename F>
  bool progress_until(F done, double seconds);

  // Progresses until every request in `reqs` (null entries: already complete) completes, and
  // frees them; past `seconds`, cancels and frees the rest. Returns false on timeout; sets
  // *failure to the last error status a request completed with.
  bool complete_all(std::vector<void*>& reqs, double seconds, ucs_status_t* failure);

 private:
  UcxWorker() = default;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<uint8_t> address_;
  std::atomic<bool> lock_{false};
};

struct LockGuard {
  explicit LockGuard(UcxWorker& w) : w_(w) { w_.lock(); }
  ~LockGuard() { w_.unlock(); }
  UcxWorker& w_;
};

class UcxTransport final : public Transport {
 public:
  // addresses[i] is rank i's worker address. comm_id is unique among this rank's communicators.
  static Status create(UcxWorker& worker, int rank, int size, uint16_t comm_id,
                       const std::vector<std::vector<uint8_t>>& addresses, double timeout_s,
                       UcxTransport** out);
  ~UcxTransport() override;

  // Completes the wireup of every endpoint (so that closing one later needs nothing from the
  // peer) and returns once every rank has; called by every rank after create().
  Status connect(double timeout_s);

  // After an error on the communicator: close endpoints without flushing them.
  void mark_failed() override { force_close_ = true; }

 protected:
  Status post(Request& r, uint32_t seq) override;
  Status test(Request& r) override;
  void progress() override;
  void cancel(const std::vector<Request*>& pending) override;
  Status peer_failure(const Request& r) const override;

 private:
  UcxTransport(UcxWorker& w, int rank, int size, uint16_t comm_id)
      : Transport(rank, size), worker_(w), comm_id_(comm_id) {}
  ucp_tag_t tag(int src, uint32_t seq, uint32_t step) const;
  // UCX's peer error handler: records the failure of the endpoint's peer.
  static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  // A request that failed with `s`: PEER_FAILED where a peer is gone, else TRANSPORT.
  Status request_error(const Request& r, ucs_status_t s, const char* when) const;

  UcxWorker& worker_;
  uint16_t comm_id_;
  double close_timeout_s_ = 1;
  std::vector<ucp_ep_h> eps_;
  std::unique_ptr<std::atomic<int>[]> peer_status_;  // ucs_status_t per peer; UCS_OK: alive
  std::atomic<int> failed_peer_{-1};  // the first peer reported failed
  bool force_close_ = false;
};

}  // namespace collx
