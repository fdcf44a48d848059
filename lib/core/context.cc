#include "core/context.h"

#include <mutex>

namespace collx {

namespace {
std::mutex g_mu;
Context* g_context = nullptr;  // written under g_mu; read by every call
bool g_forked_child = false;   // written in a child's fork handler, before any other thread
}  // namespace

// g_mu guards only the pointer and the count: UCX's setup and teardown (the latter waits up
// to 5 s for other nodes' ranks) run outside it, so that nothing they call (a driver that
// forks a helper, say) runs while before_fork would wait for the lock.
Status Context::init() {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_context != nullptr) {
      ++g_context->refs_;
      return Status();
    }
  }
  std::unique_ptr<Context> c(new (std::nothrow) Context());
  if (c == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory in collx_init");
  UcxWorker* w = nullptr;
  COLLX_TRY(UcxWorker::create(&w));
  c->worker_.reset(w);
  c->refs_ = 1;
  std::lock_guard<std::mutex> g(g_mu);
  if (g_context != nullptr) {  // another thread's collx_init came first: this one is not needed
    ++g_context->refs_;
    return Status();  // (c is freed once the lock is released: destroyed after g)
  }
  __atomic_store_n(&g_context, c.release(), __ATOMIC_RELEASE);
  return Status();
}

Status Context::finalize() {
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_context == nullptr) {
      return error(COLLX_ERR_NOT_INITIALIZED, "collx_finalize called without collx_init%s",
                   fork_note());
    }
    if (g_context->refs_ > 1) {
      --g_context->refs_;
      return Status();
    }
    if (int n = g_context->live_comms.load(); n > 0) {
      return error(COLLX_ERR_INVALID_ARG,
                   "collx_finalize: %d communicator(s) still exist; destroy them first", n);
    }
    c = g_context;
    __atomic_store_n(&g_context, nullptr, __ATOMIC_RELEASE);
  }
  delete c;
  return Status();
}

Context* Context::get() { return __atomic_load_n(&g_context, __ATOMIC_ACQUIRE); }

void Context::before_fork() { g_mu.lock(); }

void Context::after_fork_in_parent() { g_mu.unlock(); }

void Context::after_fork_in_child() {
  g_context = nullptr;  // left as it is: its UCX worker and memory are the parent's
  g_forked_child = true;
  g_mu.unlock();
}

bool Context::forked_child() { return g_forked_child; }

const char* Context::fork_note() {
  return g_forked_child ? " (a forked child does not inherit its parent's collx_init)" : "";
}

}  // namespace collx
