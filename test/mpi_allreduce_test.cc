// Multi-process allreduce over UCX, bootstrapped from MPI (run with mpiexec -n 2, 3, 4):
//  - every algorithm, forced through COLLX_ALLREDUCE_ALGO and through COLLX_TUNE, over the
//    count x dtype x op x in-place matrix, checked bitwise against the exact reference and
//    compared across ranks; with COLLX_ALLREDUCE_ALGO set for the job, that algorithm alone,
//    in the matrix and for every communicator made with the defaults below (the meson tests
//    of the shared-memory algorithms);
//  - several communicators at once (world, a split, a reversed world) used interleaved;
//  - 100 iallreduces of different sizes waited in reverse order;
//  - random batches of iallreduces (sizes across the algorithms' bounds and others, every
//    dtype x op, in place or not, buffers 0-7 bytes off malloc's alignment, differently on
//    each rank) completed in a different random order on each rank, by tests and waits, with
//    blocking calls in between, on a second communicator or on the same one (--random SEED
//    BATCHES: only these, for longer runs by hand);
//  - bad configuration fails on every rank with an error naming the bad token;
//  - the node's shared segment follows COLLX_SHM_CHUNK and COLLX_SHM_AREAS (its mapped size);
//  - with SIGNAL_STORM_US=N: a SIGALRM every N microseconds from before MPI_Init to the end,
//    its handler installed without SA_RESTART (as profilers' and timers' are), so any system
//    call of libcollx, UCX or MPI may be interrupted: the results must not change;
//  - with EXPECT_NO_SHM=0 (test/no_shm_shim.cc preloaded into the first rank with
//    NO_SHM=eintr): the node's segment is had all the same (shared-memory algorithms for
//    large messages); also after --random;
//  - with EXPECT_NO_SHM=1 (test/no_shm_shim.cc preloaded into some rank, which then cannot
//    create or attach the node's segment): every rank falls back to the point-to-point
//    algorithms by default, with correct results, and a forced shared-memory algorithm is an
//    error on every rank.
// Prints "N passed, N failed" and exits non-zero on any failure.
#include <mpi.h>

#include <signal.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "common/mpi_finish.h"
#include "common/pattern.h"
#include "topo/node.h"
#include "common/scoped_env.h"

using namespace collx::test;

namespace {

int g_rank = 0, g_passed = 0, g_failed = 0;
// The job's COLLX_ALLREDUCE_ALGO (null if unset): the one algorithm of the matrix, and that of
// every communicator created with the defaults.
const char* g_forced = nullptr;

void expect(bool ok, const std::string& what) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    if (g_failed <= 20) std::fprintf(stderr, "rank %d: FAILED: %s (%s)\n", g_rank, what.c_str(), collx_last_error());
  }
}

// Every rank's result hash equal to every other's.
bool same_everywhere(uint64_t h, MPI_Comm comm) {
  uint64_t mn = 0, mx = 0;
  MPI_Allreduce(&h, &mn, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&h, &mx, 1, MPI_UINT64_T, MPI_MAX, comm);
  return mn == mx;
}

// Where the ranks sit, from COLLX_NODE (unset: the real node): all on one node, or on
// several with at least 2 on one, where communicators of MPI_COMM_WORLD can run
// hierarchical.
struct Placement {
  bool one_node = true;
  bool hierarchical = false;
  collx_comm_node_t node{};  // what collx_comm_node should say on this rank
};

Placement placement() {
  constexpr int kLen = 64;
  char mine[kLen] = {};
  const char* n = std::getenv("COLLX_NODE");
  std::snprintf(mine, kLen, "%s", n != nullptr ? n : "");
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<char> all(static_cast<size_t>(kLen) * p);
  MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, MPI_COMM_WORLD);
  std::map<std::string, int> ranks;
  for (int i = 0; i < p; ++i) ++ranks[std::string(&all[static_cast<size_t>(i) * kLen])];
  Placement pl;
  // Nodes numbered in the order of their lowest rank; local ranks in rank order.
  std::vector<std::string> order;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < p; ++i) {
    const std::string name(&all[static_cast<size_t>(i) * kLen]);
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    if (name == mine && i < rank) ++pl.node.local_rank;
  }
  pl.node.node = static_cast<int>(std::find(order.begin(), order.end(), mine) - order.begin());
  pl.node.nodes = static_cast<int>(order.size());
  pl.node.local_size = ranks[mine];
  pl.one_node = ranks.size() == 1;
  for (const auto& node : ranks) pl.hierarchical = pl.hierarchical || node.second >= 2;
  pl.hierarchical = pl.hierarchical && !pl.one_node;
  return pl;
}

