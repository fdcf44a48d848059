// A communicator: its ranks, its transport (endpoints to every peer), the selection table in
// force, the sequence number of the next collective and the scratch space. Blocking calls run
// in the caller's thread. Non-blocking calls run one at a time, in order of posting: on a
// thread of the communicator (started on first use), or on a thread that waits for them and
// finds them not started. A blocking call first waits for earlier non-blocking ones.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "algo/algo.h"
#include "api/status.h"
#include "core/config.h"
#include "core/profile.h"
#include "memory/device_copy.h"
#include "memory/device_ipc.h"
#include "memory/pointer_cache.h"
#include "select/select.h"
#include "topo/node.h"
#include "transport/shm.h"
#include "transport/transport.h"

namespace collx {

class Context;

struct AllreduceOp {
  const void* send;  // equals recv for in-place (COLLX_IN_PLACE already resolved)
  void* recv;
  size_t count;
  Reducer red;
  collx_dtype_t dtype = COLLX_FLOAT32;  // what the caller asked for (COLLX_CHECK reports it)
  collx_op_t op = COLLX_SUM;
  MemKind mem = MemKind::kHost;  // kDevice: CUDA IPC within a node, else host staging
  int device = -1;               // the CUDA device of device buffers
  uintptr_t send_base = 0, recv_base = 0;  // device buffers: their allocations' starts,
  size_t send_size = 0, recv_size = 0;     // sizes
  uint64_t send_id = 0, recv_id = 0;       // and buffer ids (pointer cache)
  bool on_stream = false;        // collx_allreduce_stream: ordered after work on `stream`
  void* stream = nullptr;
};

class Comm;
struct Request;

// Polling ranks find each other within this (Comm::nudge). A longer one costs a rank that
// tested an operation once and never again: its peers' tests wait for it up to this long. A
// shorter one wakes the worker more often (measured in docs/PERFORMANCE.md).
inline constexpr std::chrono::microseconds kTestGrace{250};

// The worker's watch period (Comm::worker_main), also how often a thread that sleeps until the
// worker's operation ends wakes to run its progress hook (Comm::help): kWatch where the node's
// ranks (the communicator's there, or its machine's: NodeProcesses in topo/node.h) are at most
// the CPUs they can run on (usable_cpus in topo/topo.h: online, within the control group's CPU
// set), kCrowdedWatch where they outnumber them. There a deferred operation started early has no
// core of its own anyway, and every rank's worker waking each millisecond slowed the ranks
// down: random preload programs (mostly 3 - 4 ranks on 2 CPUs) took 31% less time with 10 ms
// ("The worker's watch period with more ranks than CPUs" in docs/PERFORMANCE.md). `cpus` <= 0:
// not known.
inline constexpr std::chrono::microseconds kWatch{1000};
inline constexpr std::chrono::microseconds kCrowdedWatch{10000};
inline std::chrono::microseconds watch_period_for(int local_ranks, int cpus) {
  return cpus > 0 && local_ranks > cpus ? kCrowdedWatch : kWatch;
}

// A test that comes within this of the previous test of the same request is polling: its
// thread has nothing else to do, so it may run an operation that is due (and that the worker
// has not started: it may wait for a core) as collx_wait would (Comm::nudge). Tests further
// apart, between pieces of a computation, leave such an operation to the worker, which
// overlaps it where a core is free. A polling loop tests every microsecond or so.
inline constexpr std::chrono::microseconds kPollGap{20};

// Ranks that share no memory tell each other what they started by messages
// (Transport::announce), p - 1 per operation started. Above this many ranks those would cost
// more than handing the operation to the worker, which a test does then (Comm::nudge).
inline constexpr int kAnnounceMaxRanks = 8;

// The non-blocking operations of one communicator, posted and not yet completed. Shared with
// its requests: a waiting thread locks it to find out whether its request is done, even when
// the communicator was destroyed meanwhile (which needs every request completed).
//
// An operation runs on the first thread to take it: the communicator's worker, a thread
// waiting for it, or one testing it once every rank has started it (Comm::nudge). The worker
// takes only operations that are due: one of at least COLLX_ASYNC_MIN bytes (and all before
// it) at once; a smaller one once collx_test was called for it (at once, or after a grace
// period where the ranks can tell each other what they started), or once it has waited a
// whole watch period (see Comm::worker_main).
struct OpQueue {
  std::mutex mu;
  std::condition_variable work;     // for the worker: an operation may be due, or stop
  std::condition_variable changed;  // for waiters: an operation completed
  std::deque<Request*> waiting;     // posted, not taken yet
  uint64_t posted = 0;              // operations posted so far (their numbers: 1, 2, ...)
  uint64_t due = 0;                 // the worker may take operations numbered up to this
  uint64_t asked = 0;               // and up to this one from asked_at on (Comm::nudge)
  Clock::time_point asked_at;
  Clock::time_point wake_at = Clock::time_point::max();  // the worker's alarm (max: none)
  std::chrono::microseconds grace = kTestGrace;
  uint64_t run_by_tests = 0;        // operations a testing thread ran (Comm::nudge)
  bool watching = false;            // the worker wakes every watch period
  bool running = false;             // a thread executes a taken operation
  bool stop = false;                // the worker exits
  bool held = false;                // tests: the worker takes nothing (Comm::hold_worker)
  std::atomic<int> pending{0};      // posted, not completed (changed under mu)
  std::atomic<uint64_t> completed{0};  // operations completed so far (changed under mu)
  int spin_us = 0;        // how long a waiter polls before it sleeps (COLLX_SPIN)
  size_t async_min = 0;   // COLLX_ASYNC_MIN
  std::chrono::microseconds watch = kWatch;  // the worker's watch period (watch_period_for)
};

struct Request {
  AllreduceOp op;
  Comm* comm = nullptr;  // valid while the request is not done
  std::shared_ptr<OpQueue> queue;
  uint64_t number = 0;   // in posting order (OpQueue::posted)
  bool deferred = false; // below COLLX_ASYNC_MIN: not due when posted
  Clock::time_point tested_at;  // when its last test ended (Comm::nudge; the testing thread's)
  std::atomic<bool> done{false};  // set last, under queue->mu; then `result` is final
  Status result;
};

struct BootRounds;

class Comm {
 public:
  // Bootstraps over UCX through the user's out-of-band allgather. `admit`, if given, runs
  // last on this rank (the C API registers the handle there; it may throw), before the
  // members say through that allgather that each made its communicator; a creation that
  // fails after it calls admit(c, false) before freeing c.
  using Admit = void (*)(Comm* c, bool in);
  static Status create(const collx_comm_params_t& params, Comm** out, Admit admit = nullptr);
  // Instead of create(), for a caller that cannot start a creation its peers start (no memory
  // for its own record of the communicator): takes part in the bootstrap's first round,
  // saying it failed with `code`, so that their creation fails too instead of waiting in the
  // allgather for it. Allocates nothing.
  static void refuse(const collx_comm_params_t& params, collx_status_t code);
  // Over a transport built by the caller (the in-process transport of the tests); with
  // `shared`, ShmChannel::bytes_for(size, config.shm_chunk, config.shm_areas) zeroed bytes
  // shared by all ranks, the shm_* algorithms are available. With `node_of` (rank r on node
  // node_of[r]) the ranks pretend to live on those nodes, and `shared`, if given, is the
  // memory of this rank's node (bytes_for its number of ranks), shared by its ranks only.
  static Status create(std::unique_ptr<Transport> transport, const Config& config, Comm** out,
                       void* shared = nullptr, const std::vector<uint64_t>* node_of = nullptr);
  ~Comm();

