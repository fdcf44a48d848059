// Every algorithm over the in-process transport: 1..9 ranks x counts {0, 1, p-1, p, p+1, 1000,
// 2^15+7} over 4 KiB segments (many pipelined segments, uneven last ones) x in-place/out-of-place
// x every dtype x op, compared bitwise with the exact reference (so also bitwise identical across
// ranks); then 2^20+7 elements over the default 64 KiB segments for one or two dtype x op pairs
// of each element size (the same paths at 32 times the data: 76 pairs of them took 130 s of the
// release suite's 160).
// TEST_SMALL_MATRIX=1 (set by the sanitizer runs of tools/run-tests) makes that largest count
// 2^15+7 over 4 KiB segments too, and the ring with tiny segments leaves out its 300001 elements.
// Its name is not COLLX_*: the library rejects unknown COLLX_ variables.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algo/algo.h"
#include "algo/rank_math.h"
#include "topo/node.h"
#include "topo/topo.h"
#include "collx/collx.h"
#include "common/inproc.h"
#include "common/pattern.h"

using namespace collx;
using namespace collx::test;

namespace {

const char* const kAlgos[] = {"recursive_doubling", "rabenseifner", "ring", "shm_one_shot",
                              "shm_two_shot", "shm_cma"};

bool small_run() {
  const char* v = std::getenv("TEST_SMALL_MATRIX");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// The matrices' largest count: 2^15+7 over 4 KiB segments for every dtype x op pair; 2^20+7
// over 64 KiB segments for a few (release runs only).
constexpr size_t kPipelined = (1u << 15) + 7;
constexpr size_t kSmallSegment = 4 << 10;
size_t large_count() { return small_run() ? kPipelined : (1u << 20) + 7; }
size_t large_segment() { return small_run() ? kSmallSegment : 64 << 10; }

std::vector<size_t> counts_for(int p, size_t largest) {
  return {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p), static_cast<size_t>(p + 1),
          1000, largest};
}

struct Failure {
  std::atomic<int> count{0};
  std::string first;
  std::mutex mu;
  void add(const std::string& what) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> g(mu);
      first = what;
    }
  }
};

using DtypeOp = std::pair<collx_dtype_t, collx_op_t>;

// Runs the full matrix for one rank count, for `algos`, on the nodes `nodes` (run_ranks),
// with `extra` counts besides counts_for(p, largest); with `only`, for those dtype x op pairs.
void run_matrix(int p, size_t segment, size_t largest, const std::vector<const char*>& algos,
                const std::vector<uint64_t>& nodes = {}, const std::vector<size_t>& extra = {},
                const std::vector<DtypeOp>& only = {}) {
  std::vector<Config> configs;
  for (const char* a : algos) configs.push_back(config_for(a, segment));
  std::vector<size_t> counts = counts_for(p, largest);
  counts.insert(counts.end(), extra.begin(), extra.end());
  Failure fail;
  std::atomic<long> checks{0}, planned{0};
  std::barrier sync(p);
  std::vector<uint8_t> expected;
  run_ranks(p, configs, [&](int rank, std::vector<Comm*>& comms) {
    std::vector<uint8_t> send, recv;
    for (size_t count : counts) {
      for (collx_dtype_t d : all_dtypes()) {
        for (collx_op_t op : all_ops()) {
          if (!op_valid(d, op)) continue;
          if (!only.empty() && std::find(only.begin(), only.end(), DtypeOp{d, op}) == only.end()) {
            continue;
          }
          const size_t es = collx_dtype_size(d), bytes = count * es;
          if (rank == 0) {
            expected.resize(bytes);
            fill_expected(d, op, p, count, expected.data());
          }
          sync.arrive_and_wait();
          Reducer red;
          TCHECK(make_reducer(d, op, &red).ok());
          for (size_t a = 0; a < comms.size(); ++a) {
            // The shared-memory algorithms synchronise every chunk among all ranks: with more
            // threads than cores that is slow, so their largest count runs for p <= 4 only
            // (the test below streams large messages through a small segment at p = 8).
            const bool shm = std::strncmp(algos[a], "shm_", 4) == 0 ||
                             std::strcmp(algos[a], "hierarchical") == 0;
            const bool asked = std::find(extra.begin(), extra.end(), count) != extra.end();
            if (shm && p > 4 && count > 1000 && !asked) continue;
            for (bool in_place : {false, true}) {
              planned.fetch_add(1);
              // Buffers 0-7 bytes off malloc's alignment, differently per rank and call.
              const size_t at = (static_cast<size_t>(rank) + count + d + op + in_place) % 8;
              send.assign(at + bytes, 0);
              recv.assign(at + bytes + 64, 0xab);  // poisoned, with guard zones around the result
              uint8_t* out = recv.data() + at;
              fill_input(d, op, rank, count, in_place ? out : send.data() + at);
              const AllreduceOp o{in_place ? out : send.data() + at, out, count, red};
              const Status st = comms[a]->allreduce(o);
              const bool ok = st.ok() && (bytes == 0 || std::memcmp(out, expected.data(), bytes) == 0) &&
                              std::strcmp(algo_name(comms[a]->last_algo()), algos[a]) == 0 &&
                              std::all_of(recv.begin(), recv.begin() + static_cast<long>(at),
                                          [](uint8_t b) { return b == 0xab; }) &&
                              out[bytes] == 0xab && out[bytes + 63] == 0xab;
              checks.fetch_add(1);
              if (!ok) {
                fail.add(std::string(algos[a]) + " p=" + std::to_string(p) + " rank " +
                         std::to_string(rank) + " count " + std::to_string(count) + " " +
                         collx_dtype_name(d) + " " + collx_op_name(op) +
                         (in_place ? " in-place" : "") + (st.ok() ? "" : ": " + st.message()) +
                         ", ran " + algo_name(comms[a]->last_algo()));
              }
            }
          }
          sync.arrive_and_wait();  // rank 0 rewrites `expected` next
        }
      }
    }
  }, true, nodes);
  INFO(fail.first);
  TCHECK(fail.count.load() == 0);
  TCHECK(checks.load() == planned.load());
  const long pairs = only.empty() ? 76 : static_cast<long>(only.size());
  TCHECK(checks.load() >= static_cast<long>(p) * 6 * pairs * static_cast<long>(algos.size()) * 2);
}

}  // namespace

TEST_CASE("all algorithms, 1-9 ranks, full count x dtype x op x in-place matrix", "[matrix]") {
  for (int p = 1; p <= 9; ++p) {
    DYNAMIC_SECTION("p=" << p) {
      run_matrix(p, kSmallSegment, kPipelined, {std::begin(kAlgos), std::end(kAlgos)});
    }
  }
}

// The largest messages over the default segment: one or two pairs of each element size, each
// kind of kernel (float sum, float16 and bfloat16 through float, avg's division, integer
// min/max, product, bitwise).
TEST_CASE("all algorithms, 1-9 ranks, 2^20+7 elements for a few dtype x op pairs", "[matrix]") {
  for (int p = 1; p <= 9; ++p) {
    DYNAMIC_SECTION("p=" << p) {
      run_matrix(p, large_segment(), large_count(), {std::begin(kAlgos), std::end(kAlgos)}, {},
                 {}, {{COLLX_FLOAT32, COLLX_SUM}, {COLLX_FLOAT64, COLLX_AVG},
                      {COLLX_FLOAT16, COLLX_SUM}, {COLLX_BFLOAT16, COLLX_MAX},
                      {COLLX_INT32, COLLX_MIN}, {COLLX_UINT8, COLLX_PROD},
                      {COLLX_INT64, COLLX_BXOR}});
    }
  }
}