// A communicator with COLLX_ALLREDUCE_ALGO and COLLX_TUNE set to `algo` and `tune` (null:
// unset); both null: the job's forced algorithm, if any, else the defaults.
collx_comm_t create(MPI_Comm mc, const char* algo, const char* tune) {
  ScopedEnv a("COLLX_ALLREDUCE_ALGO", algo == nullptr && tune == nullptr ? g_forced : algo),
      t("COLLX_TUNE", tune);
  collx_comm_t c = nullptr;
  const collx_status_t st = collx_comm_create_mpi(mc, &c);
  expect(st == COLLX_SUCCESS, std::string("comm create ") + (algo ? algo : tune ? tune : "defaults"));
  return c;
}

void matrix(collx_comm_t c, MPI_Comm mc, const std::string& label) {
  int p = 0, rank = 0;
  MPI_Comm_size(mc, &p);
  MPI_Comm_rank(mc, &rank);
  const std::vector<size_t> counts = {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p),
                                      static_cast<size_t>(p + 1), 1000, 65536 + 7};
  std::vector<uint8_t> send, recv, exp;
  for (size_t count : counts) {
    for (collx_dtype_t d : all_dtypes()) {
      for (collx_op_t op : all_ops()) {
        if (!op_valid(d, op)) continue;
        const size_t bytes = count * collx_dtype_size(d);
        exp.resize(bytes);
        fill_expected(d, op, p, count, exp.data());
        for (bool in_place : {false, true}) {
          send.assign(bytes, 0);
          recv.assign(bytes + 32, 0xcd);
          fill_input(d, op, rank, count, in_place ? recv.data() : send.data());
          const collx_status_t st = collx_allreduce(in_place ? COLLX_IN_PLACE : send.data(),
                                                    recv.data(), count, d, op, c);
          const bool ok = st == COLLX_SUCCESS && (bytes == 0 || std::memcmp(recv.data(), exp.data(), bytes) == 0) &&
                          recv[bytes] == 0xcd;
          expect(ok, label + " count " + std::to_string(count) + " " + collx_dtype_name(d) + " " +
                         collx_op_name(op) + (in_place ? " in-place" : ""));
        }
        if (count == 1000) expect(same_everywhere(collx::fnv1a(recv.data(), bytes), mc), label + " cross-rank hash");
      }
    }
  }
}

void several_comms() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm half, reversed;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
  MPI_Comm_split(MPI_COMM_WORLD, 0, p - g_rank, &reversed);
  collx_comm_t cw = create(MPI_COMM_WORLD, nullptr, nullptr);
  collx_comm_t ch = create(half, "ring", nullptr);
  collx_comm_t cr = create(reversed, "recursive_doubling", nullptr);
  int hp = 0, hr = 0, rr = 0;
  MPI_Comm_size(half, &hp);
  MPI_Comm_rank(half, &hr);
  MPI_Comm_rank(reversed, &rr);
  for (int it = 0; it < 20; ++it) {
    const size_t n = 1 + static_cast<size_t>(it) * 997;
    std::vector<int64_t> w(n), h(n), r(n), ew(n), eh(n), er(n);
    fill_input(COLLX_INT64, COLLX_SUM, g_rank, n, w.data());
    fill_input(COLLX_INT64, COLLX_MAX, hr, n, h.data());
    fill_input(COLLX_INT64, COLLX_BXOR, rr, n, r.data());
    fill_expected(COLLX_INT64, COLLX_SUM, p, n, ew.data());
    fill_expected(COLLX_INT64, COLLX_MAX, hp, n, eh.data());
    fill_expected(COLLX_INT64, COLLX_BXOR, p, n, er.data());
    expect(collx_allreduce(COLLX_IN_PLACE, w.data(), n, COLLX_INT64, COLLX_SUM, cw) == 0, "world");
    expect(collx_allreduce(COLLX_IN_PLACE, h.data(), n, COLLX_INT64, COLLX_MAX, ch) == 0, "half");
    expect(collx_allreduce(COLLX_IN_PLACE, r.data(), n, COLLX_INT64, COLLX_BXOR, cr) == 0, "reversed");
    expect(w == ew && h == eh && r == er, "several communicators interleaved, n=" + std::to_string(n));
  }
  expect(collx_comm_destroy(cw) == 0 && collx_comm_destroy(ch) == 0 && collx_comm_destroy(cr) == 0,
         "destroy several");
  MPI_Comm_free(&half);
  MPI_Comm_free(&reversed);
}

