// collx_osu: OSU-style allreduce latency benchmark for libcollx, with MPI_Allreduce timed on
// the same buffers in the same run (--compare-mpi).
//
//   mpiexec -n 2 collx_osu -m 4:16777216 --compare-mpi
//
// For each size, `rounds` rounds alternate a timed loop of collx_allreduce with a timed loop of
// MPI_Allreduce; each rank takes the median round, and the table shows the average over ranks
// (as OSU does), min/max over ranks with -f, bus bandwidth algbw*2(p-1)/p, MPI's latency and
// the ratio collx/MPI (below 1: libcollx is faster).
//
// --nonblocking times collx_iallreduce + collx_wait (and MPI_Iallreduce + MPI_Wait) instead,
// then, as OSU's osu_iallreduce does, the same with a computation of the pure latency's length
// between post and wait: overlap = 100 * (1 - (total - compute) / pure), clamped to 0 - 100,
// where `compute` is the time the computation took. --compute sleep: the computation sleeps
// instead of keeping its core busy (a thread that waits for its GPU, say). --batch K: each
// iteration posts K operations on K pairs of buffers, then waits for them in posting order
// (MPI: MPI_Waitall), as a framework does with its gradient buckets; the latency is a batch's.
// --poll: each operation is completed by a loop of collx_test (MPI_Test) instead of collx_wait
// (MPI_Wait, MPI_Waitall), as a program that polls between pieces of work does.
// --test-pieces N: the computation runs in N pieces, and after each piece but the last every
// posted request is tested once (collx_test, MPI_Test), as a program that drives MPI's
// progress from its computation does; then the wait (or --poll) as usual.
// --persistent (implies --nonblocking): MPI's side runs persistent requests, made once per size
// by MPI_Allreduce_init (PMPI_Allreduce_init for --compare-pmpi) and run by MPI_Start
// (MPI_Startall for a batch), as OSU's osu_allreduce_persistent does; libcollx's side is
// unchanged (collx_iallreduce).
// --rewrite (blocking only): before each call every rank writes its input again (the same
// values, one store per cache line), as a program that computes its input before each call
// does, so that the peers read data another core has just written, not data every cache
// already holds. Both libraries' loops do it; column "Rewrite(us)" is the rewrite alone,
// timed the same way, and is included in both latencies and in the ratio.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "bench_util.h"
#include "common/pattern.h"

