// UCX implementation of Transport: the tag API, one worker per process (UcxWorker), one
// endpoint per peer process, shared by the communicators with it (PeerWatch). Every message is
// sent eagerly: UCX's rendezvous is off (within a node, large messages take libcollx's own
// one-copy path), and where TCP is the only network every eager send is zero-copy
// (UcxWorker::create says why).
#pragma once

#include <poll.h>
#include <sched.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/peer.h"
#include "transport/transport.h"

namespace collx {

// Liveness of one peer process, shared by every communicator that includes it. A peer on
// another node is watched by its data endpoints, created in UCX's peer error-handling mode
// (TCP and InfiniBand report a dead peer). On this node that mode is no use: UCX 1.13's shared
// memory has no peer-failure support, and asking for it moves every message to TCP (10x the
// latency). A local peer is watched through a pidfd instead, which the kernel makes readable
// when the process exits; waiters poll it now and then, with one system call for all peers.
class UcxWorker;
//
// The endpoint to the peer is shared the same way (as MPI libraries share one connection per
// peer process among communicators; messages are told apart by their tags): one endpoint
// between two workers, however many communicators they have in common. UCX 1.13's TCP
// transport has crashed on freed memory when one of several endpoints between the same two
// workers was failed and closed (docs/RELIABILITY.md).
struct PeerWatch {
  UcxWorker* owner = nullptr;
  int pidfd = -1;                   // local peers
  std::atomic<int> status{UCS_OK};  // ucs_status_t; UCS_OK while the peer is alive
  void fail(ucs_status_t why);
  ucp_ep_h ep = nullptr;  // under the worker's lock
  int ep_users = 0;       // communicators using `ep`
};

// A plain message (not one-copy): every receive, and every send that UCX does not send at once.
// A receive's buffer, and a send's to a peer on this node, UCX fills or reads through the
// callbacks of a generic datatype (UcxWorker::guarded_datatype), not by itself. A send over
// the network is an IOV of its buffer and its seal, which UCX reads by itself: where TCP is the
// network every eager send must be zero-copy (UcxWorker::create), which a generic datatype is
// not. A request that cancel() lets go unfinished stays in UCX's hands as long as the endpoint
// is open: a receive whose sender stopped in the middle of its message (even closing the
// endpoint does not stop UCX 1.13's TCP transport from delivering the rest later), a send
// queued for a peer that stopped draining its shared-memory FIFO or its socket. Once let go,
// the rest of a message is dropped instead of written into a buffer that the caller owns
// again, and a send to a peer on this node packs zeros instead of reading one that the caller
// may have freed; one over the network may still read its buffer (docs/RELIABILITY.md).
//
// Every plain message ends with a seal of kSealBytes (a short one within the node copied with
// it and sent at once, any other through a Guarded): kSealIntact where its sender's UCX read
// all of its data before the caller had the buffer back, broken_seal() where the sender let it
// go before the end: its operation's error code and the rank it knew to have failed, if any.
// UCX reads a message in order, so a seal read intact follows data read while the call still
// owned it. A receive whose seal is not intact fails with that code, naming that rank: what
// came before it (zeros within a node, whatever the buffer then held over the network) is not
// data, and the peer that sent it has failed the collective (a frozen rank that wakes would
// otherwise take it for its peers' data).
struct Guarded {
  void* req = nullptr;     // the UCX request; null once complete
  uint8_t* buf = nullptr;  // (a send's is only read)
  size_t bytes = 0;        // of data, without the seal
  bool let_go = false;     // cancel() let it go: touch the buffer no more; never reused
  uint64_t seal = 0;       // a receive's, as it arrived; a send's, broken once let go
  ucp_dt_iov_t iov[2]{};   // a send over the network: the buffer, then the seal
};
constexpr size_t kSealBytes = 8;
constexpr uint64_t kSealIntact = 0x4c41455358434c43ull;  // "CLCXSEAL"
constexpr uint64_t kSealBroken = 0x2150554700000000ull;  // "GUP!" in the high half
// Byte 0: -code; bytes 1 - 3: the failed rank + 1 (0: none known).
constexpr uint64_t broken_seal(collx_status_t code, int failed) {
  return kSealBroken | (static_cast<uint64_t>(failed + 1) & 0xffffff) << 8 |
         static_cast<uint8_t>(-code);
}

// The worker is shared by every communicator; calls into it are serialised by a spinlock so
// that communicators may be driven from different threads (UCS_THREAD_MODE_SERIALIZED).
class UcxWorker {
 public:
  static Status create(UcxWorker** out);
  ~UcxWorker();