  int rank() const { return transport_->rank(); }
  // The id agreed by the members (core/comm_ids.h); 0 for a communicator over a transport
  // built by the caller.
  uint16_t id() const { return comm_id_; }
  int size() const { return transport_->size(); }
  // This rank's node and its place there (collx_comm_node).
  collx_comm_node_t node() const { return node_; }
  const Selection& selection() const { return selection_; }

  // One thread at a time calls into a communicator (the C API holds it for each call).
  bool try_claim() { return !busy_.exchange(true, std::memory_order_acquire); }
  void release() { busy_.store(false, std::memory_order_release); }

  // Where the buffers of a call live (pointer cache): both must be the same kind of memory,
  // and inside one allocation; `fn` names the caller. Sets op->mem, device and the
  // allocations of device buffers.
  Status check_memory(const void* send, const void* recv, size_t bytes, const char* fn,
                      AllreduceOp* op);
  // The worker's watch period, set at creation (watch_period_for). Tests set it, to tell its start
  // of a deferred operation from nudge()'s; before the first iallreduce.
  std::chrono::microseconds watch_period() const { return ops_->watch; }
  void set_watch_period(std::chrono::microseconds p) { ops_->watch = p; }
  // Tests: classify buffers through `q` instead of the CUDA driver.
  void set_memory_query(MemoryQuery* q) { pointers_ = std::make_unique<PointerCache>(q); }
  const PointerCache& pointers() const { return *pointers_; }
  // Makes the copier that stages device buffers of a device (cuda_copier by default; tests
  // pass one that stages plain memory).
  using CopierFactory = std::function<Status(int device, std::unique_ptr<DeviceCopier>*)>;
  void set_copier_factory(CopierFactory f) { make_copier_ = std::move(f); }
  // Makes the object through which device buffers of a device are reduced over CUDA IPC
  // (cuda_device_ipc by default; tests pass one over plain memory).
  using IpcFactory = std::function<Status(int device, std::unique_ptr<DeviceIpc>*)>;
  void set_ipc_factory(IpcFactory f) { make_ipc_ = std::move(f); }
  // The IPC registration cache of the current device (null before the first IPC call).
  const IpcCache* ipc_cache() const { return ipc_peers_.get(); }
  // IPC handles exported so far (each allocation once).
  uint64_t ipc_exports() const { return ipc_exported_; }
  Algo last_algo() const { return ran_; }  // the algorithm the last operation ran