// Many ranks (the ring's 2p step handles beside its segments in scratch), an odd count that is
// no power of two (recursive doubling and Rabenseifner fold 3 ranks in), for a few dtype x op
// pairs (67 threads on the CI's 2 cores); the shared-memory algorithms up to 1000 elements.
// The largest count, 2^17+7, gives a rank's block of 4- and 8-byte elements several 4 KiB
// segments (2^20+7 took 18 s more and reaches no other path).
TEST_CASE("all algorithms, 67 ranks, counts x in-place for a few dtype x op pairs",
          "[matrix]") {
  run_matrix(67, kSmallSegment, small_run() ? kPipelined : (1u << 17) + 7,
             {std::begin(kAlgos), std::end(kAlgos)}, {}, {},
             {{COLLX_FLOAT64, COLLX_SUM}, {COLLX_INT32, COLLX_MAX}, {COLLX_UINT8, COLLX_PROD},
              {COLLX_BFLOAT16, COLLX_AVG}});
}

// Ranks on several pretended nodes, each node's ranks sharing memory of their own: node by
// node and round-robin, odd numbers of nodes and of ranks per node, nodes with different
// numbers of ranks: one alone on its node (owning every block: 2 + 1, 3 + 1), ranks owning
// several blocks (1 + 2 + 3, 3 + 2, 4 + 2 + 2), two ranks that meet in two groups (2 + 1 + 1,
// 4 + 2 + 2). On nodes of equal size, counts up to 1000 take the whole-message path where the
// node's ranks send at most 16 KiB so (not 1000 float64 on 3 ranks a node); 20000 and 70000
// elements always take the reduce-scatter path, through 4 KiB chunks in many epochs. Nodes of
// different sizes take the reduce-scatter path always.
TEST_CASE("hierarchical: ranks on several nodes, full count x dtype x op x in-place matrix",
          "[matrix]") {
  const std::vector<std::vector<uint64_t>> layouts = {
      {0, 0, 1, 1},       {0, 1, 0, 1},       {0, 0, 1, 1, 2, 2},
      {0, 1, 2, 0, 1, 2}, {5, 5, 5, 9, 9, 9}, {0, 0, 1},
      {1, 0, 1, 0, 1},    {0, 1, 1, 2, 2, 2}, {0, 0, 0, 1},
      {0, 0, 1, 2},       {0, 1, 0, 2, 0, 1, 0, 2}};
  for (const std::vector<uint64_t>& nodes : layouts) {
    const int p = static_cast<int>(nodes.size());
    std::string name;
    for (uint64_t n : nodes) name += std::to_string(n);
    DYNAMIC_SECTION("nodes " << name) {
      run_matrix(p, kSmallSegment, kPipelined, {"hierarchical"}, nodes, {20000, 70000});
    }
  }
}

// shm_two_shot also with each kind of store forced (COLLX_SHM_STORES; the default, auto,
// switches between them as it measures), and both with 2 and 3 areas per rank besides the
// default 4 (COLLX_SHM_AREAS: a slot is rewritten that many epochs after it was read).
TEST_CASE("shared memory with the smallest chunk: messages far larger than the segment") {
  Config streaming = config_for("shm_two_shot", 4096), cached = streaming;
  streaming.shm_stores = "streaming";
  cached.shm_stores = "cached";
  Config one_shot_2 = config_for("shm_one_shot", 4096);
  Config two_shot_2 = config_for("shm_two_shot", 4096);
  one_shot_2.shm_areas = two_shot_2.shm_areas = 2;
  Config one_shot_3 = one_shot_2, two_shot_3 = two_shot_2;
  one_shot_3.shm_areas = two_shot_3.shm_areas = 3;
  for (int p : {2, 3, 8}) {
    std::vector<Config> configs = {config_for("shm_one_shot", 4096),
                                   config_for("shm_two_shot", 4096), streaming, cached,
                                   config_for("shm_cma", 4096), one_shot_2, two_shot_2,
                                   one_shot_3, two_shot_3};
    run_ranks(p, configs, [&](int rank, std::vector<Comm*>& comms) {
      for (size_t count : {1ul, 1023ul, 1024ul, 1025ul, 100003ul}) {
        std::vector<double> in(count), out(count), exp(count);
        fill_expected(COLLX_FLOAT64, COLLX_SUM, p, count, exp.data());
        Reducer red;
        TCHECK(make_reducer(COLLX_FLOAT64, COLLX_SUM, &red).ok());
        for (Comm* c : comms) {
          for (bool in_place : {false, true}) {
            std::fill(out.begin(), out.end(), -1.0);
            fill_input(COLLX_FLOAT64, COLLX_SUM, rank, count, in_place ? out.data() : in.data());
            const Status st = c->allreduce(
                AllreduceOp{in_place ? out.data() : in.data(), out.data(), count, red});
            TCHECK(st.ok());
            TCHECK(std::memcmp(out.data(), exp.data(), count * 8) == 0);
          }
        }
      }
    });
  }
}

// Hierarchical's node steps give each of a node's blocks (one per rank on nodes of equal
// size) chunk/blocks bytes of every epoch, in whole elements: with the smallest chunk (4096)
// and more than 512 ranks on a node, an 8-byte element does not fit, which is
// COLLX_ERR_CONFIG on every rank at once (before any rank waits for another), naming the
// setting; 4-byte elements still fit, one per block per epoch. 2 pretended nodes of 513
// (threads: [many-ranks], which the TSan run of tools/run-tests leaves out).
TEST_CASE("hierarchical: a chunk too small for a node's blocks is a config error on each",
          "[many-ranks]") {
  const int p = 1026;
  const Config c = config_for("hierarchical", 4096);
  std::vector<uint64_t> nodes(p);
  for (int r = 0; r < p; ++r) nodes[static_cast<size_t>(r)] = static_cast<uint64_t>(r % 2);
  run_ranks(p, {c, c}, [&](int rank, std::vector<Comm*>& comms) {
    Reducer red64, red32;
    TCHECK(make_reducer(COLLX_FLOAT64, COLLX_SUM, &red64).ok());
    TCHECK(make_reducer(COLLX_INT32, COLLX_SUM, &red32).ok());
    std::vector<double> d(1000, 1.0);
    const Status st = comms[0]->allreduce(
        AllreduceOp{d.data(), d.data(), d.size(), red64, COLLX_FLOAT64, COLLX_SUM});
    TCHECK(st.code() == COLLX_ERR_CONFIG);
    TCHECK(st.message().find("COLLX_SHM_CHUNK=4096 is too small for 513 blocks") !=
           std::string::npos);
    TCHECK(std::all_of(d.begin(), d.end(), [](double x) { return x == 1.0; }));
    std::vector<int32_t> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = rank + static_cast<int32_t>(i);
    const Status fits = comms[1]->allreduce(
        AllreduceOp{v.data(), v.data(), v.size(), red32, COLLX_INT32, COLLX_SUM});
    TCHECK(fits.ok());
    bool ok = true;
    for (size_t i = 0; i < v.size(); ++i) {
      ok = ok && v[i] == p * (p - 1) / 2 + p * static_cast<int32_t>(i);
    }
    TCHECK(ok);
  }, true, nodes);
}

// shm_one_shot carries messages of up to 56 bytes in its flag lines (two, used by epoch
// parity) and larger ones in the slots: runs of small calls of every size around that limit,
// between large ones, so that each kind of epoch follows each kind, in both parities.
TEST_CASE("shm_one_shot: messages in the flag lines and in the slots, in any order") {
  for (int p : {2, 3, 5}) {
    std::vector<Config> configs = {config_for("shm_one_shot", 4096)};
    std::vector<size_t> bytes_seq;
    for (size_t b = 1; b <= 72; ++b) {
      bytes_seq.push_back(b);
      if (b % 5 == 0) bytes_seq.push_back(3000);
    }
    run_ranks(p, configs, [&](int rank, std::vector<Comm*>& comms) {
      for (collx_dtype_t d : {COLLX_INT8, COLLX_FLOAT16, COLLX_FLOAT32, COLLX_FLOAT64}) {
        const size_t es = collx_dtype_size(d);
        Reducer red;
        TCHECK(make_reducer(d, COLLX_SUM, &red).ok());
        for (size_t i = 0; i < bytes_seq.size(); ++i) {
          const size_t count = std::max<size_t>(1, bytes_seq[i] / es);
          const bool in_place = i % 2 == 1;
          std::vector<uint8_t> in(count * es), out(count * es + 64, 0xab), exp(count * es);
          fill_input(d, COLLX_SUM, rank, count, in_place ? out.data() : in.data());
          fill_expected(d, COLLX_SUM, p, count, exp.data());
          const Status st = comms[0]->allreduce(
              AllreduceOp{in_place ? out.data() : in.data(), out.data(), count, red});
          const bool ok = st.ok() && std::memcmp(out.data(), exp.data(), count * es) == 0 &&
                          out[count * es] == 0xab && out[count * es + 63] == 0xab;
          if (!ok) {
            std::lock_guard<std::mutex> g(catch_mutex());
            FAIL_CHECK("rank " << rank << " p=" << p << " " << collx_dtype_name(d) << " count "
                               << count << (in_place ? " in-place" : "") << ": "
                               << st.message());
          }
        }
      }
    });
  }
}