  ucp_worker_h worker() const { return worker_; }
  // Every eager send is zero-copy (TCP the only network; see create()).
  bool zcopy_always() const { return zcopy_always_; }
  const std::vector<uint8_t>& address() const { return address_; }

  // Spins, then yields the core between tries: with more threads than cores the holder may
  // have been preempted, and a waiter that only spun would keep it off the core for the rest
  // of its time slice.
  void lock() {
    for (int tries = 0; lock_.exchange(true, std::memory_order_acquire);) {
      while (lock_.load(std::memory_order_relaxed)) {
        if (++tries < kSpins) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
        }
      }
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

  // The watch of a peer process (`pid` on this node, else 0), created on first use; watches
  // live as long as the worker. Call under the lock.
  PeerWatch* watch(const std::vector<uint8_t>& address, int64_t pid);
  // The endpoint to the peer of `w` at `address` (on this node: `local`), created on first
  // use; each user releases it once. Call under the lock.
  Status endpoint(PeerWatch* w, const std::vector<uint8_t>& address, bool local, ucp_ep_h* out);
  // Releases one use. The last keeps the endpoint open for the next communicator with that
  // peer, as MPI libraries keep one connection per peer until they finalize: closing it
  // gracefully needs the peer to answer, which it may not do for seconds (it has gone on to
  // other work), and opening it again costs a round trip. Only where `force` (after an error)
  // or the peer failed does the last close it, forcibly, and return the close request, if
  // any, for the caller to complete. The worker's destructor closes those kept. Call under the
  // lock.
  void* release_endpoint(PeerWatch* w, bool force);
  // Incremented by every reported peer failure: a waiter rescans its peers only when it moves.
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

  // How long the destructor waits for peers to answer the closing of the endpoints kept.
  static constexpr double kCloseSeconds = 5;

  // Receives and drops every tagged message that arrived and that no receive matched; returns
  // how many. The destructor calls it once no communicator is left: a peer's announcement may
  // arrive after its communicator here was destroyed (ucx_announce.cc), and UCX warns of each
  // such message when the worker is destroyed. Gives up after kCloseSeconds.
  size_t drop_unexpected();

  // Keeps `memory` until the worker is destroyed (after its endpoints are closed), then calls
  // free_fn on it: memory that UCX may still use for a request a communicator gave up on
  // (Transport::gave_up), while the endpoint to that peer stays open for other communicators.
  // Where there is no room to record it, the memory is leaked: never freed early.
  void park(void* memory, void (*free_fn)(void*)) noexcept;

  // Peer error handler of endpoints in peer error-handling mode; arg is the peer's watch.
  static void on_peer_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  // The generic datatype of Guarded messages: UCX hands each fragment of a received message
  // to unpack_guarded (ucx_worker.cc), which writes it into the receive's buffer, and has
  // pack_guarded fill each fragment of a send from the send's buffer, unless cancel() has let
  // the request go.
  ucp_datatype_t guarded_datatype() const { return guarded_dt_; }
  // Sends g's buffer and then its seal to ep under `tag`: to a peer on this node through
  // guarded_datatype(), over the network as an IOV of the two (an empty buffer left out).
  // Under the lock; returns what ucp_tag_send_nbx does.
  void* send_guarded(ucp_ep_h ep, Guarded* g, bool over_network, ucp_tag_t tag);

 private:
  UcxWorker() = default;
  // Closes w's endpoint (forcibly or gracefully), whatever its users; returns the request.
  void* close_endpoint(PeerWatch* w, bool force);
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<uint8_t> address_;
  static constexpr int kSpins = 1000;  // tens of microseconds of pauses, then yields
  std::atomic<bool> lock_{false};
  std::map<std::string, std::unique_ptr<PeerWatch>> watches_;  // by worker address
  friend struct PeerWatch;
  std::atomic<uint64_t> failures_{0};
  bool zcopy_always_ = false;
  struct Parked {
    void* memory;
    void (*free_fn)(void*);
  };
  std::vector<Parked> parked_;  // park(); freed by the destructor, after ucp_worker_destroy
  ucp_datatype_t guarded_dt_ = 0;  // 0: not created
};

// Whether ucp_context_print_info's text lists TCP and no other network transport.
bool tcp_is_the_only_network(const std::string& info);

struct LockGuard {
  explicit LockGuard(UcxWorker& w) : w_(w) { w_.lock(); }
  ~LockGuard() { w_.unlock(); }
  UcxWorker& w_;
};

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

// Within a node, messages of at least `cma_min` bytes are copied once by the receiver with
// process_vm_readv from the sender's buffer, after a small rendezvous message over UCX
// (address and length, checked before use) and before an acknowledgement back. libcollx does
// this itself rather than through UCX's CMA rendezvous: UCX 1.13 aborts the process when a
// CMA read fails on an endpoint without error handling (a peer died), and shared memory
// offers no endpoint with error handling. Here a dead peer is an error value.
class UcxTransport final : public Transport {
 public:
  // peers[i] describes rank i (its address, node and pid); my_node is this rank's node.
  // cma_min: SIZE_MAX turns the one-copy path off. comm_id is unique among this rank's
  // communicators.
  static Status create(UcxWorker& worker, int rank, int size, uint16_t comm_id,
                       const std::vector<PeerInfo>& peers, uint64_t my_node, size_t cma_min,
                       double timeout_s, UcxTransport** out);
  ~UcxTransport() override;

