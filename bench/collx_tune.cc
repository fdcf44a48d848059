// collx_tune: per-message-size profiling of the allreduce algorithms on these ranks, and the
// COLLX_TUNE table that picks the fastest at each size.
//
//   mpiexec -n 4 collx_tune [-m min:max] [-i iters] [-I iters_large] [-r rounds] [-T dtype]
//                           [--op op] [--margin F]
//
// Every algorithm of the selection table that can run on these ranks gets a communicator of
// its own (COLLX_ALLREDUCE_ALGO; one that cannot is listed with the library's reason), beside
// one with the table in force now (the defaults, or the job's COLLX_TUNE). For each size from
// min to max (powers of two) the rounds time each communicator's loop in turn, starting with
// another one each round; an algorithm's time is the median round of the slowest rank, and
// every result is validated bitwise. At each size the fastest algorithm replaces the current
// table's pick only where it is faster by more than the margin (default 0.05: 5%), so noise
// does not move the table. A measured size decides up to the next one; below min and above
// max the nearest measured size decides. The table is then applied (COLLX_TUNE) and checked:
// every size picks what was chosen and validates.
//
// Prints a table (µs per call; "current" is the table in force, whose pick is named), then
// `COLLX_TUNE=...` on a line of its own. Exit status 0 when everything validated.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "bench_util.h"
#include "common/pattern.h"

namespace {

// The host algorithms of the selection table (select.cc's order).
constexpr const char* kAlgos[] = {"recursive_doubling", "rabenseifner", "ring",
                                  "shm_one_shot",       "shm_two_shot", "shm_cma",
                                  "hierarchical"};

struct Options {
  size_t min_size = 4, max_size = 16 << 20;
  int iters = 1000, iters_large = 100;  // per round, up to 8 KiB and above
  int rounds = 7;
  double margin = 0.05;
  collx_dtype_t dtype = COLLX_FLOAT32;
  collx_op_t op = COLLX_SUM;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "-m") {
      const char* colon = std::strchr(v, ':');
      if (colon == nullptr) return false;
      o->min_size = std::strtoull(v, nullptr, 10);
      o->max_size = std::strtoull(colon + 1, nullptr, 10);
    } else if (a == "-i") {
      o->iters = std::atoi(v);
    } else if (a == "-I") {
      o->iters_large = std::atoi(v);
    } else if (a == "-r") {
      o->rounds = std::atoi(v);
    } else if (a == "--margin") {
      o->margin = std::atof(v);
    } else if (a == "-T") {
      if (!collx::bench::parse_dtype(v, &o->dtype)) return false;
    } else if (a == "--op") {
      if (!collx::bench::parse_op(v, &o->op)) return false;
    } else {
      return false;
    }
  }
  return o->min_size >= 1 && o->min_size <= o->max_size && o->max_size <= (size_t{1} << 40) &&
         o->iters > 0 && o->iters_large > 0 && o->rounds > 0 && o->margin >= 0 &&
         o->margin < 1 && collx::test::op_valid(o->dtype, o->op);
}