TEST_CASE("ring with tiny segments: many pipelined messages, uneven last segments") {
  // At 2 ranks, 300001 elements would be 100001 messages each way: more than the 16 bits of a
  // step (which the in-process transport keeps, as UCX's tags do), so the ring takes larger
  // segments there instead of letting steps wrap. Not under TEST_SMALL_MATRIX=1: those 100001
  // messages took 40 s under ASan and 51 s under TSan.
  for (int p : {2, 3, 5}) {
    std::vector<Config> configs = {config_for("ring", 12)};  // 3 float32 per segment
    run_ranks(p, configs, [&](int rank, std::vector<Comm*>& comms) {
      std::vector<size_t> counts = {1, 5, 7, 1001, 4099};
      if (p == 2 && !small_run()) counts.push_back(300001);
      for (size_t count : counts) {
        std::vector<float> in(count), out(count), exp(count);
        fill_input(COLLX_FLOAT32, COLLX_SUM, rank, count, in.data());
        fill_expected(COLLX_FLOAT32, COLLX_SUM, p, count, exp.data());
        Reducer red;
        TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
        const Status st = comms[0]->allreduce(AllreduceOp{in.data(), out.data(), count, red});
        TCHECK(st.ok());
        TCHECK(std::memcmp(out.data(), exp.data(), count * 4) == 0);
      }
    });
  }
}

namespace {

// A float32 avg whose division counts the elements this thread (rank) divides.
thread_local size_t t_divided = 0;
FinalizeFn g_f32_divide = nullptr;
void counting_divide(void* buf, size_t n, int ranks) {
  t_divided += n;
  g_f32_divide(buf, n, ranks);
}

}  // namespace

// avg: the algorithms that give each element one owner divide it there only, once, before
// the others get it (1/p of the message per rank); where every rank finishes every element,
// each divides its own copy, but a rank that sits out of recursive doubling's steps divides
// nothing (it gets the result divided).
TEST_CASE("avg: each element is divided once, by its owner, where it has one") {
  const int p = 3;
  const size_t count = 3001;
  Reducer avg;
  REQUIRE(make_reducer(COLLX_FLOAT32, COLLX_AVG, &avg).ok());
  g_f32_divide = avg.finalize;  // before the rank threads start
  avg.finalize = counting_divide;
  std::vector<Config> configs;
  for (const char* a : kAlgos) configs.push_back(config_for(a, 4096));  // several chunks
  std::vector<std::vector<size_t>> divided(configs.size(), std::vector<size_t>(p));
  std::vector<float> expected(count);
  fill_expected(COLLX_FLOAT32, COLLX_AVG, p, count, expected.data());
  run_ranks(p, configs, [&](int rank, std::vector<Comm*>& comms) {
    for (size_t k = 0; k < comms.size(); ++k) {
      std::vector<float> v(count);
      fill_input(COLLX_FLOAT32, COLLX_AVG, rank, count, v.data());
      t_divided = 0;
      const Status st = comms[k]->allreduce(AllreduceOp{v.data(), v.data(), count, avg});
      TCHECK(st.ok());
      TCHECK(std::memcmp(v.data(), expected.data(), count * 4) == 0);
      divided[k][static_cast<size_t>(rank)] = t_divided;
    }
  });
  for (size_t k = 0; k < configs.size(); ++k) {
    const std::string algo = kAlgos[k];
    const std::vector<size_t>& d = divided[k];
    INFO(algo << " divided " << d[0] << ", " << d[1] << ", " << d[2]);
    if (algo == "recursive_doubling") {  // rank 0 sits out (the fold), the others divide all
      CHECK((d[0] == 0 && d[1] == count && d[2] == count));
    } else if (algo == "shm_one_shot") {
      CHECK((d[0] == count && d[1] == count && d[2] == count));
    } else {
      CHECK(d[0] + d[1] + d[2] == count);
      for (int r = 0; r < p; ++r) CHECK(d[static_cast<size_t>(r)] <= count / 2 + 1);
      if (algo != "rabenseifner") {  // one block of 3 each (Rabenseifner: of 2, on 2 ranks)
        for (int r = 0; r < p; ++r) CHECK(d[static_cast<size_t>(r)] <= count / 3 + 4);
      }
    }
  }
}

TEST_CASE("rabenseifner: with ranks numbered node by node, the smallest ranges cross nodes") {
  // Runs the algorithm on p threads and counts the bytes each sends to ranks of other "nodes"
  // (c consecutive ranks each). Nearest partner first, a rank's reduce-scatter sends
  // B(1/c - 1/q) across nodes and its allgather as much again, where MPICH's farthest-first
  // order sends B(1 - c/q) each way: c times as much. The total stays 2B(1 - 1/q).
  for (const std::pair<int, int>& pc : {std::pair{8, 2}, std::pair{8, 4}, std::pair{16, 4}}) {
    const int p = pc.first, c = pc.second;
    const size_t count = static_cast<size_t>(p) * 1000;  // B = 4000p bytes, p blocks of 4000
    const double b = static_cast<double>(count * 4);
    InprocFabric fabric(p);
    std::vector<std::thread> ranks;
    for (int r = 0; r < p; ++r) {
      ranks.emplace_back([&, r] {
        InprocTransport t(fabric, r);
        Scratch scratch;
        Reducer red;
        TCHECK(make_reducer(COLLX_INT32, COLLX_SUM, &red).ok());
        std::vector<int32_t> in(count), out(count), exp(count);
        fill_input(COLLX_INT32, COLLX_SUM, r, count, in.data());
        fill_expected(COLLX_INT32, COLLX_SUM, p, count, exp.data());
        t.begin_op(1, 60, 5);
        const AllreduceArgs args{t, red, reinterpret_cast<const uint8_t*>(in.data()),
                                 reinterpret_cast<uint8_t*>(out.data()), count, scratch, 64 << 10};
        const Status st = t.end_op(allreduce_rabenseifner(args));
        TCHECK(st.ok());
        TCHECK(out == exp);
      });
    }
    for (auto& th : ranks) th.join();
    INFO("p " << p << ", c " << c);
    for (int r = 0; r < p; ++r) {
      uint64_t across = 0, all = 0;
      for (int d = 0; d < p; ++d) {
        all += fabric.bytes_sent(r, d);
        if (d / c != r / c) across += fabric.bytes_sent(r, d);
      }
      CHECK(static_cast<double>(all) == 2 * b * (1 - 1.0 / p));
      CHECK(static_cast<double>(across) == 2 * b * (1.0 / c - 1.0 / p));
      CHECK(static_cast<double>(across) * c == 2 * b * (1 - static_cast<double>(c) / p));
    }
  }
}