void nonblocking() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  collx_comm_t c = create(MPI_COMM_WORLD, nullptr, nullptr);
  const int n = 100;
  std::vector<std::vector<float>> in(n), out(n);
  std::vector<collx_request_t> req(n);
  for (int i = 0; i < n; ++i) {
    const size_t count = static_cast<size_t>(i) * i * 13 + 1;  // 1 .. ~127K elements
    in[i].resize(count);
    out[i].assign(count, -1.f);
    fill_input(COLLX_FLOAT32, COLLX_SUM, g_rank, count, in[i].data());
    expect(collx_iallreduce(in[i].data(), out[i].data(), count, COLLX_FLOAT32, COLLX_SUM, c,
                            &req[i]) == COLLX_SUCCESS, "iallreduce post");
  }
  for (int i = n - 1; i >= 0; --i) {
    expect(collx_wait(&req[i]) == COLLX_SUCCESS, "wait");
    std::vector<float> e(in[i].size());
    fill_expected(COLLX_FLOAT32, COLLX_SUM, p, e.size(), e.data());
    expect(out[i] == e, "iallreduce #" + std::to_string(i) + " result");
  }
  // A blocking call after non-blocking ones runs after them.
  collx_request_t r;
  std::vector<float> a(5000), b(5000), e(5000);
  fill_input(COLLX_FLOAT32, COLLX_MAX, g_rank, 5000, a.data());
  fill_expected(COLLX_FLOAT32, COLLX_MAX, p, 5000, e.data());
  expect(collx_iallreduce(a.data(), b.data(), 5000, COLLX_FLOAT32, COLLX_MAX, c, &r) == 0, "post");
  expect(collx_allreduce(COLLX_IN_PLACE, a.data(), 5000, COLLX_FLOAT32, COLLX_MAX, c) == 0, "blocking");
  expect(collx_wait(&r) == 0 && a == e && b == e, "blocking after non-blocking");
  expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
}