namespace {

using collx::bench::median;

struct Options {
  size_t min_size = 4, max_size = 1 << 20;
  int iters = 1000, warmup = 100;           // sizes up to 8 KiB
  int iters_large = 100, warmup_large = 10;  // larger sizes
  int rounds = 5;
  size_t offset = 0;  // bytes past a page boundary where both buffers start
  bool full = false, validate = false, compare = false, compare_pmpi = false;
  bool nonblocking = false;
  bool sleep_compute = false;  // --compute sleep
  int batch = 1;               // --batch K
  bool poll = false;           // --poll
  int pieces = 1;              // --test-pieces N
  bool persistent = false;     // --persistent
  bool rewrite = false;        // --rewrite
  collx_dtype_t dtype = COLLX_FLOAT32;
  collx_op_t op = COLLX_SUM;
  std::string algo;
};

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [-m min:max] [-i iters] [-x warmup] [-I iters_large] [-X warmup_large]\n"
               "          [-r rounds] [-f] [-c] [-T dtype] [--op op] [--algo name] [--compare-mpi]\n"
               "          [--compare-pmpi] [--offset B] [--nonblocking] [--compute busy|sleep]\n"
               "          [--batch K] [--poll] [--test-pieces N] [--persistent] [--rewrite]\n"
               "  dtype: int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 bfloat16\n"
               "         float32 float64;  op: sum prod min max avg band bor bxor\n"
               "  --algo: recursive_doubling | rabenseifner | ring | shm_one_shot | shm_two_shot |\n"
               "         shm_cma | hierarchical\n"
               "         (default: the selection table)\n"
               "  --compare-pmpi: also time PMPI_Allreduce (PMPI_Iallreduce + PMPI_Wait with\n"
               "         --nonblocking: the MPI library itself, never intercepted); run under\n"
               "         LD_PRELOAD=libcollx_mpi.so, MPI_Allreduce is then 'MPI + libcollx\n"
               "         preload' and PMPI_Allreduce plain MPI, in the same run\n"
               "  --offset B: both buffers start B bytes past a page boundary (default 0; malloc's\n"
               "         large blocks start 16 bytes past one)\n"
               "  --nonblocking: time iallreduce + wait, and their overlap with computation\n"
               "  --compute sleep: that computation sleeps instead of keeping its core busy\n"
               "  --batch K: with --nonblocking, post K operations (K buffer pairs), then wait\n"
               "         for all; latency and overlap are a batch's\n"
               "  --poll: with --nonblocking, complete each operation with a loop of collx_test\n"
               "         (MPI_Test) instead of collx_wait (MPI_Wait or MPI_Waitall)\n"
               "  --test-pieces N: with --nonblocking, the computation in N pieces, each posted\n"
               "         request tested once after each piece but the last\n"
               "  --persistent: --nonblocking, with MPI's side through persistent requests\n"
               "         (MPI_Allreduce_init once per size, then MPI_Start or MPI_Startall)\n"
               "  --rewrite: blocking only; before each call every rank writes its input again\n"
               "         (same values), included in both latencies; the rewrite alone is shown\n",
               prog);
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "-m" && has) {
      const std::string v = argv[++i];
      const size_t c = v.find(':');
      if (c == std::string::npos) {
        o->max_size = std::strtoull(v.c_str(), nullptr, 10);
      } else {
        if (c > 0) o->min_size = std::strtoull(v.substr(0, c).c_str(), nullptr, 10);
        o->max_size = std::strtoull(v.substr(c + 1).c_str(), nullptr, 10);
      }
    } else if (a == "-i" && has) {
      o->iters = std::atoi(argv[++i]);
    } else if (a == "-x" && has) {
      o->warmup = std::atoi(argv[++i]);
    } else if (a == "-I" && has) {
      o->iters_large = std::atoi(argv[++i]);
    } else if (a == "-X" && has) {
      o->warmup_large = std::atoi(argv[++i]);
    } else if (a == "-r" && has) {
      o->rounds = std::atoi(argv[++i]);
    } else if (a == "-f") {
      o->full = true;
    } else if (a == "-c") {
      o->validate = true;
    } else if (a == "-T" && has) {
      if (!collx::bench::parse_dtype(argv[++i], &o->dtype)) return false;
    } else if (a == "--op" && has) {
      if (!collx::bench::parse_op(argv[++i], &o->op)) return false;
    } else if (a == "--algo" && has) {
      o->algo = argv[++i];
    } else if (a == "--offset" && has) {
      o->offset = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--compare-mpi") {
      o->compare = true;
    } else if (a == "--compare-pmpi") {
      o->compare = o->compare_pmpi = true;
    } else if (a == "--nonblocking") {
      o->nonblocking = true;
    } else if (a == "--compute" && has) {
      const std::string v = argv[++i];
      if (v != "busy" && v != "sleep") return false;
      o->sleep_compute = v == "sleep";
    } else if (a == "--batch" && has) {
      o->batch = std::atoi(argv[++i]);
    } else if (a == "--poll") {
      o->poll = true;
    } else if (a == "--test-pieces" && has) {
      o->pieces = std::atoi(argv[++i]);
    } else if (a == "--persistent") {
      o->persistent = o->nonblocking = true;
    } else if (a == "--rewrite") {
      o->rewrite = true;
    } else {
      return false;
    }
  }
  return o->min_size >= 1 && o->min_size <= o->max_size && o->iters > 0 && o->iters_large > 0 &&
         o->warmup >= 0 && o->warmup_large >= 0 && o->rounds > 0 && o->offset < 4096 &&
         o->batch >= 1 && o->batch <= 1024 &&
         o->pieces >= 1 && o->pieces <= 1000 && (o->batch == 1 || o->nonblocking) &&
         ((!o->poll && o->pieces == 1) || o->nonblocking) && !(o->rewrite && o->nonblocking);
}

