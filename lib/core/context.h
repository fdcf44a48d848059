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

  // Around fork (the API layer's pthread_atfork handlers): a forked child inherits the
  // parent's context but none of its threads, and its UCX worker and communicators would take
  // part in the parent's collectives. The child forgets it (the parent's to free), so that it
  // starts without one and may call collx_init for its own.
  static void before_fork();  // holds init/finalize off until one of these two
  static void after_fork_in_parent();
  static void after_fork_in_child();
  // Whether this process is a forked child of one that had called collx_init.
  static bool forked_child();
  // For the messages of calls made before collx_init: in such a child, " (a forked child does
  // not inherit its parent's collx_init)"; else "".
  static const char* fork_note();

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