  Status allreduce(const AllreduceOp& op);
  Status iallreduce(const AllreduceOp& op, Request** out);
  // Returns once `r` is done. Meanwhile, while no thread executes an operation of r's
  // communicator, executes the next one not yet taken on this thread (each bounded by its
  // own deadline); otherwise sleeps until one completes. Safe whether or not r's communicator
  // still exists.
  static void wait(Request* r);
  // The same for every operation posted so far. The check is inline: every blocking call
  // makes it (comm_async.cc holds the rest).
  void drain() {
    if (ops_->pending.load(std::memory_order_acquire) != 0) drain_posted();
  }
  void drain_posted();
  // collx_test of `r` not done: makes it due, so that it starts even if no thread waits.
  // This rank says that it started every operation up to r, and, r being deferred, any
  // posted after it (through shared memory, ShmChannel::started, or by announcements:
  // Transport::announce); if every peer has said so too, this thread runs those up to r now,
  // with no hand-over to another thread (which costs more than a small operation); if not,
  // the worker starts them (all that this rank said) after kTestGrace, unless a later test
  // finds every peer started first. So a test runs an operation only when no peer can
  // keep it waiting for longer than kTestGrace. Where the ranks cannot tell each other
  // (above kAnnounceMaxRanks without shared memory), the worker starts it now. An operation
  // that was due at its post (the worker was told then) is left to the worker, unless this
  // test comes within kPollGap of the request's previous one: a polling thread runs it the
  // same way, once every rank has started it, if no thread has taken it yet. Returns whether
  // the caller should yield its core (to a thread that runs an operation, or will).
  static bool nudge(Request* r);
  // Tests: the grace period of nudge (kTestGrace). Before the first iallreduce.
  void set_test_grace(std::chrono::microseconds g) { ops_->grace = g; }
  // Tests: the worker takes no operation, not even a due one. Before the first iallreduce.
  void hold_worker() { ops_->held = true; }
  // Operations that a testing thread ran (nudge), for the tests.
  uint64_t ops_run_by_tests() const;
  // The last operation this rank said it started, through shared memory (0 without it), for
  // the tests.
  uint64_t said_started() const;
  // Collective, before destruction: waits for posted operations, then for every rank, so
  // that closing the endpoints needs nothing more from any peer. On a failed communicator,
  // only the first: no rank is waited for.
  Status shutdown();

