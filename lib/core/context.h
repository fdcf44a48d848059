// Process-wide state: the UCX worker shared by every communicator, reference counted by
// collx_init/collx_finalize, and the communicator ids in use (tag space).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "api/status.h"
#include "core/comm_ids.h"
#include "transport/ucx.h"

namespace collx {

class Context {
 public:
  static Status init();      // collx_init
  static Status finalize();  // collx_finalize
  // Null before collx_init and after the last collx_finalize.
  static Context* get();

  UcxWorker& worker() { return *worker_; }
  // A number no other collx_comm_create call of this process gets (names creations).
  uint64_t next_creation() { return creations_.fetch_add(1) + 1; }

  CommIds ids;
  std::atomic<int> live_comms{0};

 private:
  std::unique_ptr<UcxWorker> worker_;
  std::atomic<uint64_t> creations_{0};
  int refs_ = 0;
};

}  // namespace collx
