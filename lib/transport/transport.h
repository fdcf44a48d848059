// Point-to-point transport seen by the algorithms: post a send or receive of a byte range to a
// peer rank, tagged by (collective sequence number, step); wait with a deadline.
//
// One collective at a time runs on a transport (the communicator serialises them). Between
// begin_op() and end_op() the transport records every posted request; end_op() cancels what is
// still pending after an error, so no buffer of the user's is written after the call returns.
// Matching: a receive matches the send with the same (peer, seq, step); several messages with
// the same tag match in posting order (per-pair FIFO).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/status.h"

namespace collx {

using Handle = uint32_t;
using Clock = std::chrono::steady_clock;

// The caller's own progress, run by its thread while that thread waits inside libcollx. The
// PMPI preload sets it to the MPI library's progress while it serves an MPI call: MPI's
// progress rule says a call that blocks still progresses the caller's other MPI operations
// (an MPI_Isend posted before MPI_Allreduce, whose receiver reaches MPI_Allreduce only once it
// completes). Per thread, so the communicator's own thread never runs it.
using OuterProgress = void (*)();
// Sets this thread's hook (null: none); returns the one it replaces.
OuterProgress set_outer_progress(OuterProgress fn);
// Runs this thread's hook, if it has one. Waits call it once per kCheckEvery.
void outer_progress();
bool has_outer_progress();  // this thread has a hook

// How often a wait that found nothing checks its deadline, its peers and outer_progress.
inline constexpr Clock::duration kCheckEvery = std::chrono::milliseconds(1);

class Transport {
 public:
  // Takes the request list's room for a barrier and a small recursive doubling (2 per round,
  // the rounds of folding in and out), the collectives of a communicator's creation: they
  // then allocate nothing, and a rank finds no memory for them before its peers wait for it.
  Transport(int rank, int size) : rank_(rank), size_(size), named_(rank) {
    int rounds = 0;
    for (int d = 1; d < size; d *= 2) ++rounds;
    requests_.reserve(2 * static_cast<size_t>(rounds) + 2);
  }
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // `spin_us`: how long a wait busy-polls before it starts yielding the core between polls.
  void begin_op(uint32_t seq, double timeout_s, int spin_us);
  // After an error: cancels and drains pending requests. Returns `st`.
  Status end_op(Status st);

  // An operation of this transport inside `outer`'s running one (GroupTransport inside its
  // parent): the same sequence number, step base and spin, and outer's deadline (so the
  // whole operation still has one, set by whichever waits first).
  void begin_nested(const Transport& outer);

  // Added to every step posted until reset: a sub-collective run inside another (the call
  // check) gets a tag range of its own.
  void set_step_base(uint32_t base) { step_base_ = base; }

  Status isend(int peer, uint32_t step, const void* buf, size_t bytes, Handle* h = nullptr);
  Status irecv(int peer, uint32_t step, void* buf, size_t bytes, Handle* h = nullptr);
  Status wait(Handle h);
  Status wait_all();  // every request posted since begin_op

  // `cause`, the failure of a shared-memory step with `peer` (reading its memory), named like
  // the transport's own errors (rank, peer, collective).
  Status step_error(const Status& cause, int peer, const char* what) const;

  // How many lanes (Request) a rank may use in one operation: the most groups it may run in.
  virtual int max_lanes() const { return 1 << 16; }

  // The communicator failed: the transport owes its peers nothing more (close without flush).
  virtual void mark_failed() {}
  // Whether cancel() let go of a request that the network layer or a peer may still use (UCX:
  // a matched receive, a send still queued, a one-copy send whose offer the peer may hold,
  // towards a peer that stopped answering): memory such a request uses must then outlive the
  // communicator, handed to keep() (Comm::~Comm).
  virtual bool gave_up() const { return false; }
  // Keeps `memory` as long as a request let go may use it, then calls free_fn on it (UCX:
  // once the worker is destroyed, UcxWorker::park); never frees it early (where it cannot keep
  // it, it leaks it). This default, for transports that let go of nothing, frees it at once.
  virtual void keep(void* memory, void (*free_fn)(void*)) noexcept { free_fn(memory); }

  // Announcements, for ranks that share no memory (Comm::nudge): each rank tells every peer
  // the number of the last non-blocking operation it has started (operations are numbered
  // alike on every rank). Advisory: a lost or late one only delays a test's run, so errors
  // are dropped here and reported by the operations themselves. Called outside operations or
  // beside one running on another thread; the caller serialises these calls (OpQueue::mu).
  // start_announcing: false if this transport cannot; `token` (alike on every rank, unique
  // per communicator) tells this communicator's announcements from those of one that had its
  // id before.
  virtual bool start_announcing(uint64_t /*token*/) { return false; }
  virtual void announce(uint64_t /*number*/) {}
  // What the peers have announced so far, after receiving what has arrived (progressing the
  // transport first if `progress`): the least number over the peers (0 while one has said
  // nothing), and in *most (if given) the greatest.
  virtual uint64_t announced(bool /*progress*/, uint64_t* most) {
    if (most != nullptr) *most = 0;
    return 0;
  }