namespace {

// A reducer that counts the elements this thread (rank) reduces, around int32 sum.
thread_local size_t t_reduced = 0;
ReduceFn g_int32_sum = nullptr;
void counting_sum(void* dst, const void* a, const void* b, size_t n) {
  t_reduced += n;
  g_int32_sum(dst, a, b, n);
}

// Around int32 sum too: throws std::bad_alloc at this thread's first call while t_throw is set
// (as a container of the library's would where memory runs out).
thread_local bool t_throw = false;
void throwing_sum(void* dst, const void* a, const void* b, size_t n) {
  if (std::exchange(t_throw, false)) throw std::bad_alloc();
  g_int32_sum(dst, a, b, n);
}

// One in-place int32 sum of `count` elements, hierarchical with 4 KiB chunks, on ranks placed
// on `nodes`, every result checked: the fabrics (bytes sent) and what each rank reduced.
struct HierarchicalRun {
  std::vector<std::unique_ptr<InprocFabric>> fabrics;
  std::vector<size_t> reduced;
};
HierarchicalRun hierarchical_int32_sum(const std::vector<uint64_t>& nodes, size_t count,
                                       const std::string& tune_across = "") {
  const int p = static_cast<int>(nodes.size());
  Reducer sum;
  REQUIRE(make_reducer(COLLX_INT32, COLLX_SUM, &sum).ok());
  g_int32_sum = sum.reduce;  // before the rank threads start
  HierarchicalRun run;
  run.reduced.resize(nodes.size());
  Config config = config_for("hierarchical", 4096);
  config.tune_across = tune_across;
  run.fabrics = run_ranks(p, {config},
                          [&](int rank, std::vector<Comm*>& comms) {
    Reducer red = sum;
    red.reduce = counting_sum;
    std::vector<int32_t> v(count), exp(count);
    fill_input(COLLX_INT32, COLLX_SUM, rank, count, v.data());
    fill_expected(COLLX_INT32, COLLX_SUM, p, count, exp.data());
    t_reduced = 0;
    const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), count, red});
    TCHECK(st.ok());
    TCHECK(v == exp);
    run.reduced[static_cast<size_t>(rank)] = t_reduced;
  }, true, nodes);
  return run;
}

}  // namespace

TEST_CASE("hierarchical: only the ranks of one local rank talk across nodes, n/c bytes each") {
  // 8 ranks, 2 nodes of 4 (node by node and round-robin). Within a node everything goes
  // through shared memory: no rank sends a byte to a rank of its own node. Across, with 2
  // nodes, every point-to-point algorithm sends its whole buffer once: a rank sends its block
  // (n/4) to the rank of its local rank on the other node, or the whole message where the
  // node's four ranks send at most 16 KiB so (one-shot path).
  for (const std::vector<uint64_t>& nodes :
       {std::vector<uint64_t>{0, 0, 0, 0, 1, 1, 1, 1}, std::vector<uint64_t>{0, 1, 0, 1, 0, 1, 0, 1}}) {
    for (size_t count : {size_t{1000}, size_t{40003}}) {
      const int p = 8;
      const HierarchicalRun run = hierarchical_int32_sum(nodes, count);
      const InprocFabric& f = *run.fabrics[0];
      INFO("count " << count << ", round-robin " << (nodes[1] == 1));
      for (int r = 0; r < p; ++r) {
        const NodeLayout l = node_layout(nodes, r);
        const int partner = l.groups.at(0).ranks[static_cast<size_t>(1 - l.node_index)];
        const size_t whole = count * 4, mine = block(count, 4, l.local_rank).len * 4;
        for (int d = 0; d < p; ++d) {
          CHECK(f.bytes_sent(r, d) == (d != partner ? 0 : 4 * whole <= (16 << 10) ? whole : mine));
        }
      }
    }
  }
}

TEST_CASE("hierarchical: a large node beside a small one reduces on all its ranks") {
  // 4 + 1 ranks: 4 blocks, one per rank of the large node, all four owned by the rank alone
  // on its node. Within the large node an owner reduces its block from 4 inputs (3 passes);
  // across, each pair allreduces one block (at most one more pass). So every rank of the
  // large node reduces between 3 and 4 quarters of the message, where one rank reducing
  // everything would reduce 3 wholes.
  const size_t count = 40000;
  const std::vector<size_t> reduced = hierarchical_int32_sum({0, 0, 1, 0, 0}, count).reduced;
  for (int r : {0, 1, 3, 4}) {
    INFO("rank " << r << " reduced " << reduced[static_cast<size_t>(r)]);
    CHECK(reduced[static_cast<size_t>(r)] >= 3 * count / 4);
    CHECK(reduced[static_cast<size_t>(r)] <= 4 * count / 4);
  }
  CHECK(reduced[2] <= count);  // alone on its node: only the four blocks across
}

TEST_CASE("hierarchical: beside a rank alone on its node, small messages cross through one rank") {
  // 4 + 1 ranks (4 blocks; rank 2 alone owns all four). A message of at most 16 KiB takes one
  // block: only local rank 0 of each node (ranks 0 and 2) talk across, the whole message each
  // way; a larger one crosses in four blocks, rank 2 sending each to its owner.
  for (size_t count : {size_t{1000}, size_t{40000}}) {
    const HierarchicalRun run = hierarchical_int32_sum({0, 0, 1, 0, 0}, count);
    const InprocFabric& f = *run.fabrics[0];
    INFO("count " << count);
    const bool small = count * 4 <= (16 << 10);
    const int local[] = {0, 1, -1, 2, 3};  // local ranks on node 0
    for (int d : {0, 1, 3, 4}) {
      const size_t mine = block(count, 4, static_cast<size_t>(local[d])).len * 4;
      CHECK(f.bytes_sent(2, d) == (small ? (d == 0 ? count * 4 : 0) : mine));
      CHECK(f.bytes_sent(d, 2) == f.bytes_sent(2, d));
      for (int e : {0, 1, 3, 4}) CHECK(f.bytes_sent(d, e) == 0);
    }
  }
}

TEST_CASE("hierarchical: COLLX_TUNE_ACROSS picks the step between nodes by its bytes") {
  // 4 nodes of 2, 40000 int32: each block (80000 bytes) crosses the nodes by the algorithm
  // the table gives for 80000 bytes. Recursive doubling sends the whole block in each of its
  // 2 steps, the ring 2 (N-1)/N of it; the ranges around the block's size must not matter.
  const std::vector<uint64_t> nodes = {0, 0, 1, 1, 2, 2, 3, 3};
  const size_t count = 40000, block_bytes = count * 4 / 2;
  const struct {
    const char* tune;
    size_t sent;  // by rank 0 across nodes
  } cases[] = {{"", block_bytes * 3 / 2},  // the default for 4 nodes at 80000 B: rabenseifner
               {"0-inf:recursive_doubling", 2 * block_bytes},
               {"0-78K:recursive_doubling,78K-79K:rabenseifner,79K-inf:ring", block_bytes * 3 / 2},
               {"0-78K:ring,78K-inf:recursive_doubling", 2 * block_bytes}};
  for (const auto& c : cases) {
    INFO("COLLX_TUNE_ACROSS=" << c.tune);
    const HierarchicalRun run = hierarchical_int32_sum(nodes, count, c.tune);
    size_t sent = 0;
    for (int d = 2; d < 8; ++d) sent += run.fabrics[0]->bytes_sent(0, d);
    CHECK(sent == c.sent);
    CHECK(run.fabrics[0]->bytes_sent(0, 1) == 0);
  }
  // Anything but a point-to-point algorithm cannot run between nodes; a malformed table
  // names the variable.
  Config config = config_for("hierarchical");
  for (const char* bad : {"0-inf:shm_two_shot", "0-inf:hierarchical", "0-1K:ring"}) {
    config.tune_across = bad;
    Selection sel;
    const Status st = make_across_selection(config, 4, &sel);
    CHECK(st.code() == COLLX_ERR_CONFIG);
    CHECK(st.message().find("COLLX_TUNE_ACROSS") != std::string::npos);
  }
  config.tune_across = "0-1K:ring,1K-inf:rabenseifner";
  Selection sel;
  REQUIRE(make_across_selection(config, 4, &sel).ok());
  CHECK(sel.to_string() == "0-1K:ring,1K-inf:rabenseifner");
}

