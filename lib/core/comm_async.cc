// Comm's non-blocking operations: one worker thread per communicator runs them in order of
// posting; a thread that waits or tests may run the next one itself (help, nudge), and ranks
// tell each other which operations they started (say_started), so that a test on one rank
// can start an operation its peers have started too.
#include <algorithm>
#include <chrono>

#include <pthread.h>
#include <sched.h>

#include "core/comm.h"
#include "core/context.h"

namespace collx {

template <typename Finished>
void Comm::help(OpQueue& q, Finished finished) {
  std::unique_lock<std::mutex> lk(q.mu);
  while (!finished()) {
    if (!q.running && !q.waiting.empty()) {
      Request* next = q.waiting.front();  // its communicator lives: `next` is pending
      q.waiting.pop_front();
      q.running = true;
      lk.unlock();
      next->comm->run(next);
      lk.lock();
      continue;
    }
    // Another thread runs an operation. A small one ends sooner than a sleeping thread wakes
    // up: poll for a while first, then sleep until it completes; with a hook, waking once per
    // watch period to run the caller's own progress: every millisecond where the node's ranks
    // fit its CPUs (as a wait in the transport runs it), every kCrowdedWatch where they
    // outnumber them, as the worker wakes. There a thread that sleeps and wakes every
    // millisecond beside its rank's polling threads lets the kernel keep another rank off a
    // CPU for seconds; one that sleeps 5 ms or more did not (docs/RELIABILITY.md, "Known
    // problem: stalls with more ranks than CPUs ...").
    const uint64_t seen = q.completed.load(std::memory_order_relaxed);
    auto changed = [&] { return q.completed.load(std::memory_order_acquire) != seen; };
    lk.unlock();
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(q.spin_us);
    for (uint32_t polls = 1; !changed(); ++polls) {
      if (polls % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
    }
    lk.lock();
    if (!has_outer_progress()) {
      q.changed.wait(lk, changed);
      continue;
    }
    while (!q.changed.wait_for(lk, q.watch, changed)) {
      lk.unlock();
      outer_progress();
      lk.lock();
    }
  }
}

void Comm::wait(Request* r) {
  if (r->done.load(std::memory_order_acquire)) return;
  const std::shared_ptr<OpQueue> q = r->queue;  // outlives the communicator if need be
  help(*q, [&] { return r->done.load(std::memory_order_relaxed); });
}

void Comm::drain_posted() {
  help(*ops_, [&] { return ops_->pending.load(std::memory_order_relaxed) == 0; });
}

Status Comm::iallreduce(const AllreduceOp& op, Request** out) {
  auto* req = new (std::nothrow) Request();
  if (req == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory posting an iallreduce");
  req->op = op;
  req->comm = this;
  req->queue = ops_;
  OpQueue& q = *ops_;
  bool wake = false;
  {
    std::lock_guard<std::mutex> g(q.mu);
    try {
      if (!worker_.joinable()) worker_ = std::thread(&Comm::worker_main, this);
      q.waiting.push_back(req);  // first: nothing has changed if it finds no memory
    } catch (...) {  // std::system_error (no thread to be had) or std::bad_alloc
      delete req;
      return exception_status("cannot post the iallreduce");
    }
    req->number = ++q.posted;
    req->deferred = op.count * op.red.elem_size < q.async_min;
    if (!req->deferred) q.due = q.posted;
    // A deferred operation needs the worker watching; one that is due, the worker now.
    wake = q.due == q.posted || !q.watching;
    q.pending.fetch_add(1, std::memory_order_relaxed);
  }
  if (wake) q.work.notify_one();
  *out = req;
  return Status();
}

bool Comm::nudge(Request* r) {
  // A test may run a deferred operation whenever every rank has started it (even once it is
  // due, at the end of a watch or grace period); one due at its post only if the test polls.
  // That is timed from the end of the previous test: a slow one (under a sanitizer) still
  // reads as polling.
  if (r->deferred) return nudge(r, true);
  const bool polling = Clock::now() - r->tested_at < kPollGap;
  const bool yield = nudge(r, polling);
  r->tested_at = Clock::now();
  return yield;
}

bool Comm::nudge(Request* r, bool may_run) {
  const std::shared_ptr<OpQueue> q = r->queue;
  std::unique_lock<std::mutex> lk(q->mu);
  if (r->done.load(std::memory_order_relaxed)) return false;
  const bool due = q->due >= r->number;  // the worker was told to start it
  Comm* c = r->comm;  // lives while r is not done
  if (!c->can_tell_started()) {  // the worker starts it now
    if (!due) q->due = r->number;
    lk.unlock();
    q->work.notify_one();
    return true;
  }
  c->tested_ = true;
  // For a deferred r, every operation posted so far: a program that posted several tests them
  // one after another, and each test then finds its operation started by every rank that has
  // tested any of them, instead of waiting for each peer to come to the same one. (Not for
  // one due at its post: the worker has those, and nothing measured a gain there.)
  const uint64_t last = r->deferred ? q->posted : r->number;
  c->say_started(last);
  // A due operation is the worker's unless this test may run it. The caller's core is worth
  // yielding to a thread that runs an operation; while none does, a polling caller keeps it,
  // and its next test runs the operation here once every rank has started it, sooner than
  // the worker would get a core where threads outnumber cores. (With announcements a peer's
  // worker does not say that it started a due operation: then only the worker may run it.)
  const auto yield_for_due = [&] { return q->running || c->announce_; };
  if (due && !may_run) return yield_for_due();
  while (!r->done.load(std::memory_order_relaxed) && !q->running && !q->waiting.empty() &&
         c->peers_started(q->waiting.front()->number)) {
    Request* next = q->waiting.front();
    q->waiting.pop_front();
    q->running = true;
    ++q->run_by_tests;
    lk.unlock();
    c->run(next);
    if (next == r) return false;  // (then c may be gone)
    lk.lock();
  }
  if (r->done.load(std::memory_order_relaxed)) return false;
  if (due) return yield_for_due();
  if (q->asked >= last) return true;
  q->asked = last;
  q->asked_at = Clock::now() + q->grace;
  if (q->asked_at >= q->wake_at) return true;  // the worker wakes before the grace ends
  lk.unlock();
  q->work.notify_one();  // to wake up when it ends
  return true;
}

void Comm::start_announcing() {
  if (shm_ == nullptr && size() > 1 && size() <= kAnnounceMaxRanks) {
    announce_ = transport_->start_announcing(id_owner_);
  }
}

uint64_t Comm::ops_run_by_tests() const {
  std::lock_guard<std::mutex> g(ops_->mu);
  return ops_->run_by_tests;
}

uint64_t Comm::said_started() const {
  return shm_ == nullptr ? 0 : shm_->started(rank()).epoch.load(std::memory_order_acquire);
}

void Comm::say_started(uint64_t number) {
  if (announce_) transport_->announce(number);
  if (shm_ == nullptr) return;
  std::atomic<uint64_t>& mine = shm_->started(rank()).epoch;
  uint64_t seen = mine.load(std::memory_order_relaxed);
  while (seen < number && !mine.compare_exchange_weak(seen, number, std::memory_order_release,
                                                      std::memory_order_relaxed)) {
  }
}

bool Comm::peers_started(uint64_t number) const {
  if (announce_) return transport_->announced(true, nullptr) >= number;
  for (int q = 0; q < size(); ++q) {
    if (shm_->started(q).epoch.load(std::memory_order_acquire) < number) return false;
  }
  return true;
}

void Comm::run(Request* r) {
  try {
    if (announce_) {
      // Takes in what the peers said (it would pile up), and tells them, so that a test of
      // theirs may run it at once. Telling costs p - 1 messages: not for an operation that
      // was due when posted (every rank's worker starts it at once, no test waits for word of
      // it), nor while no rank ever tested.
      std::lock_guard<std::mutex> g(ops_->mu);
      uint64_t most = 0;
      transport_->announced(false, &most);
      if (r->deferred && (tested_ || most != 0)) say_started(r->number);
    } else {
      say_started(r->number);  // a peer's test may run it at once
    }
  } catch (...) {
    // Advisory (a lost word only delays a peer's test): the operation runs all the same.
  }
  Status st = execute_safely(r->op);
  OpQueue& q = *ops_;
  std::lock_guard<std::mutex> g(q.mu);
  r->result = std::move(st);
  r->done.store(true, std::memory_order_release);
  q.running = false;
  q.pending.fetch_sub(1, std::memory_order_release);
  q.completed.fetch_add(1, std::memory_order_release);
  q.changed.notify_all();
  // The worker takes the next operation only once it is due; until then, waking it is wasted.
  if (!q.waiting.empty() && q.waiting.front()->number <= q.due) q.work.notify_one();
}

// The worker runs the operations that are due. While deferred operations may be posted it
// watches: it wakes every watch period (watch_period_for: 1 ms, 10 ms where the node has more
// ranks than CPUs), and the operations posted before one period are due after it, so each starts
// within two periods even if no thread ever waits for it. An operation that a test asked for
// is due at the end of its grace period (nudge), for which the worker sets its alarm instead.
// After kIdleWatches periods with nothing posted it sleeps until the next post wakes it.
void Comm::worker_main() {
  constexpr int kIdleWatches = 100;
  // SCHED_BATCH: woken, the worker does not preempt a running thread; it runs on a free core,
  // or when the running thread sleeps or its time slice ends. Preempting would stop the very
  // threads (the poster, waiting for this operation, or a peer rank's thread in it) that the
  // operation needs: with every core busy, a 64 KiB operation took 3 - 42 us instead of 3 us
  // ("The worker does not preempt" in docs/PERFORMANCE.md). Same priority as before; no
  // privilege needed. Without it the worker runs as an ordinary thread. (Named for top and
  // debuggers, and for the test that checks its policy.)
  const sched_param none{};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
  pthread_setname_np(pthread_self(), "collx-worker");
  OpQueue& q = *ops_;
  std::unique_lock<std::mutex> lk(q.mu);
  int idle = 0;
  while (!q.stop) {  // stop comes after drain(): nothing is posted then
    if (q.asked > q.due && Clock::now() >= q.asked_at) q.due = q.asked;
    if (!q.running && !q.held && !q.waiting.empty() && q.waiting.front()->number <= q.due) {
      Request* next = q.waiting.front();
      q.waiting.pop_front();
      q.running = true;
      lk.unlock();
      run(next);
      lk.lock();
      idle = 0;
      continue;
    }
    if (q.waiting.empty() && idle >= kIdleWatches) {
      q.watching = false;
      q.work.wait(lk);
      idle = 0;
      continue;
    }
    q.watching = true;
    if (q.asked > q.due) {  // a test's grace period
      q.wake_at = q.asked_at;
      q.work.wait_until(lk, q.asked_at);
      q.wake_at = Clock::time_point::max();
      continue;
    }
    const uint64_t before = q.posted;
    q.wake_at = Clock::now() + q.watch;
    const std::cv_status woke = q.work.wait_until(lk, q.wake_at);
    q.wake_at = Clock::time_point::max();
    if (woke == std::cv_status::timeout) {
      q.due = std::max(q.due, before);
      idle = q.posted == before && q.waiting.empty() ? idle + 1 : 0;
    }
  }
}

}  // namespace collx