  // Waits until ready() holds, under the operation's deadline and peer-failure checks, with
  // the same spin-then-yield policy as message waits. For algorithms that synchronise through
  // shared memory; `peer` and `what` name what is awaited in the error.
  template <typename F>
  Status wait_until(F ready, int peer, const char* what) {
    for (Backoff b(spin_);;) {
      if (ready()) return Status();
      if (b.idle()) COLLX_TRY(check_wait(peer, what));
    }
  }

 protected:
  friend class GroupTransport;  // forwards its requests to its parent's hooks
  struct Request {
    void* impl = nullptr;  // transport-specific; null once complete
    void* buf = nullptr;
    size_t bytes = 0;
    int peer = 0;
    uint32_t step = 0;
    bool is_recv = false;
    bool done = false;
    bool one_copy = false;  // UcxTransport: impl is a CmaOp, not a UCX request
    // Which of its groups (GroupTransport) this rank and the peer run the request in: a rank
    // that owns several blocks of a hierarchical allreduce sends the same steps in each group,
    // to different ranks, which may share a UCX worker (threads of one process): the lanes
    // keep their tags apart. 0 outside groups.
    uint32_t lane_self = 0, lane_peer = 0;
  };
  // Post a request; on immediate completion leave r.impl null and set r.done.
  virtual Status post(Request& r, uint32_t seq) = 0;
  // Completion check; sets r.done (and frees r.impl) when complete. Errors name the peer/step.
  virtual Status test(Request& r) = 0;
  virtual void progress() = 0;
  // Best-effort cancel of the pending requests among `reqs` (not done, impl set), bounded in
  // time; leaves each impl null and done. `why`: the operation's error (UCX tells the peers of
  // messages let go, in their seals). Allocates nothing: it runs after an exception that may
  // have been for want of memory.
  virtual void cancel(std::vector<Request>& reqs, collx_status_t why) = 0;
  // An error naming the request if its peer is known to have failed (checked while waiting).
  virtual Status peer_failure(const Request&) const { return Status(); }
  // A peer known to have failed (`prefer` if it has), with the cause; -1 if none.
  virtual int dead_peer(int /*prefer*/, std::string* /*why*/) const { return -1; }
  // wait_until's checks: peer failure, then the deadline.
  Status check_wait(int peer, const char* what) const;

  // The spin-then-yield policy of every wait, called once per poll that found nothing: busy-
  // polls for `spin` (time, not rounds: a round costs 1 ns on a flag and 100 ns through UCX),
  // then yields the core after every poll, so that more ranks than cores still progress.
  // Reads the clock only every 64 polls. idle() is true once per kCheckEvery of waiting: time
  // for the deadline and peer-failure checks, which cost system calls, and for the caller's
  // own progress (outer_progress).
  class Backoff {
   public:
    explicit Backoff(Clock::duration spin) : spin_(spin) {}
    bool idle() {
      if (yielding_) yield();
      if ((++polls_ & 63) != 0) return false;
      const Clock::time_point now = Clock::now();
      if (polls_ == 64) {
        yield_from_ = now + spin_;
        check_at_ = now + kCheckEvery;
        return false;
      }
      if (now >= yield_from_) yielding_ = true;
      if (now < check_at_) return false;
      check_at_ = now + kCheckEvery;
      outer_progress();
      return true;
    }

   private:
    Clock::duration spin_;
    Clock::time_point yield_from_{}, check_at_{};
    uint64_t polls_ = 0;
    bool yielding_ = false;
  };
  static void yield();
  // Whether the operation has run out of time. Its deadline is set by the first call, made
  // once a wait has found nothing for kCheckEvery: an operation whose waits all end sooner
  // reads no clock for it.
  bool past_deadline() const;
  // Called by begin_op: nothing of the previous operation is in flight any more.
  virtual void reset_op() {}

  Status describe(const Request& r, collx_status_t code, const char* what) const;

  // The rank that errors name as this one's (GroupTransport: its rank in the parent).
  void set_named(int rank) { named_ = rank; }

 private:
  Status post_request(int peer, uint32_t step, void* buf, size_t bytes, bool is_recv, Handle* h);
  Status wait_request(Request& r);

  int rank_;
  int size_;
  int named_;
  uint32_t seq_ = 0;
  mutable Clock::time_point deadline_{};  // set by the first past_deadline() of an operation
  const Transport* deadline_of_ = nullptr;  // begin_nested: the outer operation's deadline
  double timeout_s_ = 0;
  Clock::duration spin_{};
  uint32_t step_base_ = 0;
  std::vector<Request> requests_;  // capacity kept between operations: no allocation when warm
  size_t first_pending_ = 0;       // requests before this index are known complete
};

}  // namespace collx