  // Completes the wireup of every endpoint (so that closing one later needs nothing from the
  // peer) and returns once every rank has; called by every rank after create().
  Status connect(double timeout_s);

  // After an error on the communicator: close endpoints without flushing them.
  void mark_failed() override { force_close_ = true; }
  bool gave_up() const override { return gave_up_; }
  void keep(void* memory, void (*free_fn)(void*)) noexcept override {
    worker_.park(memory, free_fn);
  }
  int max_lanes() const override { return lanes_for(size()); }
  static int lanes_for(int size);  // max_lanes() of a communicator of `size` ranks

  // Announcements (ucx_announce.cc): one small tagged message to each peer, received into
  // a receive kept posted per peer.
  bool start_announcing(uint64_t token) override;
  void announce(uint64_t number) override;
  uint64_t announced(bool progress, uint64_t* most) override;

 protected:
  Status post(Request& r, uint32_t seq) override;
  Status test(Request& r) override;
  void progress() override;
  void cancel(std::vector<Request>& reqs, collx_status_t why) override;
  Status peer_failure(const Request& r) const override;
  int dead_peer(int prefer, std::string* why) const override;
  void reset_op() override {
    cma_used_ = 0;
    guarded_used_ = 0;
  }

 private:
  // State of one one-copy transfer. The sender sends `rts` and receives `ack`; the receiver
  // receives `rts`, reads the data and then the sender's `seal` (as a Guarded message's: the
  // sender breaks it when it lets the transfer go, before its caller may change the data), and
  // sends `ack`.
  struct CmaOp {
    uint64_t rts[4];  // magic, address, length, the seal's address
    uint64_t seal = kSealIntact;
    uint64_t ack = 0;
    uint32_t seq = 0;
    void* ctrl = nullptr;  // sender: the rts send; receiver: the rts receive
    void* ack_req = nullptr;
    bool ctrl_done = false;
  };