// Random batches of 1 - 4 iallreduces on one communicator (the same calls on every rank, from
// one seed) completed in a random order of each rank's own, half by collx_test loops and half
// by collx_wait, with a blocking allreduce between the posts and the completions every other
// batch (on a second communicator, or on the first one after the operations posted there).
// Buffers 0 - 7 bytes off alignment; each result bitwise against the exact one, with 16 guard
// bytes that must stay untouched.
void random_orders(unsigned seed, int batches) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  collx_comm_t a = create(MPI_COMM_WORLD, nullptr, nullptr), b = create(dup, nullptr, nullptr);
  const size_t counts[] = {0, 1, static_cast<size_t>(p) - 1, static_cast<size_t>(p) + 1, 100,
                           1024, 4099, 16384, 65539, 262147};
  const std::vector<collx_dtype_t> dtypes = all_dtypes();
  const std::vector<collx_op_t> ops = all_ops();
  std::mt19937 shared(seed), mine(seed + 777u + static_cast<unsigned>(g_rank));
  constexpr uint8_t kGuard = 0xcd;
  struct Call {
    collx_dtype_t d;
    collx_op_t o;
    size_t count;
    bool in_place;
    size_t at;  // the buffers' offset from malloc's alignment, in bytes (this rank's own)
    std::vector<uint8_t> in, out;
    collx_request_t r = nullptr;
  };
  for (int batch = 0; batch < batches && a != nullptr && b != nullptr; ++batch) {
    std::vector<Call> calls(1 + shared() % 4);
    for (Call& c : calls) {
      do {
        c.d = dtypes[shared() % dtypes.size()];
        c.o = ops[shared() % ops.size()];
      } while (!op_valid(c.d, c.o));
      // Mostly the algorithms' bounds; else any count up to 2^18.
      c.count = shared() % 4 != 0 ? counts[shared() % std::size(counts)] : shared() % (1u << 18);
      c.in_place = shared() % 2 == 1;
      c.at = mine() % 8;
      const size_t bytes = c.count * collx_dtype_size(c.d);
      c.in.resize(c.at + bytes);
      fill_input(c.d, c.o, g_rank, c.count, c.in.data() + c.at);
      c.out.assign(c.at + bytes + 16, kGuard);
      if (c.in_place) std::copy(c.in.begin(), c.in.end(), c.out.begin());
      expect(collx_iallreduce(c.in_place ? COLLX_IN_PLACE : c.in.data() + c.at,
                              c.out.data() + c.at, c.count, c.d, c.o, a,
                              &c.r) == COLLX_SUCCESS,
             "random orders: post");
    }
    if (batch % 2 == 0) {  // a blocking call on the second communicator, or on the first
      const size_t count = counts[shared() % std::size(counts)];  // (after those posted on it)
      const bool same = shared() % 3 == 0;
      std::vector<int64_t> x(count), want(count);
      fill_input(COLLX_INT64, COLLX_MAX, g_rank, count, x.data());
      fill_expected(COLLX_INT64, COLLX_MAX, p, count, want.data());
      expect(collx_allreduce(COLLX_IN_PLACE, x.data(), count, COLLX_INT64, COLLX_MAX,
                             same ? a : b) == COLLX_SUCCESS &&
                 x == want,
             std::string("random orders: blocking on the ") + (same ? "first" : "second") +
                 " communicator, count " + std::to_string(count));
    }
    std::vector<size_t> order(calls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), mine);
    for (size_t i : order) {
      Call& c = calls[i];
      collx_status_t st = COLLX_IN_PROGRESS;
      if (mine() % 2 == 0) {
        const double end = MPI_Wtime() + 60;
        while (st == COLLX_IN_PROGRESS && MPI_Wtime() < end) st = collx_test(&c.r);
        if (st == COLLX_IN_PROGRESS) collx_wait(&c.r);  // (fails below) not left running
      } else {
        st = collx_wait(&c.r);
      }
      const size_t bytes = c.count * collx_dtype_size(c.d);
      std::vector<uint8_t> want(c.at + bytes + 16, kGuard);
      if (c.in_place) std::copy(c.in.begin(), c.in.begin() + static_cast<long>(c.at), want.begin());
      fill_expected(c.d, c.o, p, c.count, want.data() + c.at);
      expect(st == COLLX_SUCCESS && c.out == want,
             std::string("random orders (seed ") + std::to_string(seed) + "): batch " +
                 std::to_string(batch) + ", " + collx_dtype_name(c.d) + " " +
                 collx_op_name(c.o) + " count " + std::to_string(c.count) +
                 (c.in_place ? " in place" : "") + " at +" + std::to_string(c.at));
    }
  }
  if (a != nullptr) expect(collx_comm_destroy(a) == COLLX_SUCCESS, "destroy");
  if (b != nullptr) expect(collx_comm_destroy(b) == COLLX_SUCCESS, "destroy");
  MPI_Comm_free(&dup);
}

