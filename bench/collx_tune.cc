// collx_tune: per-message-size profiling of the allreduce algorithms on these ranks, and the
// COLLX_TUNE table that picks the fastest at each size.
//
//   mpiexec -n 4 collx_tune [-m min:max] [-i iters] [-I iters_large] [-r rounds] [-T dtype]
//                           [--op op] [--margin F] [--across] [--rewrite]
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
// --rewrite: before each call every rank writes its input again (collx_osu --rewrite), as a
// program that computes its input before each call does; algorithms that read the peers'
// inputs in place pay for that (docs/PERFORMANCE.md, "Defaults by the CPU's maker").
//
// --across tunes the hierarchical allreduce's step between nodes instead (COLLX_TUNE_ACROSS,
// by the bytes of that step): on ranks spread over nodes with as many on each, the ranks of
// each local rank (collx_comm_node), one per node, form a group, as the step's owners of one
// block do, and every group times the point-to-point algorithms at once, as the step runs
// them; "current" is the step's table in force (the job's COLLX_TUNE_ACROSS, or the defaults
// for that many nodes). The table is then applied to the groups and checked, and to the
// world's hierarchical allreduce, whose results are validated.
//
// Prints a table (µs per call; "current" is the table in force, whose pick is named), then
// `COLLX_TUNE=...` (or `COLLX_TUNE_ACROSS=...`) on a line of its own. Exit status 0 when
// everything validated.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
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
  bool across = false;  // tune the step between nodes (COLLX_TUNE_ACROSS)
  bool rewrite = false;  // --rewrite
  collx_dtype_t dtype = COLLX_FLOAT32;
  collx_op_t op = COLLX_SUM;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--across") {
      o->across = true;
      continue;
    }
    if (a == "--rewrite") {
      o->rewrite = true;
      continue;
    }
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
  collx::bench::fail("collx_tune", what, st);
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

std::optional<std::string> env_copy(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}
const char* c_str_or_null(const std::optional<std::string>& s) {
  return s ? s->c_str() : nullptr;
}

// Sets `name` to `value`, or unsets it for null.
void set_env(const char* name, const char* value) {
  if (value != nullptr) setenv(name, value, 1);
  else unsetenv(name);
}

// Communicators over `group` (every rank of the world calls this with its own group): the
// table in force (COLLX_TUNE=current_tune, null: the defaults), then every algorithm that can
// run there; those that cannot are listed by rank 0 with the library's reason.
std::vector<Candidate> make_candidates(MPI_Comm group, const char* current_tune, int rank) {
  std::vector<Candidate> cands(1, Candidate{"current", nullptr});
  set_env("COLLX_TUNE", current_tune);
  collx_status_t st = collx_comm_create_mpi(group, &cands[0].comm);
  if (st != COLLX_SUCCESS) fail("collx_comm_create (the table in force)", st);
  unsetenv("COLLX_TUNE");
  for (const char* algo : kAlgos) {
    setenv("COLLX_ALLREDUCE_ALGO", algo, 1);
    collx_comm_t c = nullptr;
    st = collx_comm_create_mpi(group, &c);
    // Every group's answer is the same (groups of one size): checked, since rounds need all.
    int here = st == COLLX_SUCCESS ? 1 : 0, everywhere = 0;
    MPI_Allreduce(&here, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (st == COLLX_ERR_CONFIG) {  // not for these ranks (the same answer on every rank)
      if (rank == 0) std::printf("# not here: %s (%s)\n", algo, collx_last_error());
      continue;
    }
    if (st != COLLX_SUCCESS) fail("collx_comm_create", st);
    if (!everywhere) fail("collx_comm_create (in some group it could not)", COLLX_ERR_CONFIG);
    cands.push_back(Candidate{algo, c});
  }
  unsetenv("COLLX_ALLREDUCE_ALGO");
  return cands;
}

void destroy(std::vector<Candidate>& cands) {
  for (const Candidate& c : cands) {
    const collx_status_t st = collx_comm_destroy(c.comm);
    if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
  }
  cands.clear();
}

// The buffers of the timed calls and their validation: each call reduces over `p` ranks
// (the communicator's), and a result that differs from the expected one clears `valid`.
struct Runner {
  const Options& o;
  int rank, p;
  size_t es;
  std::vector<uint8_t> send, recv, expected;
  bool valid = true;
  Runner(const Options& opts, int r, int ranks)
      : o(opts), rank(r), p(ranks), es(collx_dtype_size(opts.dtype)),
        send(std::max(opts.max_size, es)), recv(send.size()), expected(send.size()) {}
  void fill(size_t count) {
    collx::test::fill_input(o.dtype, o.op, rank, count, send.data());
    collx::test::fill_expected(o.dtype, o.op, p, count, expected.data());
  }
  // Runs `n` calls of `c` and checks the last result; the time per call in µs.
  double run(collx_comm_t c, size_t count, int n) {
    std::memset(recv.data(), 0xa5, count * es);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      if (o.rewrite) collx::bench::rewrite_lines(send.data(), count * es);
      const collx_status_t st = collx_allreduce(send.data(), recv.data(), count, o.dtype, o.op, c);
      if (st != COLLX_SUCCESS) fail("collx_allreduce", st);
    }
    const double us = (MPI_Wtime() - t0) * 1e6 / n;
    if (std::memcmp(recv.data(), expected.data(), count * es) != 0) valid = false;
    return us;
  }
};

