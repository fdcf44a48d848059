// The program's own operator new, which fails the k-th allocation counted: the out-of-memory
// tests (oom_test.cc, pmpi_oom_test.cc, device_oom_test.cc). libcollx and its preload
// allocate only through it; UCX, hwloc and MPI are C and allocate through malloc, which is
// left alone. An allocation is counted while g_inside is set, unless its thread set
// t_exempt; after fail_from(k, n), k allocations go through, the next n throw
// std::bad_alloc, and the rest go through (fail_none(): none throws). g_live counts the
// allocations not freed yet (a leak check). Include it in one file of a program only: it
// defines the replaceable operators.
// Under ASan it takes the place of the runtime's operator new (tools/run-tests runs the
// out-of-memory tests so): allocations go through the runtime's malloc, which still checks
// every access and leak. Not under valgrind, which replaces operator new itself.
#pragma once

#include <dirent.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace collx::test {

inline std::atomic<bool> g_inside{false};  // allocations are counted (and may fail)
inline std::atomic<long> g_left{-1};       // counted allocations to let through; < 0: all
inline std::atomic<long> g_run{1};         // then how many fail in a row
inline std::atomic<long> g_run_left{0};    // of those, how many are still to fail
inline std::atomic<long> g_seen{0};        // allocations counted
inline std::atomic<long> g_live{0};        // allocations not freed yet
inline thread_local bool t_exempt = false;  // this thread's allocations are never counted

inline void fail_from(long k, long n = 1) {
  g_run_left = 0;
  g_run = n;
  g_left = k;
}
inline void fail_none() { fail_from(-1); }

// This process's open file descriptors: the other leak check, for what the failure paths
// open (files, pidfds, segments).
inline long open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  long n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

inline void* allocate(size_t n, size_t align) {
  if (g_inside.load(std::memory_order_relaxed) && !t_exempt) {
    g_seen.fetch_add(1, std::memory_order_relaxed);
    if (g_left.fetch_sub(1, std::memory_order_relaxed) == 0) {
      g_run_left = g_run.load() - 1;
      throw std::bad_alloc();
    }
    if (g_run_left.load(std::memory_order_relaxed) > 0 && g_run_left.fetch_sub(1) > 0) {
      throw std::bad_alloc();
    }
  }
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

inline void release(void* p) {
  if (p != nullptr) g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

}  // namespace collx::test

// Every replaceable form, so that none is left to a runtime that defines its own (ASan's:
// its nothrow or array new with this file's delete would be a mismatch it reports).
void* operator new(size_t n) { return collx::test::allocate(n, 0); }
void* operator new[](size_t n) { return collx::test::allocate(n, 0); }
void* operator new(size_t n, std::align_val_t a) {
  return collx::test::allocate(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a) {
  return collx::test::allocate(n, static_cast<size_t>(a));
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return collx::test::allocate(n, 0);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return collx::test::allocate(n, static_cast<size_t>(a));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept {
  return operator new(n, a, t);
}
void operator delete(void* p) noexcept { collx::test::release(p); }
void operator delete[](void* p) noexcept { collx::test::release(p); }
void operator delete(void* p, size_t) noexcept { collx::test::release(p); }
void operator delete[](void* p, size_t) noexcept { collx::test::release(p); }
void operator delete(void* p, std::align_val_t) noexcept { collx::test::release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { collx::test::release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { collx::test::release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { collx::test::release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { collx::test::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { collx::test::release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  collx::test::release(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  collx::test::release(p);
}