  UcxTransport(UcxWorker& w, int rank, int size, uint16_t comm_id)
      : Transport(rank, size), worker_(w), comm_id_(comm_id) {}
  // The tag's source field (see ucx.cc) for `rank` in `lane`, and for either end of `r`.
  uint32_t source(int rank, uint32_t lane) const;
  uint32_t from_me(const Request& r) const { return source(rank(), r.lane_self); }
  uint32_t from_peer(const Request& r) const { return source(r.peer, r.lane_peer); }
  ucp_tag_t tag(uint32_t source, uint32_t seq, uint32_t step, bool ack = false) const;
  // A request that failed with `s`: PEER_FAILED where a peer is gone, else TRANSPORT.
  Status request_error(const Request& r, ucs_status_t s, const char* when) const;
  // Post a tagged send or receive of a small control message (under the worker lock).
  void* send_ctrl(int peer, const void* buf, size_t bytes, ucp_tag_t t);
  void* recv_ctrl(void* buf, size_t bytes, ucp_tag_t t);
  // Checks a UCX request without taking the lock: UCS_INPROGRESS, or its final status (freed).
  ucs_status_t check(void*& req, size_t* received = nullptr);
  // The next Guarded slot of the running operation, set up for r.
  Guarded* take_guarded(const Request& r);
  // r's error where the seal of the message it received was not intact: the sender's code,
  // naming the rank that made the sender give up, where the sender or this rank knows it.
  Status seal_error(const Request& r, uint64_t seal) const;
  // A peer known to have failed (`prefer` first, if it has), or -1; *why (unless null: then
  // nothing is allocated) says how.
  int known_failure(int prefer, std::string* why) const;
  Status post_one_copy(Request& r, uint32_t seq);
  Status test_one_copy(Request& r);

  // Announcements. Per peer: the receive posted for its next one and the latest number
  // heard; the sends to it, all from said_, and the number last sent. Under the worker lock.
  struct Heard {
    uint64_t msg[2] = {0, 0};  // token, number
    void* req = nullptr;       // the receive of the next; null: none (the peer failed)
    uint64_t number = 0;
    void* sending = nullptr;   // an announcement to this peer in flight
    uint64_t sent = 0;         // the number last sent to it
  };
  ucp_tag_t announce_tag(int src) const;
  void hear(int peer);        // receives what has arrived from `peer`, posts the next receive
  // said_ to every peer not yet told, unless one is in flight; sets unsent_ if so.
  void send_announcements();
  void stop_announcing();     // the destructor: cancels, completes, drops what is queued

  UcxWorker& worker_;
  uint16_t comm_id_;
  double close_timeout_s_ = 1;
  size_t cma_min_ = SIZE_MAX;
  std::vector<ucp_ep_h> eps_;
  // UCX requests being completed: the flushes of connect(), the closes of the destructor.
  // Room for one per endpoint is taken in create(), so that neither allocates.
  std::vector<void*> completing_;
  std::vector<int64_t> cma_pid_;     // per peer: its pid where one-copy transfers apply, else 0
  std::vector<PeerWatch*> watches_;  // per peer; null for this rank
  std::vector<pollfd> pidfds_;       // local peers' pidfds, polled together
  std::vector<PeerWatch*> polled_;   // their watches
  // One-copy transfers and Guarded messages: the first cma_used_ and guarded_used_ belong to the
  // running operation. Kept between operations (a deque keeps their addresses stable), so a
  // warm call allocates nothing.
  std::deque<CmaOp> cma_ops_;
  size_t cma_used_ = 0;
  std::deque<Guarded> guarded_;
  size_t guarded_used_ = 0;
  std::vector<char> local_;  // per peer: on this node (sends to it are Guarded too)
  // A short send to a peer on this node, with its seal, for UCX to send at once (post).
  uint8_t short_[128];
  std::vector<Heard> heard_;    // empty: not announcing
  uint64_t said_[2] = {0, 0};   // token, the number last announced
  bool unsent_ = false;         // a peer awaits said_ behind a send in flight (progress sends)
  mutable uint64_t failures_seen_ = 0;
  mutable std::chrono::steady_clock::time_point first_dead_seen_{};
  // The failed rank a peer's broken seal named (seal_error): cancel() passes it on in the
  // seals it breaks when this rank has not seen the failure itself, so that a failure relayed
  // through several ranks still names its rank at the last. -1: none.
  mutable int relayed_failure_ = -1;
  bool force_close_ = false;
  bool gave_up_ = false;  // cancel() let go of an unfinished request (gave_up())
};

}  // namespace collx