TEST_CASE("results are reproducible from run to run") {
  // Values that make float sums order-dependent: the same algorithm and rank count must still
  // give the same bits every time, on every rank. Hierarchical on 3 nodes of 2, round-robin,
  // with a count on its one-shot path and one on its reduce-scatter path, and on nodes of 3, 1
  // and 1 (three blocks, whose three groups all hold both small nodes' ranks): every group
  // across nodes must reduce the nodes' sums in the same order.
  struct Case {
    const char* algo;
    size_t count;
    std::vector<uint64_t> nodes;
  };
  std::vector<Case> cases;
  for (const char* algo : kAlgos) cases.push_back({algo, 3001, std::vector<uint64_t>(5)});
  for (size_t count : {size_t{1001}, size_t{30001}}) {
    cases.push_back({"hierarchical", count, {0, 1, 2, 0, 1, 2}});
  }
  cases.push_back({"hierarchical", 30001, {0, 1, 0, 2, 0}});  // 3 + 1 + 1
  for (const Case& c : cases) {
    const char* algo = c.algo;
    const size_t count = c.count;
    const int p = static_cast<int>(c.nodes.size());
    std::vector<std::vector<float>> runs;
    std::mutex mu;
    for (int run = 0; run < 3; ++run) {
      run_ranks(p, {config_for(algo, 1024)}, [&](int rank, std::vector<Comm*>& comms) {
        std::vector<float> v(count);
        for (size_t i = 0; i < count; ++i) v[i] = 1.0f / static_cast<float>(i + 1 + rank * 7) * (rank % 2 ? 1e7f : 1.f);
        Reducer red;
        TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
        const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), count, red});
        TCHECK(st.ok());
        std::lock_guard<std::mutex> g(mu);
        runs.push_back(v);
      }, true, c.nodes);
    }
    INFO(algo << ", count " << count);
    for (const auto& r : runs) TCHECK(std::memcmp(r.data(), runs[0].data(), count * 4) == 0);
  }
}

TEST_CASE("a rank that never arrives gives a timeout naming the peer and step") {
  for (const char* algo : {"ring", "shm_one_shot", "shm_two_shot", "shm_cma"}) {
  INFO(algo);
  Config c = config_for(algo);
  c.timeout_s = 0.3;
  run_ranks(2, {c}, [&](int rank, std::vector<Comm*>& comms) {
    if (rank == 1) return;  // never calls
    std::vector<float> v(100, 1.f);
    Reducer red;
    TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
    const auto start = std::chrono::steady_clock::now();
    const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), 100, red});
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    TCHECK(st.code() == COLLX_ERR_TIMEOUT);
    // The deadline starts at the first wait that finds nothing for 1 ms: never early, and
    // late by little more than that millisecond (the bound leaves room for a loaded machine).
    TCHECK(waited >= 0.3);
    TCHECK(waited < 2.3);
    TCHECK(st.message().find("rank 1") != std::string::npos);
    TCHECK(st.message().find("step") != std::string::npos);
    // The communicator is unusable afterwards, and says why.
    const Status again = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), 100, red});
    TCHECK(again.code() == COLLX_ERR_COMM_FAILED);
  });
  }
}

TEST_CASE("hierarchical: a rank that never arrives is named by its node and across nodes") {
  // Two nodes of two, round-robin: rank 3 shares node 1 with rank 1, and local rank 1 with
  // rank 1 across. Rank 1 waits for it in the node's segment and names it by its rank in the
  // communicator, not in the node; ranks 0 and 2 wait across nodes for ranks 1 and 3, within
  // the call's deadline (the step across nodes has no deadline of its own).
  for (size_t count : {size_t{100}, size_t{50000}}) {  // whole-message and block paths
    INFO("count " << count);
    Config c = config_for("hierarchical");
    c.timeout_s = 0.3;
    run_ranks(4, {c}, [&](int rank, std::vector<Comm*>& comms) {
      if (rank == 3) return;  // never calls
      std::vector<float> v(count, 1.f);
      Reducer red;
      TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
      const auto start = std::chrono::steady_clock::now();
      const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), count, red});
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      TCHECK(st.code() == COLLX_ERR_TIMEOUT);
      TCHECK(waited < 0.3 + 2);  // as loose as the test above
      TCHECK(st.message().find("rank " + std::to_string(rank) + ":") == 0);
      if (rank == 1) {
        INFO(st.message());
        TCHECK(st.message().find("waiting for rank 3 to copy its input in") != std::string::npos);
      }
    }, true, {0, 1, 0, 1});
  }
}

TEST_CASE("ranks that disagree on the count get a mismatch error, not corruption") {
  Config c = config_for("recursive_doubling");
  c.timeout_s = 1;
  run_ranks(2, {c}, [&](int rank, std::vector<Comm*>& comms) {
    const size_t count = rank == 0 ? 10 : 20;
    std::vector<float> v(count + 16, 1.f);
    Reducer red;
    TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
    const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), count, red});
    TCHECK(!st.ok());
    for (size_t i = count; i < v.size(); ++i) TCHECK(v[i] == 1.f);  // nothing written past the end
  });
}

// The shared-memory algorithms compare every rank's call (count, dtype, op) in its first epoch
// (algo/shm_sync.h): a rank that differs in any of them is a mismatch on every rank, naming
// both calls, with nothing written past the count; before, they reduced unrelated bytes and
// returned success. Messages in the flag lines (2 elements), in the slots, over several
// epochs (a 4 KiB chunk), read across processes' memory (shm_cma).
TEST_CASE("shared memory: ranks whose calls differ all get a mismatch naming both calls") {
  struct Call {
    size_t count;
    collx_dtype_t dtype;
    collx_op_t op;
  };
  for (const char* algo : {"shm_one_shot", "shm_two_shot", "shm_cma"}) {
    for (size_t n : {size_t{2}, size_t{1000}, size_t{5000}}) {
      for (const Call odd : {Call{n + 1, COLLX_FLOAT32, COLLX_SUM}, Call{n, COLLX_INT32, COLLX_SUM},
                             Call{n, COLLX_FLOAT32, COLLX_MAX}}) {
        Config c = config_for(algo, 4096);
        c.shm_chunk = 4096;
        c.timeout_s = 5;
        const int p = 3;
        run_ranks(p, {c}, [&](int rank, std::vector<Comm*>& comms) {
          const Call mine = rank == 1 ? odd : Call{n, COLLX_FLOAT32, COLLX_SUM};
          std::vector<float> v(mine.count + 16, 1.f);
          Reducer red;
          TCHECK(make_reducer(mine.dtype, mine.op, &red).ok());
          const Status st = comms[0]->allreduce(
              AllreduceOp{v.data(), v.data(), mine.count, red, mine.dtype, mine.op});
          const std::string other = rank == 1 ? "rank 0" : "rank 1";
          const bool ok =
              st.code() == COLLX_ERR_MISMATCH &&
              st.message().find("comparing calls with " + other) != std::string::npos &&
              st.message().find("every rank must pass the same count") != std::string::npos &&
              std::all_of(v.begin() + static_cast<long>(mine.count), v.end(),
                          [](float x) { return x == 1.f; });
          std::lock_guard<std::mutex> g(catch_mutex());
          INFO(algo << " n=" << n << " rank " << rank << ": " << st.message());
          CHECK(ok);
        });
      }
    }
  }
}

TEST_CASE("non-blocking operations complete in posting order, waited in any order") {
  const int p = 3;
  run_ranks(p, {config_for("rabenseifner")}, [&](int rank, std::vector<Comm*>& comms) {
    const int n = 50;
    std::vector<std::vector<int32_t>> bufs(n);
    std::vector<Request*> reqs(n);
    Reducer red;
    TCHECK(make_reducer(COLLX_INT32, COLLX_SUM, &red).ok());
    for (int i = 0; i < n; ++i) {
      bufs[i].resize(static_cast<size_t>(i) * 37 + 1);
      fill_input(COLLX_INT32, COLLX_SUM, rank, bufs[i].size(), bufs[i].data());
      const Status st = comms[0]->iallreduce(
          AllreduceOp{bufs[i].data(), bufs[i].data(), bufs[i].size(), red}, &reqs[i]);
      TCHECK(st.ok());
    }
    for (int i = n - 1; i >= 0; --i) {
      while (!reqs[i]->done.load()) std::this_thread::yield();
      TCHECK(reqs[i]->result.ok());
      std::vector<int32_t> exp(bufs[i].size());
      fill_expected(COLLX_INT32, COLLX_SUM, p, exp.size(), exp.data());
      TCHECK(bufs[i] == exp);
      delete reqs[i];
    }
  });
}