 private:
  // create(params, out)'s body; `rounds` says how far the bootstrap got, for the failure
  // path of an exception (comm_create.cc).
  static Status create(const collx_comm_params_t& params, Comm** out, Admit admit,
                       BootRounds* rounds);
  Comm(std::unique_ptr<Transport> transport, const Config& config, Selection selection);
  // nudge(r), told whether this test may run r once it is due (else it is the worker's).
  static bool nudge(Request* r, bool may_run);
  // Runs one operation. Operations run one at a time, in posting order (non-blocking ones on
  // the worker or a waiting thread, blocking ones on the caller's after drain()), and take
  // their sequence numbers from next_seq_ as they
  // run: one for host buffers, one per staged chunk (plus one for COLLX_CHECK) for device
  // buffers.
  Status execute(const AllreduceOp& op);
  Status execute_host(const AllreduceOp& op, uint32_t seq, bool check);
  Status execute_device(const AllreduceOp& op);
  // *ran false: some rank could not take part, nothing was done (the caller stages).
  Status execute_ipc(const AllreduceOp& op, bool* ran);
  // The one-kernel allreduce; sets it up on first use. *ran false: it is off for this
  // communicator, nothing was done.
  Status execute_flags(const AllreduceOp& op, bool* ran);
  Status execute_staged(const AllreduceOp& op);
  // Staged through the node's shared memory, reduced on the GPUs (algo/staged_gpu.cc). *ran
  // false: some rank could not take part, nothing was done (the caller stages).
  Status execute_staged_gpu(const AllreduceOp& op, bool* ran);
  // This rank's IPC description of a device buffer (an export per allocation, cached).
  Status ipc_export(uintptr_t base, size_t size, uint64_t id, const void* p, IpcExport* out);
  Status run_barrier();
  Status usable() const;  // COLLX_ERR_COMM_FAILED once fail() was called
  Status agree(const AllreduceOp& op, uint32_t seq);
  // The communicator is unusable from now on: later calls are COLLX_ERR_COMM_FAILED, and its
  // shutdown waits for no rank.
  void fail(const Status& st);
  Status check_agreement(const AllreduceOp& op, uint32_t seq);
  // `op` of v[0..n) over the ranks (a small collective on its own sequence number).
  Status small_allreduce(int64_t* v, size_t n, collx_op_t op);
  Status execute_profiled(const AllreduceOp& op);
  // Runs `op`, an operation on the transport (begin_op .. end_op). An exception inside it
  // (std::bad_alloc: a first call's container finds no memory) ends it as a transport error
  // does: its pending requests are cancelled (nothing lands in a buffer later, nothing is
  // left posted in UCX) and the communicator fails (COLLX_ERR_COMM_FAILED after). The
  // message starts with `what`. (Used by execute_safely, run_barrier, small_allreduce.)
  template <typename F>
  Status contained(const char* what, F&& op);
  // execute or execute_profiled inside contained, for allreduce and run.
  Status execute_safely(const AllreduceOp& op);
  // COLLX_PROFILE at destruction: combine the buckets over ranks, rank 0 reports.
  Status report_profile();
  // Attaches the node's shared memory (`name`; `created`: the creation status of the node's
  // lowest rank, which made it) and agrees that all ranks did; without it, falls back to the
  // point-to-point table. `pids`: the ranks' processes, where they can reach each other's
  // memory (else empty). `layout`: which ranks share the node (all, or those of this rank's
  // node where the ranks sit on several).
  Status setup_shm(const std::string& name, const Status& created, std::vector<int64_t> pids,
                   const NodeLayout& layout);
  // The hierarchical allreduce's node channel over `shared` (this node's memory) and groups;
  // across_table_ (made at creation: make_across_selection) picks their step between nodes.
  void set_nodes(const NodeLayout& layout, void* shared);
  // This rank's place in `layout` (node_), and the worker's watch period for its node, whose
  // machine has at least `node_processes` ranks (the most this process has seen there).
  void take_place(const NodeLayout& layout, int node_processes);
  void worker_main();
  // Where the ranks can tell each other (shm_ or announce_): this rank runs operations up to
  // `number` without waiting for its caller; every peer has said so. With announce_, under
  // ops_->mu.
  bool can_tell_started() const { return shm_ != nullptr || announce_; }
  void say_started(uint64_t number);
  bool peers_started(uint64_t number) const;
  // Chooses announcements for a communicator without shm_ (after setup_shm).
  void start_announcing();
  // Completes a taken operation: executes it on this thread, publishes its result and lets the
  // next one be taken. Touches neither `this` nor `r` afterwards.
  void run(Request* r);
  // Until `finished()` (called under q.mu): executes operations not yet taken while no thread
  // executes one, else sleeps until one completes.
  template <typename Finished>
  static void help(OpQueue& q, Finished finished);

