// The hot path allocates nothing (DESIGN.md): after warm-up, a repeated blocking call with the
// same buffers makes no heap allocation of libcollx's. Counted through this program's own
// global operator new (libcollx allocates only through it; UCX and MPI are C, and their
// allocations are the transport's), on the calling thread, which runs a blocking call whole.
// Run with mpiexec -n 2 (or more, on pretended nodes):
//   alloc_test        collx_allreduce with the defaults and with each algorithm forced (all
//                     but hierarchical on one node; on nodes that COLLX_NODE pretends, the
//                     defaults and hierarchical), a few dtype x op pairs, counts 0 to
//                     2^20 + 7, in place or not: no allocation in 5 calls after 2 of
//                     warm-up, and exact results; collx_iallreduce + collx_wait: its request,
//                     and at most one block of the posting queue
//   alloc_test --mpi  under LD_PRELOAD=libcollx_mpi.so: MPI_Allreduce (MPI_FLOAT, MPI_SUM) at
//                     the same counts: no allocation of the preload's or libcollx's
// Not built with sanitizers (their runtimes own operator new). Prints "N passed, N failed".
#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "common/mpi_finish.h"
#include "common/pattern.h"

namespace {

thread_local bool t_counting = false;
thread_local long t_allocations = 0;

void* allocate(size_t n, size_t align) {
  if (t_counting) ++t_allocations;
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

// The replaceable forms that libstdc++'s others (nothrow, array) call.
void* operator new(size_t n) { return allocate(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return allocate(n, static_cast<size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

using namespace collx::test;

namespace {

int g_passed = 0, g_failed = 0, g_rank = 0;

void expect(bool ok, const std::string& what) {
  ok ? ++g_passed : ++g_failed;
  if (!ok && g_failed <= 20) std::fprintf(stderr, "rank %d: FAILED %s\n", g_rank, what.c_str());
}

// Allocations made on this thread by f().
template <typename F>
long allocations(F&& f) {
  t_allocations = 0;
  t_counting = true;
  f();
  t_counting = false;
  return t_allocations;
}

const size_t kCounts[] = {0, 1, 3, 1000, 65543, (1u << 20) + 7};
constexpr int kWarmup = 2, kCalls = 5;

// Each count, in place or not: kWarmup calls, then kCalls counted, each on fresh inputs, the
// last one's result checked. `call` runs one allreduce; `label` names the case.
template <typename Call>
void each_case(int p, collx_dtype_t d, collx_op_t op, const std::string& label, Call&& call,
               long allowed) {
  const size_t es = collx_dtype_size(d);
  for (size_t count : kCounts) {
    // (A byte more: never empty, so no null pointer reaches memcpy and memcmp at count 0.)
    std::vector<uint8_t> in(count * es + 1), out(count * es + 1), want(count * es + 1);
    fill_input(d, op, g_rank, count, in.data());
    fill_expected(d, op, p, count, want.data());
    for (bool in_place : {false, true}) {
      bool ok = true;
      long made = 0;
      for (int i = 0; i < kWarmup + kCalls; ++i) {
        if (in_place) std::memcpy(out.data(), in.data(), count * es);
        const void* send = in_place ? COLLX_IN_PLACE : in.data();
        const long a = allocations([&] { ok = call(send, out.data(), count) && ok; });
        if (i >= kWarmup) made += a;
      }
      ok = ok && std::memcmp(out.data(), want.data(), count * es) == 0;
      const std::string what = label + " " + collx_dtype_name(d) + " " + collx_op_name(op) +
                               " count " + std::to_string(count) +
                               (in_place ? " in place" : "");
      expect(ok, what + ": exact results");
      expect(made <= allowed, what + ": " + std::to_string(made) + " allocations in " +
                                  std::to_string(kCalls) + " calls (at most " +
                                  std::to_string(allowed) + ")");
    }
  }
}

void direct(int p) {
  const char* algos[] = {nullptr,        "recursive_doubling", "rabenseifner", "ring",
                         "shm_one_shot", "shm_two_shot",       "shm_cma",      "hierarchical"};
  const bool one_node = std::getenv("COLLX_NODE") == nullptr;  // (else pretended nodes)
  const std::pair<collx_dtype_t, collx_op_t> pairs[] = {
      {COLLX_FLOAT32, COLLX_SUM}, {COLLX_BFLOAT16, COLLX_AVG}, {COLLX_INT64, COLLX_MAX}};
  for (const char* algo : algos) {
    // On pretended nodes only the defaults and hierarchical (the others run on one node).
    const bool hierarchical = algo != nullptr && std::strcmp(algo, "hierarchical") == 0;
    if (one_node ? hierarchical : algo != nullptr && !hierarchical) continue;
    if (algo != nullptr) setenv("COLLX_ALLREDUCE_ALGO", algo, 1);
    else unsetenv("COLLX_ALLREDUCE_ALGO");
    collx_comm_t c = nullptr;
    const std::string name = algo != nullptr ? algo : "defaults";
    const collx_status_t st = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
    expect(st == COLLX_SUCCESS, "comm create (" + name + "): " + collx_last_error());
    if (st != COLLX_SUCCESS) continue;
    for (const auto& [d, op] : pairs) {
      each_case(p, d, op, name, [&, d = d, op = op](const void* s, void* r, size_t n) {
        return collx_allreduce(s, r, n, d, op, c) == COLLX_SUCCESS;
      }, 0);
    }
    // A non-blocking call allocates its request; its posting queue (a deque), a block of
    // 64 entries when the last one fills, so at most one more in kCalls calls.
    each_case(p, COLLX_FLOAT32, COLLX_SUM, name + " (collx_iallreduce)",
              [&](const void* s, void* r, size_t n) {
                collx_request_t q = nullptr;
                return collx_iallreduce(s, r, n, COLLX_FLOAT32, COLLX_SUM, c, &q) ==
                           COLLX_SUCCESS &&
                       collx_wait(&q) == COLLX_SUCCESS;
              }, kCalls + 1);
    expect(collx_comm_destroy(c) == COLLX_SUCCESS, "comm destroy (" + name + ")");
  }
}

void through_mpi(int p) {
  each_case(p, COLLX_FLOAT32, COLLX_SUM, "MPI_Allreduce", [](const void* s, void* r, size_t n) {
    return MPI_Allreduce(s == COLLX_IN_PLACE ? MPI_IN_PLACE : s, r, static_cast<int>(n),
                         MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
  }, 0);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc > 1 && std::strcmp(argv[1], "--mpi") == 0) {
    through_mpi(p);
  } else {
    expect(collx_init() == COLLX_SUCCESS, std::string("collx_init: ") + collx_last_error());
    direct(p);
    expect(collx_finalize() == COLLX_SUCCESS, "collx_finalize");
  }
  return mpi_finish(g_passed, g_failed);
}