namespace {

// k-th of a sequence of int32 sums posted by the tests below: sizes 1 - 4001 elements.
struct Posted {
  std::vector<int32_t> buf;
  Request* req = nullptr;
};

std::vector<Posted> post_sums(Comm& c, int rank, int n) {
  Reducer red;
  TCHECK(make_reducer(COLLX_INT32, COLLX_SUM, &red).ok());
  std::vector<Posted> ops(n);
  for (int k = 0; k < n; ++k) {
    ops[k].buf.resize(static_cast<size_t>(k) * 1000 + 1);
    fill_input(COLLX_INT32, COLLX_SUM, rank, ops[k].buf.size(), ops[k].buf.data());
    const Status st =
        c.iallreduce(AllreduceOp{ops[k].buf.data(), ops[k].buf.data(), ops[k].buf.size(), red},
                     &ops[k].req);
    TCHECK(st.ok());
  }
  return ops;
}

// Polls (never waits, never tests) until every request is done or 20 s pass; checks results.
void expect_done_without_waiting(std::vector<Posted>& ops, int p) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto all_done = [&] {
    for (const Posted& o : ops) {
      if (!o.req->done.load()) return false;
    }
    return true;
  };
  while (!all_done() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  TCHECK(all_done());
  for (Posted& o : ops) {
    Comm::wait(o.req);  // returns at once when done (and makes a failure above finish)
    TCHECK(o.req->result.ok());
    std::vector<int32_t> exp(o.buf.size());
    fill_expected(COLLX_INT32, COLLX_SUM, p, exp.size(), exp.data());
    TCHECK(o.buf == exp);
    delete o.req;
  }
}

constexpr auto kNever = std::chrono::hours(1);  // a watch period that never ends in a test

// Recursive doubling with every operation deferred (posted, started only when something asks).
Config deferred_config() {
  Config c = config_for("recursive_doubling");
  c.async_min = size_t{1} << 40;
  return c;
}

// Neither the worker's watch period nor a test's grace period ends: the worker starts nothing,
// so only the rank's own tests and waits (and a nudge) start its operations.
void worker_starts_nothing(Comm& comm) {
  comm.set_watch_period(kNever);
  comm.set_test_grace(kNever);
}

// collx_test in a loop (what it does before it yields), for at most 20 s.
void test_until_done(Request* r) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!r->done.load() && std::chrono::steady_clock::now() < end) Comm::nudge(r);
}

}  // namespace

TEST_CASE("non-blocking: operations of at least COLLX_ASYNC_MIN start at once on the worker") {
  Config c = config_for("recursive_doubling");
  c.async_min = 0;
  run_ranks(3, {c}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(kNever);  // so only an immediate start completes them
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    expect_done_without_waiting(ops, 3);
  });
}

// The threads of this process named `name`, with their scheduling policies.
static std::vector<int> thread_policies(const std::string& name) {
  std::vector<int> policies;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return policies;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string got;
    if (std::getline(comm, got) && got == name) {
      policies.push_back(sched_getscheduler(static_cast<pid_t>(std::atoi(e->d_name))));
    }
  }
  closedir(dir);
  return policies;
}

TEST_CASE("non-blocking: the worker runs under SCHED_BATCH (woken, it preempts no thread)") {
  Config c = config_for("recursive_doubling");
  c.async_min = 0;
  std::barrier<> workers_live(3);  // (a rank's worker ends with its communicator)
  run_ranks(3, {c}, [&](int rank, std::vector<Comm*>& comms) {
    std::vector<Posted> ops = post_sums(*comms[0], rank, 1);
    expect_done_without_waiting(ops, 3);
    workers_live.arrive_and_wait();
    if (rank == 0) {
      // Each rank's worker names itself and sets its policy first thing: wait for all three.
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      std::vector<int> policies = thread_policies("collx-worker");
      while (std::count(policies.begin(), policies.end(), SCHED_BATCH) < 3 &&
             std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        policies = thread_policies("collx-worker");
      }
      TCHECK(policies == std::vector<int>(3, SCHED_BATCH));
    }
    workers_live.arrive_and_wait();
  });
}

TEST_CASE("non-blocking: deferred operations start within the watch period if nobody waits") {
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    expect_done_without_waiting(ops, 3);
  });
}

TEST_CASE("non-blocking: the watch period is 10 ms where a node has more ranks than CPUs") {
  CHECK(watch_period_for(1, 1) == kWatch);
  CHECK(watch_period_for(2, 2) == kWatch);
  CHECK(watch_period_for(3, 2) == kCrowdedWatch);
  CHECK(watch_period_for(3, 0) == kWatch);  // CPUs not known
  CHECK(watch_period_for(3, -1) == kWatch);
  CHECK(kCrowdedWatch == std::chrono::milliseconds(10));
  // Communicators take it at creation, from their node's ranks and the CPUs they can run on.
  const int cpus = usable_cpus();
  REQUIRE(cpus >= 1);
  REQUIRE(cpus <= static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  const int p = cpus + 1;
  run_ranks(p, {deferred_config()}, [&](int, std::vector<Comm*>& comms) {
    TCHECK(comms[0]->watch_period() == kCrowdedWatch);  // one node
  });
  std::vector<uint64_t> nodes(p, 0);
  nodes[p - 1] = 1;  // cpus ranks on node 0, one on node 1
  run_ranks(p, {deferred_config()}, [&](int, std::vector<Comm*>& comms) {
    TCHECK(comms[0]->watch_period() == kWatch);
  }, true, nodes);
}

TEST_CASE("non-blocking: a communicator of some of a node's processes counts them all") {
  // (A fresh counter: the process's own, node_processes(), is the real communicators'.)
  NodeProcesses seen;
  CHECK(seen.note({7, 7, 7}) == 1);  // ranks that are threads of one process
  CHECK(seen.note({5, 6, 7}) == 3);
  CHECK(seen.note({6, 5}) == 3);  // two of those three: the node has three
  CHECK(seen.note({}) == 3);
  CHECK(seen.note({1, 2, 3, 4, 4}) == 4);
  CHECK(seen.note_processes(6) == 6);  // the preload's count of MPI_COMM_WORLD's at MPI_Init
  CHECK(seen.note({1, 2}) == 6);
  CHECK(seen.note_processes(2) == 6);
  CHECK(&node_processes() == &node_processes());
}

TEST_CASE("usable CPUs: online, within the control group's CPU set") {
  CHECK(count_cpu_list("0-3,8,10-11\n") == 7);
  CHECK(count_cpu_list("5") == 1);
  CHECK(count_cpu_list("") == 0);
  CHECK(count_cpu_list("3-1") == 0);
  CHECK(count_cpu_list("0-3,x") == 0);
  // A made-up /sys/fs/cgroup: the process's group is /job/step, as /proc/self/cgroup names it.
  char made[] = "/tmp/collx-cgroup-XXXXXX";
  REQUIRE(mkdtemp(made) != nullptr);
  const std::filesystem::path top(made);
  const auto put = [&](const std::string& file, const std::string& text) {
    std::filesystem::create_directories((top / file).parent_path());
    std::ofstream(top / file) << text;
  };
  const std::string v2 = "0::/job/step\n";
  CHECK(usable_cpus(64, made, v2) == 64);  // no such files: the online CPUs
  CHECK(usable_cpus(0, made, v2) == 0);    // not known
  put("job/cpuset.cpus.effective", "0-7\n");  // the step's own is missing: its parent's
  CHECK(usable_cpus(64, made, v2) == 8);
  put("job/step/cpuset.cpus.effective", "2-5\n");
  CHECK(usable_cpus(64, made, v2) == 4);
  CHECK(usable_cpus(0, made, v2) == 4);
  CHECK(usable_cpus(2, made, v2) == 2);  // never more than the online CPUs
  put("job/step/cpu.max", "100000 100000\n");  // a quota of 1 CPU does not count
  CHECK(usable_cpus(64, made, v2) == 4);
  CHECK(usable_cpus(64, made, "0::/\n") == 64);  // the top has no file
  // Version 1: a tree per controller; inside a container the host's path is missing, and the
  // container's own group is the top.
  const std::string v1 = "5:cpuset:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n";
  put("cpuset/cpuset.effective_cpus", "0-5\n");
  CHECK(usable_cpus(64, made, v1) == 6);
  put("cpuset/docker/abc/cpuset.effective_cpus", "0,1,3\n");
  CHECK(usable_cpus(64, made, v1) == 3);
  CHECK(usable_cpus(64, made, "garbage\n\n") == 64);
  CHECK(usable_cpus(64, made, "0::job/step\n") == 64);  // no leading slash: the top only
  std::filesystem::remove_all(top);
}

namespace {
std::atomic<int> g_progress_calls{0};
void count_progress_call() { g_progress_calls.fetch_add(1); }
}  // namespace

TEST_CASE("non-blocking: a thread waiting for the worker runs its progress once per watch period") {
  // Where a node's ranks outnumber its CPUs (kCrowdedWatch), a waiting thread that woke every
  // millisecond beside its rank's polling threads let the kernel keep other ranks off a CPU
  // for seconds (docs/RELIABILITY.md): there it wakes, and runs the caller's progress hook (the
  // preload's MPI progress), once per 10 ms. One-sided: a loaded machine wakes it less often.
  const auto period = GENERATE(kWatch, kCrowdedWatch);
  CAPTURE(period.count());
  Config c = config_for("recursive_doubling");
  c.async_min = 0;  // on the worker at once
  constexpr auto kLate = std::chrono::milliseconds(200);
  g_progress_calls = 0;
  double waited = 0;  // rank 0's, in seconds
  run_ranks(2, {c}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(period);
    if (rank == 1) std::this_thread::sleep_for(kLate);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 1);
    if (rank == 0) {  // the worker takes it (else this thread would run it, polling)
      OpQueue& q = *ops[0].req->queue;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      auto taken = [&] {
        std::lock_guard<std::mutex> g(q.mu);
        return q.running && q.waiting.empty();
      };
      while (!taken() && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    }
    const OuterProgress before = set_outer_progress(rank == 0 ? count_progress_call : nullptr);
    const auto start = std::chrono::steady_clock::now();
    for (Posted& o : ops) Comm::wait(o.req);
    if (rank == 0) {
      waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    set_outer_progress(before);
    expect_done_without_waiting(ops, 2);  // done: checks the results
  });
  // Rank 0 waited about 200 ms for rank 1 (less if its own thread was held up, more on a
  // loaded machine): at most one call per period of it, and some call in a long wait.
  INFO("waited " << waited << " s, " << g_progress_calls.load() << " progress calls");
  const double periods = waited / std::chrono::duration<double>(period).count();
  CHECK(g_progress_calls.load() <= static_cast<int>(periods) + 2);
  if (periods >= 3) CHECK(g_progress_calls.load() >= 1);
}

TEST_CASE("non-blocking: collx_test's nudge starts a deferred operation on the worker") {
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(kNever);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    Comm::nudge(ops.back().req);  // the last, and so every one before it
    expect_done_without_waiting(ops, 3);
  }, shared);
}