[[noreturn]] void fail(const char* what, collx_status_t st) {
  std::fprintf(stderr, "collx_tune: %s: %s: %s\n", what, collx_strerror(st), collx_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// "4K", "16M" where exact, else bytes: COLLX_TUNE's sizes.
std::string size_string(size_t b) {
  if (b != 0 && b % (size_t{1} << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b != 0 && b % (size_t{1} << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

struct Candidate {
  std::string name;  // an algorithm, or "current"
  collx_comm_t comm;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  Options o;
  if (!parse(argc, argv, &o)) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: %s [-m min:max] [-i iters] [-I iters_large] [-r rounds] [-T dtype] "
                   "[--op op] [--margin F]\n",
                   argv[0]);
    }
    MPI_Finalize();
    return 2;
  }
  const char* job_algo = std::getenv("COLLX_ALLREDUCE_ALGO");
  if (job_algo != nullptr && std::strcmp(job_algo, "auto") != 0) {
    if (rank == 0) {
      std::fprintf(stderr, "collx_tune: COLLX_ALLREDUCE_ALGO=%s overrides every table: unset it\n",
                   job_algo);
    }
    MPI_Finalize();
    return 2;
  }
  collx_status_t st = collx_init();
  if (st != COLLX_SUCCESS) fail("collx_init", st);
  // The communicators: the table in force, then every algorithm that can run here.
  std::vector<Candidate> cands(1, Candidate{"current", nullptr});
  st = collx_comm_create_mpi(MPI_COMM_WORLD, &cands[0].comm);
  if (st != COLLX_SUCCESS) fail("collx_comm_create (the table in force)", st);
  if (rank == 0) {
    std::printf("# collx_tune, libcollx %s: %d ranks, %s %s, median of %d rounds of the "
                "slowest rank, margin %.0f%%\n",
                collx_version_string(), p, collx_dtype_name(o.dtype), collx_op_name(o.op),
                o.rounds, o.margin * 100);
  }
  for (const char* algo : kAlgos) {
    setenv("COLLX_ALLREDUCE_ALGO", algo, 1);
    collx_comm_t c = nullptr;
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
    if (st == COLLX_ERR_CONFIG) {  // not for these ranks (the same answer on every rank)
      if (rank == 0) std::printf("# not here: %s (%s)\n", algo, collx_last_error());
      continue;
    }
    if (st != COLLX_SUCCESS) fail("collx_comm_create", st);
    cands.push_back(Candidate{algo, c});
  }
  unsetenv("COLLX_ALLREDUCE_ALGO");

  const size_t es = collx_dtype_size(o.dtype), max_bytes = std::max(o.max_size, es);
  std::vector<uint8_t> send(max_bytes), recv(max_bytes), expected(max_bytes);
  bool all_valid = true;
  // Runs `n` calls of `c` and checks the last result; the time per call in µs.
  const auto run = [&](collx_comm_t c, size_t count, int n) {
    std::memset(recv.data(), 0xa5, count * es);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      st = collx_allreduce(send.data(), recv.data(), count, o.dtype, o.op, c);
      if (st != COLLX_SUCCESS) fail("collx_allreduce", st);
    }
    const double us = (MPI_Wtime() - t0) * 1e6 / n;
    if (std::memcmp(recv.data(), expected.data(), count * es) != 0) all_valid = false;
    return us;
  };

  if (rank == 0) {
    std::printf("%-10s", "# Size");
    for (const Candidate& c : cands) std::printf(" %18s", c.name.c_str());
    std::printf("  %-20s %-20s\n", "current pick", "chosen");
  }
  std::vector<size_t> sizes;
  std::vector<std::string> chosen;
  for (size_t size = o.min_size; size <= o.max_size; size *= 2) {
    const size_t count = size / es, bytes = count * es;
    if (count == 0) continue;
    collx::test::fill_input(o.dtype, o.op, rank, count, send.data());
    collx::test::fill_expected(o.dtype, o.op, p, count, expected.data());
    const int iters = bytes > 8192 ? o.iters_large : o.iters;
    std::vector<std::vector<double>> rounds(cands.size());
    for (const Candidate& c : cands) run(c.comm, count, std::max(1, iters / 10));  // warm up
    for (int r = 0; r < o.rounds; ++r) {
      for (size_t k = 0; k < cands.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(r)) % cands.size();
        MPI_Barrier(MPI_COMM_WORLD);
        rounds[i].push_back(run(cands[i].comm, count, iters));
      }
    }
    std::vector<double> mine(cands.size()), slowest(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) mine[i] = collx::bench::median(rounds[i]);
    MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    // The current table's pick stays unless an algorithm beats it by more than the margin.
    const std::string current = collx_comm_algorithm(cands[0].comm, bytes);
    size_t best = 0, current_i = 0;
    for (size_t i = 1; i < cands.size(); ++i) {
      if (cands[i].name == current) current_i = i;
      if (best == 0 || slowest[i] < slowest[best]) best = i;
    }
    // Two measurements of the current pick (as "current" and under its name): the better.
    const double keep = current_i != 0 ? std::min(slowest[0], slowest[current_i]) : slowest[0];
    chosen.push_back(best != 0 && slowest[best] < keep * (1 - o.margin) ? cands[best].name
                                                                      : current);
    sizes.push_back(bytes);
    if (rank == 0) {
      std::printf("%-10zu", bytes);
      for (double t : slowest) std::printf(" %18.2f", t);
      std::printf("  %-20s %-20s\n", current.c_str(), chosen.back().c_str());
      std::fflush(stdout);
    }
    if (size > o.max_size / 2) break;  // no overflow past max
  }

  // The table: each measured size decides up to the next; a range ends where the choice changes.
  std::string tune = "0-";
  for (size_t i = 1; i < sizes.size(); ++i) {
    if (chosen[i] == chosen[i - 1]) continue;
    const std::string at = size_string(sizes[i]);
    tune += at + ":" + chosen[i - 1] + "," + at + "-";
  }
  if (!chosen.empty()) tune += "inf:" + chosen.back();
  for (const Candidate& c : cands) {
    st = collx_comm_destroy(c.comm);
    if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
  }

  // Applied: every size picks the chosen algorithm and validates.
  bool applied = !sizes.empty();
  if (applied) {
    setenv("COLLX_TUNE", tune.c_str(), 1);
    collx_comm_t c = nullptr;
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &c);
    if (st != COLLX_SUCCESS) fail("collx_comm_create with the tuned table", st);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t count = sizes[i] / es;
      collx::test::fill_input(o.dtype, o.op, rank, count, send.data());
      collx::test::fill_expected(o.dtype, o.op, p, count, expected.data());
      run(c, count, 1);
      applied = applied && chosen[i] == collx_comm_algorithm(c, sizes[i]);
    }
    st = collx_comm_destroy(c);
    if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
  }
  int ok = all_valid && applied ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("# %s\nCOLLX_TUNE=%s\n",
                all_ok ? "every result validated; the table applied picks what was chosen"
                       : "FAILED: a result did not validate, or the table applied picks otherwise",
                tune.c_str());
  }
  st = collx_finalize();
  if (st != COLLX_SUCCESS) fail("collx_finalize", st);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