// Completion by collx_test loops, first with rank 0 polling while the others wait, then with
// every rank polling. Twice: on the job's nodes, then on two pretended ones (even and odd
// ranks), where the ranks tell each other what they started by messages (announcements)
// instead of through a node's shared memory (not where the job forces an algorithm, which
// may be one of the node's shared memory).
void polling() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (int split = 0; split < (g_forced != nullptr ? 1 : 2); ++split) {
    collx_comm_t c = nullptr;
    if (split == 0) {
      c = create(MPI_COMM_WORLD, nullptr, nullptr);
    } else {
      ScopedEnv node("COLLX_NODE", g_rank % 2 ? "poll-b" : "poll-a");
      c = create(MPI_COMM_WORLD, nullptr, nullptr);
    }
    if (c == nullptr) continue;
    const std::string label = split == 1 ? " (two nodes)" : " (job's nodes)";
    for (int everyone = 0; everyone < 2; ++everyone) {
      constexpr int kOps = 30;
      std::vector<std::vector<int32_t>> buf(kOps);
      std::vector<collx_request_t> req(kOps);
      for (int i = 0; i < kOps; ++i) {
        const size_t count = 1 + static_cast<size_t>(i) * 37;  // 4 B - 4 KiB: deferred ones
        buf[i].resize(count);
        fill_input(COLLX_INT32, COLLX_SUM, g_rank, count, buf[i].data());
        expect(collx_iallreduce(COLLX_IN_PLACE, buf[i].data(), count, COLLX_INT32, COLLX_SUM, c,
                                &req[i]) == COLLX_SUCCESS,
               "iallreduce post" + label);
      }
      for (int i = 0; i < kOps; ++i) {
        collx_status_t st = COLLX_IN_PROGRESS;
        if (g_rank == 0 || everyone == 1) {
          const double end = MPI_Wtime() + 20;
          while (st == COLLX_IN_PROGRESS && MPI_Wtime() < end) st = collx_test(&req[i]);
        } else {
          st = collx_wait(&req[i]);
        }
        std::vector<int32_t> e(buf[i].size());
        fill_expected(COLLX_INT32, COLLX_SUM, p, e.size(), e.data());
        expect(st == COLLX_SUCCESS && req[i] == nullptr && buf[i] == e,
               "polled iallreduce #" + std::to_string(i) + label);
        if (st == COLLX_IN_PROGRESS) collx_wait(&req[i]);  // (failed above) not left running
      }
    }
    expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy" + label);
  }
}

// COLLX_CHECK=1 over UCX: a count mismatch is an error on every rank, and the communicator
// works afterwards.
void check_mode() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  collx_comm_t c = nullptr;
  {
    ScopedEnv check("COLLX_CHECK", "1");
    c = create(MPI_COMM_WORLD, nullptr, nullptr);
  }
  std::vector<int32_t> v(100, 1);
  const size_t count = g_rank == p - 1 ? 50 : 100;
  expect(collx_allreduce(COLLX_IN_PLACE, v.data(), count, COLLX_INT32, COLLX_SUM, c) ==
                 COLLX_ERR_MISMATCH &&
             std::strstr(collx_last_error(), "count 50") != nullptr && v[0] == 1,
         "COLLX_CHECK count mismatch");
  expect(collx_allreduce(COLLX_IN_PLACE, v.data(), 100, COLLX_INT32, COLLX_SUM, c) == 0 && v[99] == p,
         "COLLX_CHECK agreement afterwards");
  expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
}

void bad_config() {
  collx_comm_t c = nullptr;
  collx_status_t st = COLLX_SUCCESS;
  {
    ScopedEnv tune("COLLX_TUNE", "0-4K:ring,4K-inf:turbo");
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
  }
  expect(st == COLLX_ERR_CONFIG && std::strstr(collx_last_error(), "4K-inf:turbo") && c == nullptr,
         "bad COLLX_TUNE is an error naming the token");
  {
    ScopedEnv unknown("COLLX_RING_SEGMEN", "4K");
    expect(collx_comm_create_mpi(MPI_COMM_WORLD, &c) == COLLX_ERR_CONFIG &&
               std::strstr(collx_last_error(), "COLLX_RING_SEGMEN"),
           "unknown COLLX_ variable");
  }
  // Settings that choose the steps of a collective (here those of a device call, and the
  // shared segment's layout) must be alike on every rank, on one node or several. Rank 0
  // takes `value`, or `otherwise` where the job already set `value` for every rank.
  struct Setting {
    const char* name;
    const char* value;
    const char* otherwise;
  };
  for (const Setting& s : {Setting{"COLLX_CUDA_TWO_SHOT", "64K", "128K"},
                           Setting{"COLLX_SHM_AREAS", "3", "2"}}) {
    const std::string n = s.name;
    collx_status_t differ = COLLX_SUCCESS;
    {
      const char* own = std::getenv(s.name);
      const char* rank0 = own != nullptr && std::strcmp(own, s.value) == 0 ? s.otherwise : s.value;
      ScopedEnv setting(s.name, g_rank == 0 ? rank0 : own);
      differ = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
    }
    expect(differ == COLLX_ERR_CONFIG && c == nullptr &&
               std::strstr(collx_last_error(), (n + " differs between rank 0").c_str()) != nullptr,
           n + " differing is an error on every rank");
  }
}