// What the timing chose: per measured size (bytes), the algorithm.
struct Choice {
  std::vector<size_t> sizes;
  std::vector<std::string> chosen;
};

// Times every candidate at every size, the whole world at once (the groups' ranks in lockstep:
// each round starts at a barrier of the world); world rank 0 prints the table. Returns the
// choices.
Choice measure(const Options& o, const std::vector<Candidate>& cands, Runner& r, int rank) {
  if (rank == 0) {
    std::printf("%-10s", "# Size");
    for (const Candidate& c : cands) std::printf(" %18s", c.name.c_str());
    std::printf("  %-20s %-20s\n", "current pick", "chosen");
  }
  Choice out;
  for (size_t size = o.min_size; size <= o.max_size; size *= 2) {
    const size_t count = size / r.es, bytes = count * r.es;
    if (count == 0) continue;
    r.fill(count);
    const int iters = bytes > 8192 ? o.iters_large : o.iters;
    std::vector<std::vector<double>> rounds(cands.size());
    for (const Candidate& c : cands) r.run(c.comm, count, std::max(1, iters / 10));  // warm up
    for (int k = 0; k < o.rounds; ++k) {
      for (size_t j = 0; j < cands.size(); ++j) {
        const size_t i = (j + static_cast<size_t>(k)) % cands.size();
        MPI_Barrier(MPI_COMM_WORLD);
        rounds[i].push_back(r.run(cands[i].comm, count, iters));
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
    out.chosen.push_back(best != 0 && slowest[best] < keep * (1 - o.margin) ? cands[best].name
                                                                          : current);
    out.sizes.push_back(bytes);
    if (rank == 0) {
      std::printf("%-10zu", bytes);
      for (double t : slowest) std::printf(" %18.2f", t);
      std::printf("  %-20s %-20s\n", current.c_str(), out.chosen.back().c_str());
      std::fflush(stdout);
    }
    if (size > o.max_size / 2) break;  // no overflow past max
  }
  return out;
}

// The table: each measured size decides up to the next; a range ends where the choice changes.
std::string table(const Choice& c) {
  std::string tune = "0-";
  for (size_t i = 1; i < c.sizes.size(); ++i) {
    if (c.chosen[i] == c.chosen[i - 1]) continue;
    const std::string at = size_string(c.sizes[i]);
    tune += at + ":" + c.chosen[i - 1] + "," + at + "-";
  }
  if (!c.chosen.empty()) tune += "inf:" + c.chosen.back();
  return tune;
}

// Applied: a communicator over `group` with COLLX_TUNE=tune picks the chosen algorithm at
// every size, and its results validate.
bool applied(MPI_Comm group, const std::string& tune, const Choice& choice, Runner& r) {
  if (choice.sizes.empty()) return false;
  setenv("COLLX_TUNE", tune.c_str(), 1);
  collx_comm_t c = nullptr;
  collx_status_t st = collx_comm_create_mpi(group, &c);
  unsetenv("COLLX_TUNE");
  if (st != COLLX_SUCCESS) fail("collx_comm_create with the tuned table", st);
  bool ok = true;
  for (size_t i = 0; i < choice.sizes.size(); ++i) {
    const size_t count = choice.sizes[i] / r.es;
    r.fill(count);
    r.run(c, count, 1);
    ok = ok && choice.chosen[i] == collx_comm_algorithm(c, choice.sizes[i]);
  }
  st = collx_comm_destroy(c);
  if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
  return ok;
}

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
                   "[--op op] [--margin F] [--across] [--rewrite]\n",
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

  // The ranks whose communicators are timed: the world, or with --across this rank's group
  // (its local rank on every node, by node number: the step's owners of one block).
  MPI_Comm group = MPI_COMM_WORLD;
  int group_size = p;
  // The job's tables, copied: creating the candidates sets and unsets these variables.
  const std::optional<std::string> job_tune = env_copy("COLLX_TUNE"),
                                   job_across = env_copy("COLLX_TUNE_ACROSS");
  const char* rewritten = o.rewrite ? ", every input rewritten before each call" : "";
  if (o.across) {
    collx_comm_t world = nullptr;
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &world);
    if (st != COLLX_SUCCESS) fail("collx_comm_create", st);
    collx_comm_node_t node{};
    st = collx_comm_node(world, &node);
    if (st != COLLX_SUCCESS) fail("collx_comm_node", st);
    st = collx_comm_destroy(world);
    if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
    int sizes[2] = {node.local_size, -node.local_size}, agreed[2] = {0, 0};
    MPI_Allreduce(sizes, agreed, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (node.nodes < 2 || agreed[0] != -agreed[1]) {
      if (rank == 0) {
        std::fprintf(stderr, "collx_tune --across: needs the ranks on several nodes with as many "
                             "on each (here %d nodes, %d to %d ranks per node)\n",
                     node.nodes, agreed[0], -agreed[1]);
      }
      collx_finalize();
      MPI_Finalize();
      return 2;
    }
    MPI_Comm_split(MPI_COMM_WORLD, node.local_rank, node.node, &group);
    group_size = node.nodes;
    unsetenv("COLLX_TUNE_ACROSS");  // (the groups' own table is COLLX_TUNE)
    if (rank == 0) {
      std::printf("# collx_tune --across, %s: the step between %d nodes, %d groups at "
                  "once, %s %s, median of %d rounds of the slowest rank, margin %.0f%%%s\n",
                  collx_version_string(), node.nodes, node.local_size,
                  collx_dtype_name(o.dtype), collx_op_name(o.op), o.rounds, o.margin * 100,
                  rewritten);
    }
  } else if (rank == 0) {
    std::printf("# collx_tune, %s: %d ranks, %s %s, median of %d rounds of the "
                "slowest rank, margin %.0f%%%s\n",
                collx_version_string(), p, collx_dtype_name(o.dtype), collx_op_name(o.op),
                o.rounds, o.margin * 100, rewritten);
  }
  int group_rank = 0;
  MPI_Comm_rank(group, &group_rank);
  Runner runner(o, group_rank, group_size);
  std::vector<Candidate> cands =
      make_candidates(group, o.across ? c_str_or_null(job_across) : c_str_or_null(job_tune),
                      rank);
  const Choice choice = measure(o, cands, runner, rank);
  const std::string tune = table(choice);
  destroy(cands);
  bool ok = runner.valid && applied(group, tune, choice, runner);
  if (o.across && ok) {
    // The world's hierarchical allreduce with the table as its step's: every size validates.
    setenv("COLLX_TUNE_ACROSS", tune.c_str(), 1);
    set_env("COLLX_TUNE", c_str_or_null(job_tune));
    collx_comm_t world = nullptr;
    st = collx_comm_create_mpi(MPI_COMM_WORLD, &world);
    if (st != COLLX_SUCCESS) fail("collx_comm_create with the tuned COLLX_TUNE_ACROSS", st);
    Runner all(o, rank, p);
    for (size_t bytes : choice.sizes) {
      all.fill(bytes / all.es);
      all.run(world, bytes / all.es, 1);
    }
    ok = all.valid;
    st = collx_comm_destroy(world);
    if (st != COLLX_SUCCESS) fail("collx_comm_destroy", st);
  }
  if (group != MPI_COMM_WORLD) MPI_Comm_free(&group);
  int mine = ok ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&mine, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("# %s\n%s=%s\n",
                all_ok ? "every result validated; the table applied picks what was chosen"
                       : "FAILED: a result did not validate, or the table applied picks otherwise",
                o.across ? "COLLX_TUNE_ACROSS" : "COLLX_TUNE", tune.c_str());
  }
  st = collx_finalize();
  if (st != COLLX_SUCCESS) fail("collx_finalize", st);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
