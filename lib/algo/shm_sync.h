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

inline void shm_publish(const ShmChannel& ch, ShmFlag ShmRankFlags::*which, uint64_t epoch) {
  (ch.flags(ch.rank()).*which).epoch.store(epoch, std::memory_order_release);
}

}  // namespace collx