// --disagree: rank 0 passes n elements, the others n + n/2 + 1, without COLLX_CHECK, to every
// algorithm, over messages sent whole and (n = 2^16 float32: 256 KiB) as one-copy offers.
// Every rank must get an error (a mismatch, or the deadline of 2 s; never a success), within
// the deadline plus a second, with its send buffer unchanged and nothing written past its
// count; destroying the communicator frees it, and a new one works.
void disagree() {
  ScopedEnv deadline("COLLX_TIMEOUT", "2");
  for (const char* algo : {"recursive_doubling", "rabenseifner", "ring", "shm_one_shot",
                           "shm_two_shot", "shm_cma"}) {
    for (size_t n : {size_t{10}, size_t{1} << 16}) {
      collx_comm_t c = create(MPI_COMM_WORLD, algo, nullptr);
      if (c == nullptr) return;
      const size_t count = g_rank == 0 ? n : n + n / 2 + 1;
      std::vector<float> send(count + 16, 1.f), recv(count + 16, -3.f);
      const double start = MPI_Wtime();
      const collx_status_t st =
          collx_allreduce(send.data(), recv.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      const double took = MPI_Wtime() - start;
      const std::string what = std::string(algo) + " n=" + std::to_string(n) + ": ";
      expect(st == COLLX_ERR_MISMATCH || st == COLLX_ERR_TIMEOUT,
             what + "counts that differ are an error, got " + collx_strerror(st) +
                 (st == COLLX_SUCCESS ? "" : std::string(" (") + collx_last_error() + ")"));
      expect(took < 3.0,
             what + "the error came within the deadline: " + std::to_string(took) + " s");
      expect(std::all_of(send.begin(), send.end(), [](float v) { return v == 1.f; }),
             what + "send buffer unchanged");
      expect(std::all_of(recv.begin() + static_cast<long>(count), recv.end(),
                         [](float v) { return v == -3.f; }),
             what + "nothing written past the count");
      expect(collx_comm_destroy(c) == COLLX_ERR_COMM_FAILED,
             what + "destroy: COLLX_ERR_COMM_FAILED (freed; it failed earlier)");
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  collx_comm_t c = create(MPI_COMM_WORLD, nullptr, nullptr);
  if (c == nullptr) return;
  int32_t v = g_rank, sum = 0;
  expect(collx_allreduce(&v, &sum, 1, COLLX_INT32, COLLX_SUM, c) == COLLX_SUCCESS, "afterwards");
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  expect(sum == p * (p - 1) / 2, "afterwards: the result");
  expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
}

// EXPECT_NO_SHM=1: some rank of this one-node job cannot create or attach the shared segment.
void no_shared_memory() {
  collx_comm_t c = create(MPI_COMM_WORLD, nullptr, nullptr);
  if (c == nullptr) return;
  for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{16} << 20}) {
    const char* algo = collx_comm_algorithm(c, bytes);
    expect(algo != nullptr && std::strncmp(algo, "shm_", 4) != 0,
           "without the segment, " + std::to_string(bytes) + " bytes take " +
               (algo ? algo : "(none)"));
  }
  matrix(c, MPI_COMM_WORLD, "without the segment");
  expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
  collx_status_t st = COLLX_SUCCESS;
  {
    ScopedEnv forced("COLLX_ALLREDUCE_ALGO", "shm_two_shot");
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
  }
  expect(st == COLLX_ERR_TRANSPORT && c == nullptr &&
             std::strstr(collx_last_error(), "shared memory unavailable") != nullptr,
         std::string("shm_two_shot forced without the segment is an error: ") +
             collx_last_error());
  if (c != nullptr) collx_comm_destroy(c);
}

// EXPECT_NO_SHM: 1, no_shared_memory(); 0, a communicator of the world (all on one node) has
// its segment, so large messages take a shared-memory algorithm.
void shm_expectation() {
  const char* no_shm = std::getenv("EXPECT_NO_SHM");
  if (no_shm == nullptr) return;
  if (std::strcmp(no_shm, "1") == 0) {
    no_shared_memory();
    return;
  }
  collx_comm_t c = create(MPI_COMM_WORLD, nullptr, nullptr);
  if (c == nullptr) return;
  const char* algo = collx_comm_algorithm(c, size_t{16} << 20);
  expect(algo != nullptr && std::strncmp(algo, "shm_", 4) == 0,
         std::string("with the segment, 16 MiB take ") + (algo ? algo : "(none)"));
  expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
}

// The shared segment follows COLLX_SHM_CHUNK and COLLX_SHM_AREAS: it holds areas (p + 1)
// chunks for the p ranks of the node, besides flags of a size that neither changes. Three
// communicators of the world, (64K, 2), (128K, 2) and (64K, 3), each with the size of the
// "/memfd:collx" mapping that appeared with it (/proc/self/maps; none where this rank has
// no segment) and a 1.2 MB allreduce through it.
void segment_layout(const Placement& where) {
  if (std::getenv("EXPECT_NO_SHM") != nullptr) return;  // a shim takes the segment away
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  auto mappings = [] {
    std::set<std::string> lines;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      if (line.find("/memfd:collx ") != std::string::npos) lines.insert(line);
    }
    return lines;
  };
  auto mapped_with = [&](const char* chunk, const char* areas) {
    const std::set<std::string> before = mappings();
    ScopedEnv c("COLLX_SHM_CHUNK", chunk), a("COLLX_SHM_AREAS", areas);
    collx_comm_t comm = create(MPI_COMM_WORLD, nullptr, nullptr);
    size_t bytes = 0;
    int added = 0;
    for (const std::string& line : mappings()) {
      unsigned long long lo = 0, hi = 0;
      if (before.count(line) == 0 && std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) == 2) {
        bytes += static_cast<size_t>(hi - lo);
        ++added;
      }
    }
    const std::string what = std::string("COLLX_SHM_CHUNK=") + chunk + " COLLX_SHM_AREAS=" + areas;
    expect(added <= 1, what + ": one segment mapped, not " + std::to_string(added));
    const size_t n = 300000;
    std::vector<float> v(n), want(n);
    fill_input(COLLX_FLOAT32, COLLX_SUM, g_rank, n, v.data());
    fill_expected(COLLX_FLOAT32, COLLX_SUM, p, n, want.data());
    expect(comm != nullptr &&
               collx_allreduce(COLLX_IN_PLACE, v.data(), n, COLLX_FLOAT32, COLLX_SUM, comm) ==
                   COLLX_SUCCESS && v == want,
           what + ": 1.2 MB summed");
    if (comm != nullptr) expect(collx_comm_destroy(comm) == COLLX_SUCCESS, "destroy");
    return bytes;
  };
  const size_t base = mapped_with("64K", "2"), twice_chunk = mapped_with("128K", "2"),
               more_areas = mapped_with("64K", "3");
  const bool has = where.node.local_size > 1 && (where.one_node || where.hierarchical);
  const size_t chunks = static_cast<size_t>(where.node.local_size) + 1;  // p + 1 per area
  const size_t k64 = size_t{64} << 10;
  expect(has ? base > 0 && twice_chunk - base == 2 * chunks * k64 &&
                   more_areas - base == chunks * k64
             : base == 0 && twice_chunk == 0 && more_areas == 0,
         "segment bytes: " + std::to_string(base) + " at (64K, 2), " +
             std::to_string(twice_chunk) + " at (128K, 2), " + std::to_string(more_areas) +
             " at (64K, 3), for " + std::to_string(where.node.local_size) + " ranks on the node");
}