  std::unique_ptr<Transport> transport_;
  Context* context_ = nullptr;  // set for UCX communicators (counts live communicators)
  uint16_t comm_id_ = 0;        // and then their id, held in context_->ids for id_owner_
  uint64_t id_owner_ = 0;
  Config config_;
  Selection selection_;
  Scratch scratch_;
  StoreChoice stores_;  // shm_two_shot's kind of stores (COLLX_SHM_STORES)
  std::unique_ptr<PointerCache> pointers_;
  CopierFactory make_copier_;
  std::unique_ptr<DeviceCopier> copier_;  // for device copier_device_ (kept across calls)
  int copier_device_ = -1;
  IpcFactory make_ipc_;
  std::unique_ptr<DeviceIpc> ipc_dev_;     // for device ipc_device_ (kept across calls)
  std::unique_ptr<IpcCache> ipc_peers_;    // opened through ipc_dev_: destroyed before it
  LruMap<uint64_t, IpcHandle> ipc_handles_{1024};  // this process's exports, by buffer id
  uint64_t ipc_exported_ = 0;
  int ipc_device_ = -1;
  // The one-kernel allreduce (cuda/flags.h): set up by the first device call of up to
  // Config::cuda_flags_max bytes, through a DeviceIpc of its own, and kept.
  struct Flags {
    enum class State { kUnknown, kOn, kOff } state = State::kUnknown;
    std::unique_ptr<DeviceIpc> dev;
    int device = -1;
    int rank = -1;
    std::vector<void*> areas;  // per rank (kOn): this rank's own, the peers' opened here
    uint64_t seq = 0;          // calls so far
    bool one_gpu = false;      // every rank on one GPU
    Flags() = default;
    Flags(const Flags&) = delete;
    Flags& operator=(const Flags&) = delete;
    ~Flags() {
      for (size_t q = 0; q < areas.size() && state == State::kOn; ++q) {
        if (static_cast<int>(q) != rank) dev->close(areas[q]);
      }
    }
  } flags_;
  std::unique_ptr<ShmSegment> segment_;  // UCX communicators: this node's shared memory
  std::unique_ptr<ShmChannel> shm_;      // every rank on one node: their shared memory
  // staged_gpu: a DeviceIpc of its own, with shm_'s slots registered with it. Declared after
  // the segment, so destroyed (unregistering the slots) before the segment is unmapped.
  struct StagedGpu {
    std::unique_ptr<DeviceIpc> dev;  // null where it could not be made for `device`
    int device = -1;
    uint8_t* slots_device = nullptr;
  } staged_gpu_;
  // Ranks on several nodes, at least 2 on one: the shared memory of this rank's node (if it
  // has more), the owners of each block it owns and their table (Algo::kHierarchical).
  std::unique_ptr<ShmChannel> node_shm_;
  std::vector<std::unique_ptr<Transport>> across_;  // hier_.groups' transports
  Selection across_table_;
  collx_comm_node_t node_{0, 1, 0, 1};  // from the layout made at creation
  Hierarchy hier_;
  bool announce_ = false;  // the ranks announce what they started (Transport::announce)
  bool tested_ = false;    // with announce_: this rank's nudge ran (under ops_->mu)
  std::unique_ptr<Profile> profile_;  // COLLX_PROFILE=1
  uint32_t next_seq_ = 0;
  Algo ran_ = Algo::kCount;  // the algorithm of the last operation (for the profile)
  int64_t across_ran_ = 0;   // hierarchical's algorithms between nodes in it (bit i: Algo i)
  Status failed_;  // first error; afterwards every call fails fast
  std::atomic<bool> busy_{false};

  std::shared_ptr<OpQueue> ops_ = std::make_shared<OpQueue>();
  std::thread worker_;  // started by the first iallreduce (under ops_->mu)
};

}  // namespace collx
