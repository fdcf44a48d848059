// Process-wide state: the UCX worker shared by every communicator, reference counted by
// collx_init/collx_finalize, and the allocator of communicator ids (tag space).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "api/status.h"
#include "transport/ucx.h"

namespace collx {

class Context {
 public:
  static Status init();      // collx_init
  static Status finalize();  // collx_finalize
  // Null before collx_init and after the last collx_finalize.
  static Context* get();

  UcxWorker& worker() { return *worker_; }
  // Communicator ids: every rank proposes its next free id, all take the maximum.
  uint16_t propose_comm_id() const { return next_comm_id_.load(); }
  void commit_comm_id(uint16_t id) { next_comm_id_.store(static_cast<uint16_t>(id + 1)); }

  std::atomic<int> live_comms{0};

 private:
  std::unique_ptr<UcxWorker> worker_;
  std::atomic<uint16_t> next_comm_id_{0};
  int refs_ = 0;
};

}  // namespace collx