TEST_CASE("non-blocking: above kAnnounceMaxRanks ranks on several nodes, a test hands over") {
  // Announcements would cost each test more than the hand-over: a nudge makes the operations
  // due at once (no grace period ends here, so nothing else would start them).
  run_ranks(kAnnounceMaxRanks + 1, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    worker_starts_nothing(*comms[0]);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 2);
    Comm::nudge(ops.back().req);
    expect_done_without_waiting(ops, kAnnounceMaxRanks + 1);
    TCHECK(comms[0]->ops_run_by_tests() == 0);
  }, false);
}

TEST_CASE("non-blocking: when every rank tests, the testing threads run the operations") {
  // No worker starts anything here (no watch period, no grace period ends): each operation
  // completes only if the ranks' tests find each other. Rank 1 tests the operations in
  // reverse order (testing the last one makes every one before it started).
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    worker_starts_nothing(*comms[0]);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    for (int k = 0; k < 5; ++k) {
      test_until_done(ops[rank == 1 ? 4 - k : k].req);
    }
    TCHECK(comms[0]->ops_run_by_tests() == 5);
    expect_done_without_waiting(ops, 3);
  }, shared);
}

TEST_CASE("non-blocking: a polling test runs a due operation that the worker has not started") {
  // Every operation is due at once (COLLX_ASYNC_MIN 0), but no worker takes one, as when it
  // waits for a core: the ranks' polling tests run them once every rank has started each.
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  Config c = config_for("recursive_doubling");
  c.async_min = 0;
  run_ranks(3, {c}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->hold_worker();
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    for (Posted& o : ops) test_until_done(o.req);
    TCHECK(comms[0]->ops_run_by_tests() == 5);
    expect_done_without_waiting(ops, 3);
  }, shared);
}

TEST_CASE("non-blocking: tests further apart than kPollGap leave a due operation to the worker") {
  // Between pieces of a computation a test must not run a large operation synchronously: the
  // worker would overlap it where a core is free. Held here, it starts nothing, so the
  // operation stays in progress through spaced tests; then a polling loop runs it.
  Config c = config_for("recursive_doubling");
  c.async_min = 0;
  run_ranks(3, {c}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->hold_worker();
    std::vector<Posted> ops = post_sums(*comms[0], rank, 1);
    for (int k = 0; k < 5; ++k) {
      Comm::nudge(ops[0].req);
      std::this_thread::sleep_for(kPollGap * 50);
    }
    TCHECK(!ops[0].req->done.load());
    TCHECK(comms[0]->ops_run_by_tests() == 0);
    test_until_done(ops[0].req);
    TCHECK(comms[0]->ops_run_by_tests() == 1);
    expect_done_without_waiting(ops, 3);
  });
}

TEST_CASE("non-blocking: a test says that this rank started every operation posted so far") {
  // A program that posted several tests them one after another: each test finds its operation
  // started by every rank that has tested any of them, instead of waiting for each peer to
  // come to the same one. Rank 0 tests the first operation while no peer has tested anything
  // (so its test runs nothing); then every rank tests them all.
  std::barrier<> tested(3);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    worker_starts_nothing(*comms[0]);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    if (rank == 0) {
      Comm::nudge(ops[0].req);
      TCHECK(comms[0]->said_started() == 5);
    }
    tested.arrive_and_wait();
    for (Posted& o : ops) test_until_done(o.req);
    expect_done_without_waiting(ops, 3);
  });
}

TEST_CASE("non-blocking: a rank that tests once and never again does not hold up the others") {
  // Rank 0 tests the operations once, first, then waits on the others (not on libcollx):
  // its worker must start them when the grace period ends (the watch period never does).
  // The others' tests run them at once, as rank 0 said it started them.
  std::barrier<> tested(3), finished(3);
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(kNever);
    if (rank != 0) comms[0]->set_test_grace(kNever);  // however late a peer's test comes
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    if (rank == 0) Comm::nudge(ops.back().req);
    tested.arrive_and_wait();
    if (rank != 0) {
      for (Posted& o : ops) test_until_done(o.req);
    }
    finished.arrive_and_wait();
    TCHECK(comms[0]->ops_run_by_tests() == (rank == 0 ? 0 : 5));
    expect_done_without_waiting(ops, 3);
  }, shared);
}

TEST_CASE("non-blocking: a test runs an operation that a peer's waiting thread started") {
  // Across nodes a waiting rank announces what it runs only once it has heard that a peer
  // tests (else every operation would cost it p - 1 messages for nothing): rank 0's first test
  // comes before the others wait. Where a wait comes first, its peer's test finds out when the
  // grace period ends (never, here).
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  std::barrier<> first_test(3);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    worker_starts_nothing(*comms[0]);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    if (rank == 0) Comm::nudge(ops[0].req);
    first_test.arrive_and_wait();
    for (Posted& o : ops) {
      if (rank == 0) {
        test_until_done(o.req);
      } else {
        Comm::wait(o.req);
      }
    }
    TCHECK(comms[0]->ops_run_by_tests() == (rank == 0 ? 5 : 0));
    expect_done_without_waiting(ops, 3);
  }, shared);
}