// SIGNAL_STORM_US: the signals, and how many arrived.
std::atomic<long> g_signals{0};
void on_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }
bool start_signal_storm() {
  const char* us = std::getenv("SIGNAL_STORM_US");
  if (us == nullptr) return false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // (no SA_RESTART: interrupted system calls fail with EINTR)
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  const long period = std::atol(us);
  itimerval every{{period / 1000000, period % 1000000}, {period / 1000000, period % 1000000}};
  setitimer(ITIMER_REAL, &every, nullptr);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool storm = start_signal_storm();
  static const std::string forced = std::getenv("COLLX_ALLREDUCE_ALGO") != nullptr
                                        ? std::getenv("COLLX_ALLREDUCE_ALGO") : "";
  if (!forced.empty()) g_forced = forced.c_str();
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const auto finish = [storm] {
    expect(collx_finalize() == COLLX_SUCCESS, "finalize");
    if (storm) {
      const long n = g_signals.load();
      expect(n > 0, "SIGNAL_STORM_US: signals arrived");
      if (g_rank == 0) std::printf("rank 0: %ld signals\n", n);
    }
    return mpi_finish(g_passed, g_failed);
  };
  if (collx_init() != COLLX_SUCCESS) {
    std::fprintf(stderr, "collx_init: %s\n", collx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  struct Mode {
    const char* algo;
    const char* tune;
  };
  const Mode modes[] = {
      {"recursive_doubling", nullptr},
      {"rabenseifner", nullptr},
      {"ring", nullptr},
      // Each algorithm gets a band of sizes that the matrix hits.
      {nullptr, "0-64:ring,64-4K:recursive_doubling,4K-32K:rabenseifner,32K-inf:ring"},
      {nullptr, "0-100:rabenseifner,100-inf:recursive_doubling"},
  };
  std::vector<Mode> run(std::begin(modes), std::end(modes));
  if (g_forced != nullptr) run = {{g_forced, nullptr}};  // (the others run in their own tests)
  if (argc > 3 && std::strcmp(argv[1], "--random") == 0) {  // --random SEED BATCHES
    random_orders(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)), std::atoi(argv[3]));
    shm_expectation();
    return finish();
  }
  if (argc > 1 && std::strcmp(argv[1], "--disagree") == 0) {
    disagree();
    return finish();
  }
  const Placement where = placement();
  {  // collx_comm_node: the placement COLLX_NODE gives (one node where it is unset)
    collx_comm_t c = create(MPI_COMM_WORLD, nullptr, nullptr);
    collx_comm_node_t got{-1, -1, -1, -1};
    const bool answered = c != nullptr && collx_comm_node(c, &got) == COLLX_SUCCESS;
    expect(answered && got.node == where.node.node && got.nodes == where.node.nodes &&
               got.local_rank == where.node.local_rank &&
               got.local_size == where.node.local_size,
           "collx_comm_node: node " + std::to_string(got.node) + " of " +
               std::to_string(got.nodes) + ", local rank " + std::to_string(got.local_rank) +
               " of " + std::to_string(got.local_size));
    // Where some node holds two ranks or more, the defaults take hierarchical for 1 MiB.
    const char* algo = c != nullptr ? collx_comm_algorithm(c, size_t{1} << 20) : nullptr;
    expect(!where.hierarchical || g_forced != nullptr ||
               (algo != nullptr && std::strcmp(algo, "hierarchical") == 0),
           std::string("on several nodes, 1 MiB takes ") + (algo ? algo : "(none)"));
    if (c != nullptr) expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
  }
  if (where.hierarchical && g_forced == nullptr) {
    run.push_back({"hierarchical", nullptr});
    run.push_back({nullptr,
                   "0-64:recursive_doubling,64-4K:hierarchical,4K-32K:rabenseifner,"
                   "32K-inf:hierarchical"});
  }
  for (const Mode& m : run) {
    collx_comm_t c = create(MPI_COMM_WORLD, m.algo, m.tune);
    if (c != nullptr && m.algo != nullptr) {
      const char* algo = collx_comm_algorithm(c, 1000);
      expect(algo != nullptr && std::strcmp(algo, m.algo) == 0,
             std::string("forced ") + m.algo + ", 1000 bytes take " + (algo ? algo : "(none)"));
    }
    if (c != nullptr) {
      matrix(c, MPI_COMM_WORLD, m.algo ? m.algo : m.tune);
      expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
    }
  }
  several_comms();
  nonblocking();
  random_orders(12345, 60);
  polling();
  check_mode();
  bad_config();
  segment_layout(where);
  shm_expectation();
  return finish();
}