// MPI's view of the call; null datatype where MPI has no equivalent (half types).
MPI_Datatype mpi_dtype(collx_dtype_t d) {
  switch (d) {
    case COLLX_INT8: return MPI_INT8_T;
    case COLLX_UINT8: return MPI_UINT8_T;
    case COLLX_INT16: return MPI_INT16_T;
    case COLLX_UINT16: return MPI_UINT16_T;
    case COLLX_INT32: return MPI_INT32_T;
    case COLLX_UINT32: return MPI_UINT32_T;
    case COLLX_INT64: return MPI_INT64_T;
    case COLLX_UINT64: return MPI_UINT64_T;
    case COLLX_FLOAT32: return MPI_FLOAT;
    case COLLX_FLOAT64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(collx_op_t op) {
  switch (op) {
    case COLLX_SUM: case COLLX_AVG: return MPI_SUM;  // avg: MPI has none; timed as sum
    case COLLX_PROD: return MPI_PROD;
    case COLLX_MIN: return MPI_MIN;
    case COLLX_MAX: return MPI_MAX;
    case COLLX_BAND: return MPI_BAND;
    case COLLX_BOR: return MPI_BOR;
    default: return MPI_BXOR;
  }
}


// Busy (OSU's dummy computation), or asleep, for `us` microseconds without calling MPI or
// libcollx. Returns the time it took, in microseconds.
double compute(double us, bool sleep) {
  const double start = MPI_Wtime(), end = start + us * 1e-6;
  if (sleep) {
    const auto ns = static_cast<long>(us * 1e3);
    timespec ts{ns / 1000000000, ns % 1000000000};
    nanosleep(&ts, nullptr);
  }
  while (MPI_Wtime() < end) {
  }
  return (MPI_Wtime() - start) * 1e6;
}

// compute(us) in `pieces` pieces, with test() after each piece but the last.
template <typename Test>
double compute_testing(double us, bool sleep, int pieces, Test test) {
  double computed = 0;
  for (int piece = 0; piece < pieces; ++piece) {
    computed += compute(us / pieces, sleep);
    if (piece + 1 < pieces) test();
  }
  return computed;
}

// OSU's overlap: the share of the pure communication time hidden behind the computation.
double overlap_percent(double total, double compute_us, double pure) {
  if (pure <= 0) return 0;
  return std::clamp(100.0 * (1.0 - (total - compute_us) / pure), 0.0, 100.0);
}

int fail(const char* what, collx_status_t st) { collx::bench::fail("collx_osu", what, st); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  Options o;
  if (!parse(argc, argv, &o)) {
    if (rank == 0) usage(argv[0]);
    MPI_Finalize();
    return 2;
  }
  if (!o.algo.empty()) setenv("COLLX_ALLREDUCE_ALGO", o.algo.c_str(), 1);
  if (!collx::test::op_valid(o.dtype, o.op)) {
    if (rank == 0) {
      std::fprintf(stderr, "collx_osu: op %s is not defined for %s\n", collx_op_name(o.op),
                   collx_dtype_name(o.dtype));
    }
    MPI_Finalize();
    return 2;
  }
  collx_status_t st = collx_init();
  if (st != COLLX_SUCCESS) return fail("collx_init", st);
  collx_comm_t comm = nullptr;
  st = collx_comm_create_mpi(MPI_COMM_WORLD, &comm);
  if (st != COLLX_SUCCESS) return fail("collx_comm_create", st);

  const size_t es = collx_dtype_size(o.dtype);
  if (o.offset % es != 0) {
    if (rank == 0) {
      std::fprintf(stderr, "collx_osu: --offset %zu is not a multiple of the %s size (%zu)\n",
                   o.offset, collx_dtype_name(o.dtype), es);
    }
    MPI_Finalize();
    return 2;
  }
  const MPI_Datatype mdt = mpi_dtype(o.dtype);
  const bool compare = o.compare && mdt != MPI_DATATYPE_NULL;
  if (o.compare && !compare && rank == 0) {
    std::printf("# MPI has no %s: --compare-mpi ignored\n", collx_dtype_name(o.dtype));
  }
  const size_t max_bytes = std::max(o.max_size, es);
  const size_t alloc_bytes = (o.offset + max_bytes + 4095) & ~size_t{4095};
  const int k_ops = o.batch;
  std::vector<uint8_t*> send_blocks(k_ops), recv_blocks(k_ops), sends(k_ops), recvs(k_ops);
  for (int k = 0; k < k_ops; ++k) {
    send_blocks[k] = static_cast<uint8_t*>(std::aligned_alloc(4096, alloc_bytes));
    recv_blocks[k] = static_cast<uint8_t*>(std::aligned_alloc(4096, alloc_bytes));
    if (send_blocks[k] == nullptr || recv_blocks[k] == nullptr) {
      std::fprintf(stderr, "collx_osu: out of memory for %d buffer pairs\n", k_ops);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sends[k] = send_blocks[k] + o.offset;
    recvs[k] = recv_blocks[k] + o.offset;
    std::memset(recvs[k], 0, max_bytes);
  }
  uint8_t* const send = sends[0];
  uint8_t* const recv = recvs[0];
  std::vector<uint8_t> expected(max_bytes);

  if (rank == 0) {
    std::printf("# libcollx %s allreduce latency test (OSU style)\n", collx_version_string());
    std::printf("# %d ranks, %s %s, median of %d rounds%s\n", p, collx_dtype_name(o.dtype),
                collx_op_name(o.op), o.rounds,
                !compare         ? ""
                : o.persistent  ? ", persistent MPI_Allreduce_init interleaved on the same "
                                  "buffers"
                : o.nonblocking ? ", MPI_Iallreduce interleaved on the same buffers"
                                 : ", MPI_Allreduce interleaved on the same buffers");
    if (o.nonblocking) {
      std::printf("# non-blocking: latency of iallreduce + wait; overlap with a computation as "
                  "long (OSU's osu_iallreduce)\n");
      if (k_ops > 1) {
        std::printf("# batches of %d: %d posts (separate buffers), then %d waits; latency and "
                    "overlap per batch\n",
                    k_ops, k_ops, k_ops);
      }
      if (o.poll) {
        std::printf("# completed by polling: a loop of collx_test (MPI_Test), not a wait\n");
      }
      if (o.pieces > 1) {
        std::printf("# the computation in %d pieces, each request tested after each but the "
                    "last\n",
                    o.pieces);
      }
    }
    if (o.offset != 0) std::printf("# buffers start %zu bytes past a page boundary\n", o.offset);
    if (o.rewrite) std::printf("# every rank rewrites its input before each call (both sides)\n");
    std::printf("%-10s %16s", "# Size", "Avg Latency(us)");
    if (o.full) std::printf(" %16s %16s %10s", "Min Latency(us)", "Max Latency(us)", "Iterations");
    std::printf(" %12s", "BusBW(GB/s)");
    if (compare) std::printf(" %14s %10s", "MPI Avg(us)", "collx/MPI");
    if (o.compare_pmpi) std::printf(" %14s %10s", "PMPI Avg(us)", "MPI/PMPI");
    if (o.nonblocking) std::printf(" %11s", "Overlap(%)");
    if (o.nonblocking && compare) std::printf(" %15s", "MPI Overlap(%)");
    if (o.rewrite) std::printf(" %11s", "Rewrite(us)");
    std::printf("  %-20s", "Algorithm");
    if (o.validate) std::printf(" %10s", "Validation");
    std::printf("\n");
    std::fflush(stdout);
  }

  std::vector<collx_request_t> reqs(k_ops);
  std::vector<MPI_Request> mpi_reqs(k_ops);
  int failures = 0;
  for (size_t size = o.min_size; size <= o.max_size; size *= 2) {
    const size_t count = size / es;
    if (count == 0) continue;
    const size_t bytes = count * es;
    const bool large = bytes > 8192;
    const int iters = large ? o.iters_large : o.iters;
    const int warmup = large ? o.warmup_large : o.warmup;

    for (uint8_t* s : sends) collx::test::fill_input(o.dtype, o.op, rank, count, s);
    bool valid = true;
    auto check = [&] {
      if (!o.validate) return;
      collx::test::fill_expected(o.dtype, o.op, p, count, expected.data());
      for (const uint8_t* r : recvs) {
        if (std::memcmp(r, expected.data(), bytes) != 0) valid = false;
      }
    };

    // --rewrite: every line of the input written again, with the value it holds.
    auto rewrite = [&] {
      if (o.rewrite) collx::bench::rewrite_lines(send, bytes);
    };
    // Blocking, or (--nonblocking) post, compute for `busy` µs, wait. Returns the computation's
    // time in µs.
    auto run_collx = [&](int n, double busy = 0) {
      double computed = 0;
      for (int i = 0; i < n; ++i) {
        if (!o.nonblocking) {
          rewrite();
          st = collx_allreduce(send, recv, count, o.dtype, o.op, comm);
          if (st != COLLX_SUCCESS) fail("collx_allreduce", st);
          continue;
        }
        for (int k = 0; k < k_ops; ++k) {
          st = collx_iallreduce(sends[k], recvs[k], count, o.dtype, o.op, comm, &reqs[k]);
          if (st != COLLX_SUCCESS) fail("collx_iallreduce", st);
        }
        auto test_all = [&] {
          for (int k = 0; k < k_ops; ++k) {
            if (reqs[k] == nullptr) continue;  // (a test completed it)
            st = collx_test(&reqs[k]);
            if (st != COLLX_SUCCESS && st != COLLX_IN_PROGRESS) fail("collx_test", st);
          }
        };
        if (busy > 0) computed += compute_testing(busy, o.sleep_compute, o.pieces, test_all);
        for (int k = 0; k < k_ops; ++k) {
          if (reqs[k] == nullptr) continue;
          if (o.poll) {
            while ((st = collx_test(&reqs[k])) == COLLX_IN_PROGRESS) {
            }
          } else {
            st = collx_wait(&reqs[k]);
          }
          if (st != COLLX_SUCCESS) fail(o.poll ? "collx_test" : "collx_wait", st);
        }
      }
      return computed;
    };
    // --persistent: the persistent requests of this size, for MPI_* and PMPI_*.
    std::vector<MPI_Request> persistent_mpi(k_ops, MPI_REQUEST_NULL),
        persistent_pmpi(k_ops, MPI_REQUEST_NULL);
    if (o.persistent && compare) {
      for (int k = 0; k < k_ops; ++k) {
        MPI_Allreduce_init(sends[k], recvs[k], static_cast<int>(count), mdt, mpi_op(o.op),
                           MPI_COMM_WORLD, MPI_INFO_NULL, &persistent_mpi[k]);
        if (o.compare_pmpi) {
          PMPI_Allreduce_init(sends[k], recvs[k], static_cast<int>(count), mdt, mpi_op(o.op),
                              MPI_COMM_WORLD, MPI_INFO_NULL, &persistent_pmpi[k]);
        }
      }
    }
    // The MPI library through MPI_* (under the preload: libcollx through the interposer), or
    // (`pmpi`) through PMPI_*, the library itself.
    auto run_mpi = [&](int n, double busy = 0, bool pmpi = false) {
      const auto allreduce = pmpi ? PMPI_Allreduce : MPI_Allreduce;
      const auto iallreduce = pmpi ? PMPI_Iallreduce : MPI_Iallreduce;
      const auto wait = pmpi ? PMPI_Wait : MPI_Wait;
      const auto waitall = pmpi ? PMPI_Waitall : MPI_Waitall;
      const auto test = pmpi ? PMPI_Test : MPI_Test;
      const auto start = pmpi ? PMPI_Start : MPI_Start;
      const auto startall = pmpi ? PMPI_Startall : MPI_Startall;
      MPI_Request* const ops =
          !o.persistent ? mpi_reqs.data() : pmpi ? persistent_pmpi.data() : persistent_mpi.data();
      double computed = 0;
      for (int i = 0; i < n; ++i) {
        if (!o.nonblocking) {
          rewrite();
          allreduce(send, recv, static_cast<int>(count), mdt, mpi_op(o.op), MPI_COMM_WORLD);
          continue;
        }
        if (!o.persistent) {
          for (int k = 0; k < k_ops; ++k) {
            iallreduce(sends[k], recvs[k], static_cast<int>(count), mdt, mpi_op(o.op),
                       MPI_COMM_WORLD, &ops[k]);
          }
        } else if (k_ops == 1) {
          start(&ops[0]);
        } else {
          startall(k_ops, ops);
        }
        auto test_all = [&] {
          for (int k = 0; k < k_ops; ++k) {
            int done = 0;
            test(&ops[k], &done, MPI_STATUS_IGNORE);
          }
        };
        if (busy > 0) computed += compute_testing(busy, o.sleep_compute, o.pieces, test_all);
        if (o.poll) {
          for (int k = 0; k < k_ops; ++k) {
            for (int done = 0; !done;) test(&ops[k], &done, MPI_STATUS_IGNORE);
          }
        } else if (k_ops == 1) {
          wait(&ops[0], MPI_STATUS_IGNORE);  // as osu_iallreduce
        } else {
          waitall(k_ops, ops, MPI_STATUSES_IGNORE);
        }
      }
      return computed;
    };
    auto run_pmpi = [&](int n) { run_mpi(n, 0, true); };
    run_collx(warmup);
    check();
    if (compare) run_mpi(warmup);
    if (o.compare_pmpi) run_pmpi(warmup);

    std::vector<double> lat_c, lat_m, lat_p, lat_w;
    for (int round = 0; round < o.rounds; ++round) {
      if (o.rewrite) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i) rewrite();
        lat_w.push_back((MPI_Wtime() - t0) * 1e6 / iters);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      run_collx(iters);
      lat_c.push_back((MPI_Wtime() - t0) * 1e6 / iters);
      if (compare) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        run_mpi(iters);
        lat_m.push_back((MPI_Wtime() - t0) * 1e6 / iters);
      }
      if (o.compare_pmpi) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        run_pmpi(iters);
        lat_p.push_back((MPI_Wtime() - t0) * 1e6 / iters);
      }
    }
    run_collx(1);
    check();
    // The MPI side's result too (poisoned first): under the preload it is libcollx's.
    auto check_after = [&](auto run) {
      if (!o.validate) return;
      for (uint8_t* r : recvs) std::memset(r, 0xa5, bytes);
      run(1);
      check();
    };
    if (compare) check_after([&](int n) { run_mpi(n); });
    if (o.compare_pmpi) check_after(run_pmpi);

    const double mine = median(lat_c), mine_mpi = compare ? median(lat_m) : 0;
    // --nonblocking: each rank computes for its own pure latency, as OSU does; the overlap is
    // the median over rounds.
    double overlap = 0, overlap_mpi = 0;
    if (o.nonblocking) {
      std::vector<double> ov_c, ov_m;
      for (int round = 0; round < o.rounds; ++round) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        double computed = run_collx(iters, mine);
        ov_c.push_back(overlap_percent((MPI_Wtime() - t0) * 1e6 / iters, computed / iters, mine));
        if (compare) {
          MPI_Barrier(MPI_COMM_WORLD);
          t0 = MPI_Wtime();
          computed = run_mpi(iters, mine_mpi);
          ov_m.push_back(
              overlap_percent((MPI_Wtime() - t0) * 1e6 / iters, computed / iters, mine_mpi));
        }
      }
      run_collx(1);
      check();
      overlap = median(ov_c);
      if (compare) overlap_mpi = median(ov_m);
    }
    double sum_overlap = 0, sum_overlap_mpi = 0;
    MPI_Reduce(&overlap, &sum_overlap, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&overlap_mpi, &sum_overlap_mpi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    const double mine_pmpi = o.compare_pmpi ? median(lat_p) : 0;
    const double mine_rewrite = o.rewrite ? median(lat_w) : 0;
    double sum = 0, mn = 0, mx = 0, sum_mpi = 0, sum_pmpi = 0, sum_rewrite = 0;
    MPI_Reduce(&mine_rewrite, &sum_rewrite, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine_mpi, &sum_mpi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine_pmpi, &sum_pmpi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int ok = valid ? 1 : 0, all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double avg = sum / p, avg_mpi = sum_mpi / p;
      const double busbw = bytes * k_ops / (avg * 1e-6) * 2.0 * (p - 1) / p / 1e9;
      std::printf("%-10zu %16.2f", bytes, avg);
      if (o.full) std::printf(" %16.2f %16.2f %10d", mn, mx, iters * o.rounds);
      std::printf(" %12.3f", busbw);
      if (compare) std::printf(" %14.2f %10.3f", avg_mpi, avg / avg_mpi);
      if (o.compare_pmpi) std::printf(" %14.2f %10.3f", sum_pmpi / p, avg_mpi / (sum_pmpi / p));
      if (o.nonblocking) std::printf(" %11.1f", sum_overlap / p);
      if (o.nonblocking && compare) std::printf(" %15.1f", sum_overlap_mpi / p);
      if (o.rewrite) std::printf(" %11.2f", sum_rewrite / p);
      std::printf("  %-20s", collx_comm_algorithm(comm, bytes));
      if (o.validate) std::printf(" %10s", all_ok ? "Pass" : "Fail");
      std::printf("\n");
      std::fflush(stdout);
      if (!all_ok) ++failures;
    }
    for (MPI_Request& r : persistent_mpi) {
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
    for (MPI_Request& r : persistent_pmpi) {
      if (r != MPI_REQUEST_NULL) PMPI_Request_free(&r);
    }
    if (size > o.max_size / 2) break;  // no overflow past max
  }

  st = collx_comm_destroy(comm);
  if (st != COLLX_SUCCESS) return fail("collx_comm_destroy", st);
  st = collx_finalize();
  if (st != COLLX_SUCCESS) return fail("collx_finalize", st);
  for (int k = 0; k < k_ops; ++k) {
    std::free(send_blocks[k]);
    std::free(recv_blocks[k]);
  }
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
