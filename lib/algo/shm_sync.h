// Synchronisation through the flags of a ShmChannel (transport/shm.h), shared by the
// algorithms that use one: a rank publishes an epoch on one of its flags with a release
// store, and waits, with acquire loads and the operation's deadline, for a flag of every rank
// to reach it.
#pragma once

#include <atomic>
#include <cstdint>

#include "api/status.h"
#include "transport/shm.h"
#include "transport/transport.h"

namespace collx {

// Waits until the epoch `flag(q)` of every rank q has reached `epoch`; `what` names the step
// in a timeout's message ("waiting for rank q to <what>").
template <typename Flag>
inline Status shm_wait_all(Transport& t, const ShmChannel& ch, Flag flag, uint64_t epoch,
                           const char* what) {
  for (int q = 0; q < ch.size(); ++q) {
    const std::atomic<uint64_t>& f = flag(q);
    COLLX_TRY(t.wait_until([&] { return f.load(std::memory_order_acquire) >= epoch; },
                           ch.comm_rank(q), what));
  }
  return Status();
}

// The same for flag `which` of ShmRankFlags.
inline Status shm_wait_all(Transport& t, const ShmChannel& ch, ShmFlag ShmRankFlags::*which,
                           uint64_t epoch, const char* what) {
  auto flag = [&](int q) -> const std::atomic<uint64_t>& { return (ch.flags(q).*which).epoch; };
  return shm_wait_all(t, ch, flag, epoch, what);
}

// The same, where a rank may leave the epoch by publishing its `aborted` instead (its GPU work
// failed: cuda_ipc_*, staged_gpu), so that nobody waits for it until the deadline. *first: the
// first rank that left, or -1.
inline Status shm_wait_all_or_aborted(Transport& t, const ShmChannel& ch,
                                      ShmFlag ShmRankFlags::*which, uint64_t epoch,
                                      const char* what, int* first) {
  *first = -1;
  for (int q = 0; q < ch.size(); ++q) {
    const std::atomic<uint64_t>& f = (ch.flags(q).*which).epoch;
    const std::atomic<uint64_t>& aborted = ch.flags(q).aborted.epoch;
    COLLX_TRY(t.wait_until(
        [&] {
          return f.load(std::memory_order_acquire) >= epoch ||
                 aborted.load(std::memory_order_acquire) >= epoch;
        },
        ch.comm_rank(q), what));
    if (*first < 0 && f.load(std::memory_order_acquire) < epoch) *first = q;
  }
  return Status();
}

inline void shm_publish(const ShmChannel& ch, ShmFlag ShmRankFlags::*which, uint64_t epoch) {
  (ch.flags(ch.rank()).*which).epoch.store(epoch, std::memory_order_release);
}

// A call as the ranks of a node compare it: its count and its reduction (Reducer::kind).
// In a call's first epoch e, a rank sets its word (ShmBuffers::call, by e's parity) before it
// publishes e, and once it has seen every rank publish e it checks theirs. Ranks that
// disagree (an erroneous program, or a rank that stages device buffers in chunks beside one
// that does not) thus all stop in that epoch with COLLX_ERR_MISMATCH, instead of reducing
// unrelated bytes or waiting for epochs the others never run. The word is stored only when
// it changes, in a line no one spins on: while the calls repeat, the check reads lines the
// peers already hold, and the flag a peer waits on is still written once. Where nothing but
// the rank's own output is written before it, the check may follow the epoch's reduction
// (measured no faster nor slower than before it: PERFORMANCE.md, "The call check"). A word
// is written again two epochs later, when every rank has checked it (a rank starts epoch
// e + 2 only after every rank has published e + 1, which each does only after it has
// finished e).
inline uint64_t shm_call_word(size_t count, uint32_t kind) {
  return (static_cast<uint64_t>(count) << 16) | (kind & 0xffff);
}

inline void shm_set_call(const ShmChannel& ch, uint64_t epoch, uint64_t word) {
  std::atomic<uint64_t>& w = ch.flags(ch.rank()).buffers.call[epoch & 1];
  if (w.load(std::memory_order_relaxed) != word) w.store(word, std::memory_order_relaxed);
}

// Compares every rank's word for `epoch` (seen published) with this rank's, `mine`.
inline Status shm_check_calls(const Transport& t, const ShmChannel& ch, uint64_t epoch,
                              uint64_t mine) {
  for (int q = 0; q < ch.size(); ++q) {
    const uint64_t theirs = ch.flags(q).buffers.call[epoch & 1].load(std::memory_order_relaxed);
    if (theirs == mine) continue;
    const auto describe = [](uint64_t w) {
      return format("%llu elements (%s %s)", static_cast<unsigned long long>(w >> 16),
                    collx_dtype_name(static_cast<collx_dtype_t>((w >> 8) & 0xff)),
                    collx_op_name(static_cast<collx_op_t>(w & 0xff)));
    };
    return t.step_error(
        error(COLLX_ERR_MISMATCH,
              "it called this allreduce with %s, this rank with %s: every rank must pass the "
              "same count, datatype and op (COLLX_CHECK=1 checks this on every algorithm, "
              "and in-place and the kind of memory too)",
              describe(theirs).c_str(), describe(mine).c_str()),
        ch.comm_rank(q), "comparing calls with");
  }
  return Status();
}

}  // namespace collx