TEST_CASE("non-blocking: the collx_test call that runs the operation returns its result") {
  // Only this rank's tests can run its part of each operation here (no watch period, no grace
  // period ends, nobody waits), so exactly one collx_test call per operation runs it: that
  // call, and no later one, must return the result. Every call before it finds a peer not yet
  // started and returns COLLX_IN_PROGRESS, having run nothing.
  const bool shared = GENERATE(true, false);  // ranks on one node, or on several
  CAPTURE(shared);
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    worker_starts_nothing(*comms[0]);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int k = 0; k < 5; ++k) {
      auto handle = reinterpret_cast<collx_request_t>(ops[k].req);
      collx_status_t st = COLLX_IN_PROGRESS;
      bool ran_then_pending = false;
      while (st == COLLX_IN_PROGRESS && std::chrono::steady_clock::now() < end) {
        const uint64_t before = comms[0]->ops_run_by_tests();
        st = collx_test(&handle);
        const uint64_t ran = comms[0]->ops_run_by_tests() - before;
        if (st == COLLX_IN_PROGRESS) {
          ran_then_pending = ran_then_pending || ran != 0;
        } else {
          TCHECK(ran == 1);  // this call ran the operation and returned it
        }
      }
      TCHECK(!ran_then_pending);
      TCHECK(st == COLLX_SUCCESS);
      TCHECK(handle == nullptr);  // collx_test freed the request with its result
      std::vector<int32_t> exp(ops[k].buf.size());
      fill_expected(COLLX_INT32, COLLX_SUM, 3, exp.size(), exp.data());
      TCHECK(ops[k].buf == exp);
    }
    TCHECK(comms[0]->ops_run_by_tests() == 5);
  }, shared);
}

TEST_CASE("non-blocking: a waiting thread runs the deferred operations before its own") {
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(kNever);  // the worker never starts them
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    Comm::wait(ops[3].req);
    for (int k = 0; k < 4; ++k) TCHECK(ops[k].req->done.load());
    Comm::wait(ops[4].req);
    expect_done_without_waiting(ops, 3);
  });
}

TEST_CASE("non-blocking: an operation made due while another runs starts when that one ends") {
  // Rank 0's thread runs operation 0, which cannot end before the other ranks join it (after
  // 200 ms). Meanwhile a second thread nudges operation 4: the worker, woken, finds operation
  // 0 running. Once it ends, whoever ran it must wake the worker for 1 - 4: with a watch
  // that never ends, nothing else would start them, as rank 0 waits for nothing more.
  run_ranks(3, {deferred_config()}, [&](int rank, std::vector<Comm*>& comms) {
    comms[0]->set_watch_period(kNever);
    std::vector<Posted> ops = post_sums(*comms[0], rank, 5);
    if (rank == 0) {
      std::thread nudger([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        TCHECK(!ops[0].req->done.load());  // still running: the case this test is about
        Comm::nudge(ops[4].req);
      });
      Comm::wait(ops[0].req);
      nudger.join();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      Comm::wait(ops[4].req);
    }
    expect_done_without_waiting(ops, 3);
  });
}

TEST_CASE("non-blocking: deferred operations of two communicators waited in opposite orders") {
  // Rank 0 waits for A, then B; the others for B, then A. Each runs the one it waits for on
  // its own thread; the other one's worker starts it at the end of a watch period.
  const Config c = deferred_config();
  run_ranks(3, {c, c}, [&](int rank, std::vector<Comm*>& comms) {
    std::vector<Posted> a = post_sums(*comms[0], rank, 3);
    std::vector<Posted> b = post_sums(*comms[1], rank, 3);
    std::vector<Posted>& first = rank == 0 ? a : b;
    Comm::wait(first.back().req);
    std::vector<Posted>& second = rank == 0 ? b : a;
    Comm::wait(second.back().req);
    expect_done_without_waiting(a, 3);
    expect_done_without_waiting(b, 3);
  });
}

TEST_CASE("COLLX_CHECK: a disagreement is a mismatch on every rank, naming rank and calls") {
  for (int p : {2, 3, 5}) {
    Config c = config_for("ring");
    c.check = true;
    c.timeout_s = 5;
    run_ranks(p, {c}, [&](int rank, std::vector<Comm*>& comms) {
      std::vector<float> v(64, 1.f);
      Reducer sum, max;
      TCHECK(make_reducer(COLLX_FLOAT32, COLLX_SUM, &sum).ok());
      TCHECK(make_reducer(COLLX_FLOAT32, COLLX_MAX, &max).ok());
      // Agreement: runs normally, result exact.
      Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), 64, sum, COLLX_FLOAT32, COLLX_SUM});
      TCHECK(st.ok());
      TCHECK(v[63] == static_cast<float>(p));
      // The last rank disagrees on the count (and a count of 0 still takes part).
      const size_t count = rank == p - 1 ? 0 : 10;
      st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), count, sum, COLLX_FLOAT32, COLLX_SUM});
      TCHECK(st.code() == COLLX_ERR_MISMATCH);
      TCHECK(st.message().find("rank " + std::to_string(p - 1) + " with count 0") != std::string::npos);
      TCHECK(st.message().find("rank 0 called with count 10") != std::string::npos);
      TCHECK(v[0] == static_cast<float>(p));  // untouched
      // Rank 1 disagrees on the op; the communicator is still usable afterwards.
      const bool odd = rank == 1;
      st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), 64, odd ? max : sum, COLLX_FLOAT32,
                                           odd ? COLLX_MAX : COLLX_SUM});
      TCHECK(st.code() == COLLX_ERR_MISMATCH);
      TCHECK(st.message().find("rank 1 with count 64, float32, max") != std::string::npos);
      std::fill(v.begin(), v.end(), 2.f);
      st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), 64, sum, COLLX_FLOAT32, COLLX_SUM});
      TCHECK(st.ok());
      TCHECK(v[5] == 2.f * static_cast<float>(p));
    });
  }
}

// An exception inside an operation (std::bad_alloc) fails the communicator as a transport
// error does, without ending the process: that call is COLLX_ERR_NO_MEMORY, later ones
// COLLX_ERR_COMM_FAILED, and the receives still pending are cancelled, so nothing lands in
// the result buffer after the call returned, though the peer sends on. Rank 0 throws in its
// first reduction of the ring (with segments to come from rank 1); rank 1 times out.
TEST_CASE("an exception inside an operation fails the communicator, not the process") {
  Reducer sum;
  REQUIRE(make_reducer(COLLX_INT32, COLLX_SUM, &sum).ok());
  g_int32_sum = sum.reduce;  // before the rank threads start
  for (const char* algo : {"ring", "rabenseifner", "shm_two_shot"}) {
    Config config = config_for(algo, 4096);
    config.timeout_s = 0.5;
    std::barrier returned(2);
    run_ranks(2, {config}, [&](int rank, std::vector<Comm*>& comms) {
      const size_t count = 20000;  // 80 KB: 20 segments of 4 KiB
      std::vector<int32_t> in(count, rank + 1), out(count, -7);
      Reducer red = sum;
      red.reduce = throwing_sum;
      t_throw = rank == 0;
      const Status st = comms[0]->allreduce(AllreduceOp{in.data(), out.data(), count, red});
      const std::vector<int32_t> at_return = out;
      returned.arrive_and_wait();  // rank 1 has given up too: nothing is in flight
      std::lock_guard<std::mutex> g(catch_mutex());
      INFO(algo << ", rank " << rank << ": " << st.message());
      if (rank == 0) {
        CHECK(st.code() == COLLX_ERR_NO_MEMORY);
        CHECK(st.message().find("allreduce: out of memory") != std::string::npos);
        CHECK(out == at_return);
        const Status later = comms[0]->allreduce(AllreduceOp{in.data(), out.data(), count, sum});
        CHECK(later.code() == COLLX_ERR_COMM_FAILED);
      } else {
        CHECK(!st.ok());
      }
    });
  }
}
