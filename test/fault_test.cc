// Fault harness: forks the ranks of a job (no MPI: a launcher would kill the whole job when one
// rank dies), bootstraps them through an allgather in shared memory, and makes one rank, the
// victim, die (SIGKILL) or freeze (SIGSTOP) at a chosen point of a stream of allreduces:
//   before  the victim stops just before collective #K, so every survivor is waiting in #K;
//   mid     the victim enters #K with a large message and a thread of its own stops it a few
//           milliseconds later, in the middle of the algorithm's steps.
// The calls are blocking, or (polled) collx_iallreduce completed by collx_test loops; the ranks
// are on one node, or (two_nodes) alternate between two pretended ones (COLLX_NODE).
// Every survivor must then get COLLX_ERR_PEER_FAILED or COLLX_ERR_TIMEOUT from #K (or, in mid
// mode, #K+1: the victim may already have sent all a survivor needed) within COLLX_TIMEOUT + 1 s
// of the fault (the deadline, and slack), with a message naming a rank and a step, and the
// victim named by at least one survivor; later calls fail fast with COLLX_ERR_COMM_FAILED;
// destroying the communicator takes under a second; a second communicator of the survivors
// only keeps working (checked results); collx_finalize succeeds. The parent bounds the whole
// scenario and reports a hang.
//
// resumed: a third communicator of all ranks keeps the endpoints to the victim open; each
// survivor, after its error, destroys the failed communicator, one of them wakes the (SIGSTOP)
// victim, and the survivors run allreduces of their own for 1.5 s while the victim's messages
// still come in: the failed call's buffer must not change and, under ASan, nothing may touch
// freed memory (Transport::gave_up, docs/RELIABILITY.md). The woken victim's call must fail or
// give the right result, never a wrong one as success.
// late (with resumed, mid and two_nodes): collectives #K-2 and #K-1 are large too, one ring
// message per block (COLLX_RING_SEGMENT above the block), and the victim stops once it has
// sent 7/8 of the bytes #K-1 made it send: in the middle of its last message, the ring's last
// allgather step, whose receive goes into the caller's buffer. A survivor must find that block
// only partly received when its call fails (else the stop missed, and the run counts as
// failed), and the rest of the message, sent when the victim wakes, must not land in it.
// freed (with resumed): the survivors make the failed call's buffer unreadable (PROT_NONE, as
// memory given back to the system) before they wake the victim, and every message goes
// through UCX, not the one-copy path (COLLX_CMA_MIN above them all; the ring's in 8 KiB
// segments), so that a survivor's sends to the victim wait in its shared-memory FIFO: nothing
// may read the buffer when the victim drains them, and the victim must not take the zeros sent
// instead for data (Guarded, its seal).
// changed (with resumed): the survivors write other values into the failed call's buffer before
// they wake the victim, as a program that goes on with it would. A one-copy send's offer (the
// messages of 16 MiB take that path within a node) lets the woken victim read the buffer, and so
// does a zero-copy send over TCP still queued (two_nodes): it must find the seal broken, and not
// take the new values for data.
// Usage: fault_test [--quick]  (runs the matrix; prints one table row per scenario)
//        fault_test ALGO FAULT MODE RANKS VICTIM [two_nodes] [polled]
//                   [resumed [late|freed|changed]]
//        (one scenario)
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algo/rank_math.h"
#include "collx/collx.h"
#include "common/board.h"

using namespace collx::test;

namespace {

constexpr double kTimeout = 2.0;       // COLLX_TIMEOUT of the scenario
constexpr int kFaultAt = 5;            // collective #K (odd: a tiny call in "before" mode)
constexpr int kSmallCount = 1000;      // int32 elements before the fault (and in "before" mode)
constexpr int kTinyCount = 3;          // every other call, the fault's in "before" mode: 12 bytes
                                       // (shm_one_shot carries them in its flag lines)
constexpr int kLargeCount = 4 << 20;   // int32 elements in "mid" mode (16 MiB)

// What each rank reports to the parent.
struct Outcome {
  int failed_call;       // index of the first failing collective, -1 if none
  int code;              // its status
  double time_to_error;  // seconds from the fault to the error
  double destroy_s;      // collx_comm_destroy of the failed communicator
  int survivors_ok;      // allreduces on the survivors' communicator verified
  int64_t cut_at;        // (late) bytes of a block received when the call failed, else -1
  int wrong_result;      // a call returned COLLX_SUCCESS with a wrong result (the woken victim)
  char message[512];
};

struct Shared {
  Board world;
  Board survivors;
  std::atomic<double> fault_time;  // set by the victim just before it stops
  std::atomic<int> victim_pid{0};  // (resumed)
  Board all;                       // (resumed) the third communicator's
  Outcome out[kMaxRanks];
};

struct Scenario {
  std::string algo;
  int sig;       // SIGKILL or SIGSTOP
  bool mid;      // mid-collective (else: before collective #K)
  int ranks;
  int victim;
  bool two_nodes = false;  // COLLX_NODE alternates: peers on the "other node" go over UCX
  bool polled = false;     // collx_iallreduce completed by a collx_test loop
  bool resumed = false;    // see the top of the file
  bool late = false;       // (resumed) see the top of the file
  bool freed = false;      // (resumed) see the top of the file
  bool changed = false;    // (resumed) see the top of the file
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fault_test rank %d: %s: %s\n", static_cast<int>(getpid()), what,
               collx_last_error());
  std::_Exit(3);
}

void stop_self(Shared* sh, int sig) {
  sh->fault_time.store(now());
  sh->victim_pid.store(getpid());
  kill(getpid(), sig);
}

// (late) The victim stops by bytes sent, not by time. UCX's TCP transport hands its fragments
// to the kernel through send and sendmsg; the definitions below take the place of libc's in
// the whole process (fault_test is linked with export_dynamic) and count what the victim
// sends, once `on`. Past `stop_at` bytes the victim stops itself, once.
struct ByteStop {
  std::atomic<bool> on{false};
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> stop_at{-1};  // -1: only counting
  Shared* sh = nullptr;
} byte_stop;

ssize_t count_sent(ssize_t n) {
  if (n <= 0 || !byte_stop.on.load(std::memory_order_relaxed)) return n;
  const int64_t total = byte_stop.sent.fetch_add(n) + n;
  int64_t at = byte_stop.stop_at.load();
  if (at >= 0 && total >= at && byte_stop.stop_at.compare_exchange_strong(at, -1)) {
    stop_self(byte_stop.sh, SIGSTOP);
  }
  return n;
}

}  // namespace

extern "C" ssize_t send(int fd, const void* buf, size_t len, int flags) {
  static const auto real =
      reinterpret_cast<ssize_t (*)(int, const void*, size_t, int)>(dlsym(RTLD_NEXT, "send"));
  return count_sent(real(fd, buf, len, flags));
}

extern "C" ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  static const auto real =
      reinterpret_cast<ssize_t (*)(int, const msghdr*, int)>(dlsym(RTLD_NEXT, "sendmsg"));
  return count_sent(real(fd, msg, flags));
}

namespace {

// An in-place int32 sum posted with collx_iallreduce and completed by collx_test alone. In
// "before" mode a survivor's tests never find that the victim started the call, so its worker
// must start it when the test's grace period ends; in either mode the error must come back
// through collx_test.
collx_status_t polled_allreduce(int32_t* buf, size_t count, collx_comm_t comm) {
  collx_request_t req = nullptr;
  collx_status_t st =
      collx_iallreduce(COLLX_IN_PLACE, buf, count, COLLX_INT32, COLLX_SUM, comm, &req);
  while (st == COLLX_SUCCESS && req != nullptr) {
    st = collx_test(&req);
    if (st == COLLX_IN_PROGRESS) st = COLLX_SUCCESS;
  }
  return st;
}

// (late) Where a survivor's buffer, at its error, holds a block only partly received (bytes
// into the block; -1: none). The ranks' blocks are the algorithms' (collx::block), and each is
// one message here; what has arrived holds the sum, the rest what the call left before.
int64_t cut_block(const std::vector<int32_t>& buf, int ranks) {
  const int32_t want = ranks * (ranks + 1) / 2;
  for (size_t b = 0; b < static_cast<size_t>(ranks); ++b) {
    const collx::Range r = collx::block(kLargeCount, ranks, b);
    size_t i = 0;
    while (i < r.len && buf[r.begin + i] == want) ++i;
    if (i > 0 && i < r.len) return static_cast<int64_t>(i * sizeof(int32_t));
  }
  return -1;
}

// After the error of a resumed scenario: see the top of the file. The woken victim waits out
// the survivors' 1.5 s (3 s before 2026-12-05, for CI's time) and exits.
int resumed_rank(const Scenario& sc, Shared* sh, Outcome& out, bool victim, collx_comm_t comm,
                 collx_comm_t scomm, collx_comm_t all, Group& sgroup,
                 std::vector<int32_t>& buf) {
  if (victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    std::_Exit(0);
  }
  if (sc.changed) std::fill(buf.begin(), buf.end(), -1);
  const std::vector<int32_t> at_error = buf;
  if (collx_comm_destroy(comm) != COLLX_ERR_COMM_FAILED) fail("destroy of the failed comm");
  // (freed) The buffer's whole pages, unreadable while the victim's messages come in.
  const auto first = (reinterpret_cast<uintptr_t>(buf.data()) + 4095) & ~uintptr_t{4095};
  const auto end = reinterpret_cast<uintptr_t>(buf.data() + buf.size()) & ~uintptr_t{4095};
  void* pages = reinterpret_cast<void*>(first);
  if (sc.freed && mprotect(pages, end - first, PROT_NONE) != 0) fail("mprotect");
  if (board_barrier(sgroup) != 0) fail("survivors' barrier");
  if (sgroup.rank == 0) kill(sh->victim_pid.load(), SIGCONT);
  std::vector<int32_t> other(1000);
  for (int i = 0; i < 150; ++i) {
    if (collx_allreduce(COLLX_IN_PLACE, other.data(), other.size(), COLLX_INT32, COLLX_SUM,
                        scomm) != COLLX_SUCCESS) {
      fail("allreduce on the survivors' communicator");
    }
    usleep(10000);
  }
  if (sc.freed && mprotect(pages, end - first, PROT_READ | PROT_WRITE) != 0) fail("mprotect");
  if (buf != at_error) fail("the failed call's buffer changed after it returned");
  collx_comm_destroy(all);  // (not checked: the victim may have exited by now)
  if (collx_comm_destroy(scomm) != COLLX_SUCCESS) fail("destroy survivors' comm");
  if (collx_finalize() != COLLX_SUCCESS) fail("collx_finalize");
  out.survivors_ok = 1;
  return 0;
}

// One rank of a scenario. Returns the exit code of the child.
int run_rank(const Scenario& sc, Shared* sh, int rank) {
  Outcome& out = sh->out[rank];
  out.failed_call = -1;
  out.cut_at = -1;
  if (sc.late) setenv("COLLX_RING_SEGMENT", "64M", 1);  // one message per block
  if (sc.freed) setenv("COLLX_RING_SEGMENT", "8K", 1);
  if (sc.freed) setenv("COLLX_CMA_MIN", "1G", 1);  // every message through UCX
  if (sc.two_nodes) setenv("COLLX_NODE", rank % 2 ? "node-b" : "node-a", 1);
  if (collx_init() != COLLX_SUCCESS) fail("collx_init");
  Group world{&sh->world, rank, sc.ranks};
  collx_comm_params_t wp{rank, sc.ranks, board_allgather, &world};
  collx_comm_t comm = nullptr;
  if (collx_comm_create(&wp, &comm) != COLLX_SUCCESS) fail("create world");
  for (size_t bytes : {size_t{4}, size_t{kLargeCount} * 4}) {  // the scenario's algorithm runs
    const char* algo = collx_comm_algorithm(comm, bytes);
    if (algo == nullptr || sc.algo != algo) fail("the forced algorithm is not the one that runs");
  }

  collx_comm_t all = nullptr;  // (resumed) holds the endpoints to the victim open
  Group agroup{&sh->all, rank, sc.ranks};
  collx_comm_params_t ap{rank, sc.ranks, board_allgather, &agroup};
  if (sc.resumed && collx_comm_create(&ap, &all) != COLLX_SUCCESS) fail("create all");

  // The survivors' own communicator, created before the fault.
  const bool victim = rank == sc.victim;
  const int srank = rank < sc.victim ? rank : rank - 1;
  Group sgroup{&sh->survivors, srank, sc.ranks - 1};
  collx_comm_t scomm = nullptr;
  if (!victim) {
    collx_comm_params_t sp{srank, sc.ranks - 1, board_allgather, &sgroup};
    if (collx_comm_create(&sp, &scomm) != COLLX_SUCCESS) fail("create survivors");
  }

  std::vector<int32_t> buf(kLargeCount);
  const double stop_after = 0.003;  // seconds into collective #K (mid mode, not late)
  byte_stop.sh = sh;
  for (int call = 0;; ++call) {
    const bool large = sc.mid && call >= kFaultAt - (sc.late ? 2 : 0);  // (#K-1 warm)
    const size_t count = large ? kLargeCount : call % 2 ? kTinyCount : kSmallCount;
    std::fill(buf.begin(), buf.begin() + count, rank + 1);
    if (victim && sc.late && call == kFaultAt - 1) byte_stop.on.store(true);
    if (victim && sc.late && call == kFaultAt) {
      byte_stop.stop_at.store(byte_stop.sent.exchange(0) / 8 * 7);
    } else if (victim && call == kFaultAt) {
      if (sc.mid) {
        std::thread([sh, sig = sc.sig, stop_after] {
          std::this_thread::sleep_for(std::chrono::duration<double>(stop_after));
          stop_self(sh, sig);
        }).detach();
      } else {
        stop_self(sh, sc.sig);
      }
    }
    const collx_status_t st = sc.polled ? polled_allreduce(buf.data(), count, comm)
                                        : collx_allreduce(COLLX_IN_PLACE, buf.data(), count,
                                                          COLLX_INT32, COLLX_SUM, comm);
    if (st == COLLX_SUCCESS) {
      const int32_t want = sc.ranks * (sc.ranks + 1) / 2;
      if (std::any_of(buf.begin(), buf.begin() + count, [&](int32_t v) { return v != want; })) {
        out.wrong_result = 1;
        fail("a wrong result returned as success");
      }
      if (call > kFaultAt + 1) fail("no error after the fault");
      continue;
    }
    out.time_to_error = now() - sh->fault_time.load();
    out.failed_call = call;
    out.code = st;
    std::snprintf(out.message, sizeof out.message, "%s", collx_last_error());
    if (sc.late) out.cut_at = cut_block(buf, sc.ranks);
    break;
  }
  if (sc.resumed) return resumed_rank(sc, sh, out, victim, comm, scomm, all, sgroup, buf);
  // A failed communicator fails fast from now on, and is destroyed without waiting.
  const double t0 = now();
  if (collx_allreduce(COLLX_IN_PLACE, buf.data(), 1, COLLX_INT32, COLLX_SUM, comm) !=
      COLLX_ERR_COMM_FAILED) {
    fail("a call after the failure did not return COLLX_ERR_COMM_FAILED");
  }
  if (collx_comm_destroy(comm) != COLLX_ERR_COMM_FAILED) {
    fail("destroy of a failed comm did not return COLLX_ERR_COMM_FAILED");
  }
  out.destroy_s = now() - t0;

  // The survivors' communicator still works (after every survivor is done with the old one).
  if (board_barrier(sgroup) != 0) fail("survivors' barrier");
  for (int i = 0; i < 20; ++i) {
    const size_t count = i % 2 ? 100000 : 7;
    std::fill(buf.begin(), buf.begin() + count, srank + i);
    if (collx_allreduce(COLLX_IN_PLACE, buf.data(), count, COLLX_INT32, COLLX_SUM, scomm) !=
        COLLX_SUCCESS) {
      fail("allreduce on the survivors' communicator");
    }
    const int n = sc.ranks - 1;
    const int32_t want = n * (n - 1) / 2 + n * i;
    if (buf[0] != want || buf[count - 1] != want) fail("wrong result on the survivors' comm");
  }
  if (collx_comm_destroy(scomm) != COLLX_SUCCESS) fail("destroy survivors' comm");
  if (collx_finalize() != COLLX_SUCCESS) fail("collx_finalize");
  out.survivors_ok = 1;
  return 0;
}

// Whether `message` mentions "rank R" (not as a prefix of a longer number).
bool names_rank(const char* message, int r) {
  const std::string name = "rank " + std::to_string(r);
  for (const char* p = std::strstr(message, name.c_str()); p != nullptr;
       p = std::strstr(p + 1, name.c_str())) {
    const char next = p[name.size()];
    if (next < '0' || next > '9') return true;
  }
  return false;
}

// Runs one scenario in forked ranks; prints a row; returns whether it passed.
bool run_scenario(const Scenario& sc) {
  auto* sh = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (sh == MAP_FAILED) return false;
  new (sh) Shared();
  std::vector<pid_t> pids(sc.ranks);
  std::fflush(stdout);  // or the children print the parent's buffered lines again
  for (int r = 0; r < sc.ranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) exit_rank(run_rank(sc, sh, r));  // leak-checked under ASan
  }
  // Survivors must finish within a bound well above the deadline; the victim is reaped last.
  bool ok = true;
  const double limit = now() + 4 * kTimeout + 20;
  std::vector<int> status(sc.ranks, -1);
  for (int r = 0; r < sc.ranks; ++r) {
    if (r == sc.victim) continue;
    for (;;) {
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        break;
      }
      if (now() > limit) {
        std::printf("rank %d hung: killed by the harness\n", r);
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &st, 0);
        status[r] = st;
        ok = false;
        break;
      }
      usleep(10000);
    }
  }
  kill(pids[sc.victim], SIGKILL);
  int vst;
  waitpid(pids[sc.victim], &vst, 0);

  double worst = 0, worst_destroy = 0;
  bool victim_named = false;
  for (int r = 0; r < sc.ranks; ++r) {
    if (r == sc.victim) continue;
    const Outcome& o = sh->out[r];
    auto bad = [&](const char* why) {
      std::printf("  FAIL rank %d: %s (call %d, %s, %.2f s): %s\n", r, why, o.failed_call,
                  collx_strerror(static_cast<collx_status_t>(o.code)), o.time_to_error,
                  o.message);
      ok = false;
    };
    if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) bad("rank did not exit cleanly");
    if (o.failed_call != kFaultAt && !(sc.mid && o.failed_call == kFaultAt + 1)) {
      bad("failed at the wrong collective");
    }
    if (o.code != COLLX_ERR_PEER_FAILED && o.code != COLLX_ERR_TIMEOUT) bad("wrong status");
    if (sc.sig == SIGSTOP && o.code != COLLX_ERR_TIMEOUT) bad("a frozen peer is a timeout");
    if (o.time_to_error > kTimeout + 1) bad("error later than COLLX_TIMEOUT + 1 s");
    if (!std::strstr(o.message, "step") || !std::strstr(o.message, "rank ")) {
      bad("message names no rank or step");
    }
    const bool names_victim = names_rank(o.message, sc.victim);
    if (o.code == COLLX_ERR_PEER_FAILED && !names_victim) {
      bad("peer failure that does not name the victim");
    }
    victim_named = victim_named || names_victim;
    if (o.destroy_s > 1) bad("destroying the failed communicator took over 1 s");
    if (!o.survivors_ok) bad("survivors' communicator did not complete");
    worst = std::max(worst, o.time_to_error);
    worst_destroy = std::max(worst_destroy, o.destroy_s);
  }
  bool cut = false;
  for (int r = 0; r < sc.ranks; ++r) cut = cut || (r != sc.victim && sh->out[r].cut_at >= 0);
  if (sc.late && !cut) {
    std::printf("  FAIL: no survivor's buffer held a block partly received: the stop missed\n");
    ok = false;
  }
  if (sh->out[sc.victim].wrong_result) {
    std::printf("  FAIL: the victim's call returned a wrong result as success\n");
    ok = false;
  }
  if (!victim_named) {
    std::printf("  FAIL: no survivor's error names the victim (rank %d)\n", sc.victim);
    ok = false;
  }
  std::printf("| %-38s | %-7s | %-6s | %d | %d |",
              (sc.algo + (sc.two_nodes ? " (2 nodes)" : "") + (sc.polled ? " (polled)" : "") +
               (sc.resumed ? " (resumed)" : "") + (sc.late ? " (late)" : "") +
               (sc.freed ? " (freed)" : "") + (sc.changed ? " (changed)" : ""))
                  .c_str(),
              sc.sig == SIGKILL ? "SIGKILL" : "SIGSTOP", sc.mid ? "mid" : "before", sc.ranks,
              sc.victim);
  for (int r = 0; r < sc.ranks; ++r) {
    if (r == sc.victim) continue;
    const char* code = sh->out[r].code == COLLX_ERR_PEER_FAILED ? "PEER_FAILED"
                       : sh->out[r].code == COLLX_ERR_TIMEOUT   ? "TIMEOUT"
                                                                : "other";
    std::printf(" %d:%s %.2fs%s", r, code, sh->out[r].time_to_error,
                sh->out[r].cut_at >= 0 ? " cut" : "");
  }
  std::printf(" | %.2f s | %.3f s | %s |\n", worst, worst_destroy, ok ? "pass" : "FAIL");
  const Outcome& woken = sh->out[sc.victim];
  if (getenv("FAULT_VERBOSE") && sc.resumed && woken.failed_call >= 0) {
    std::printf("    rank %d (the victim, woken): %s\n", sc.victim, woken.message);
  }
  for (int r = 0; r < sc.ranks && getenv("FAULT_VERBOSE"); ++r) {
    if (r == sc.victim) continue;
    std::printf("    rank %d: %s\n", r, sh->out[r].message);
    if (sh->out[r].cut_at >= 0) {
      std::printf("    rank %d: a block held %lld bytes of its message\n", r,
                  static_cast<long long>(sh->out[r].cut_at));
    }
  }
  std::fflush(stdout);
  munmap(sh, sizeof(Shared));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", kTimeout);
  setenv("COLLX_TIMEOUT", timeout, 1);
  std::vector<Scenario> matrix;
  if (argc >= 6 && argc <= 10) {  // ALGO kill|stop before|mid RANKS VICTIM [flags]
    matrix.push_back({argv[1], std::strcmp(argv[2], "stop") == 0 ? SIGSTOP : SIGKILL,
                      std::strcmp(argv[3], "mid") == 0, std::atoi(argv[4]), std::atoi(argv[5])});
    bool bad_flag = false;
    for (int i = 6; i < argc; ++i) {
      const bool two_nodes = std::strcmp(argv[i], "two_nodes") == 0;
      const bool polled = std::strcmp(argv[i], "polled") == 0;
      const bool resumed = std::strcmp(argv[i], "resumed") == 0;
      const bool late = std::strcmp(argv[i], "late") == 0;
      const bool freed = std::strcmp(argv[i], "freed") == 0;
      const bool changed = std::strcmp(argv[i], "changed") == 0;
      matrix[0].two_nodes = matrix[0].two_nodes || two_nodes;
      matrix[0].polled = matrix[0].polled || polled;
      matrix[0].resumed = matrix[0].resumed || resumed;
      matrix[0].late = matrix[0].late || late;
      matrix[0].freed = matrix[0].freed || freed;
      matrix[0].changed = matrix[0].changed || changed;
      bad_flag = bad_flag || (!two_nodes && !polled && !resumed && !late && !freed && !changed);
    }
    const Scenario& sc = matrix[0];
    if (bad_flag || (sc.late && !(sc.resumed && sc.mid && sc.two_nodes)) ||
        (sc.freed && (!sc.resumed || sc.late)) ||
        (sc.changed && (!sc.resumed || sc.late || sc.freed)) || sc.ranks < 2 ||
        sc.ranks > kMaxRanks || sc.victim < 0 || sc.victim >= sc.ranks) {
      std::fprintf(stderr, "bad scenario\n");
      return 2;
    }
  } else {
    for (const char* algo :
         {"recursive_doubling", "rabenseifner", "ring", "shm_one_shot", "shm_two_shot", "shm_cma"}) {
      matrix.push_back({algo, SIGKILL, false, 3, 1});
      matrix.push_back({algo, SIGKILL, true, 4, 0});
      matrix.push_back({algo, SIGSTOP, false, 3, 2});
      matrix.push_back({algo, SIGSTOP, true, 3, 0});
    }
    // Ranks on two pretend nodes: between them UCX's own peer-failure detection reports.
    matrix.push_back({"ring", SIGKILL, true, 4, 1, true});
    matrix.push_back({"rabenseifner", SIGKILL, false, 3, 2, true});
    matrix.push_back({"recursive_doubling", SIGSTOP, false, 3, 1, true});
    // Two pretend nodes of two: hierarchical's survivors wait in their node's segment or for
    // the rank of their local rank on the other node.
    matrix.push_back({"hierarchical", SIGKILL, true, 4, 1, true});
    matrix.push_back({"hierarchical", SIGSTOP, false, 4, 2, true});
    // Completed by collx_test loops: within a node the survivors' tests learn from the
    // segment's words, across nodes from announcements, that the victim never started.
    matrix.push_back({"shm_one_shot", SIGKILL, false, 3, 1, false, true});
    matrix.push_back({"recursive_doubling", SIGKILL, false, 3, 2, true, true});
    matrix.push_back({"recursive_doubling", SIGSTOP, false, 3, 0, true, true});
    matrix.push_back({"ring", SIGKILL, true, 3, 1, true, true});
    // A frozen victim woken after the survivors' error, on the other node (its messages come
    // over TCP) and on theirs (their sends to it wait in its shared-memory queue).
    matrix.push_back({"ring", SIGSTOP, true, 3, 0, true, false, true});
    matrix.push_back({"ring", SIGSTOP, true, 3, 0, false, false, true});
    // Frozen in the allgather, whose receives from the other node write into the caller's
    // buffer fragment by fragment: the rest of a message, arriving after the call returned, is
    // dropped (Guarded).
    matrix.push_back({"ring", SIGSTOP, true, 3, 0, true, false, true, true});
    // Frozen with the survivors' small sends to it waiting in its shared-memory FIFO, their
    // buffer unreadable when it drains them: those let go are sent as zeros (Guarded).
    matrix.push_back({"ring", SIGSTOP, true, 3, 0, false, false, true, false, true});
    // Recursive doubling's fold: the victim holds rank 0's data and exchanges with rank 2.
    // Woken, it finds their sends to it let go: zeros, which it must not take for data.
    matrix.push_back({"recursive_doubling", SIGSTOP, true, 3, 1, false, false, true, false, true});
    // The one-copy path, the survivors writing into their buffer: the victim, folded out, has
    // rank 1's offer of the result, and reads what rank 1 wrote when it wakes.
    matrix.push_back(
        {"recursive_doubling", SIGSTOP, true, 3, 0, false, false, true, false, false, true});
    // The same over the network: the victim, folded out on the other node, has rank 1's result
    // in its socket, in part; the rest, read from the buffer as rank 1 rewrote it, arrives when
    // it wakes (zero-copy over TCP), followed by the seal, broken.
    matrix.push_back(
        {"recursive_doubling", SIGSTOP, true, 3, 2, true, false, true, false, false, true});
  }
  std::printf("COLLX_TIMEOUT=%g s; fault at collective #%d\n", kTimeout, kFaultAt);
  std::printf("| algorithm | fault | when | ranks | victim | survivors: status, time to error "
              "| worst | destroy | result |\n|---|---|---|---|---|---|---|---|---|\n");
  // A scenario that fails is run up to twice more, and fails only if every run fails (all
  // rows are printed): a rank stopped in the middle of a send into UCX 1.13's shared-memory
  // FIFO blocks that FIFO for the other senders, and the survivors time out
  // (docs/RELIABILITY.md). (A crash of UCX's TCP transport on peer failure, once the other
  // reason for a second run, went away when communicators began to share endpoints.)
  constexpr int kRuns = 3;
  int failed = 0, retried = 0;
  for (const Scenario& sc : matrix) {
    setenv("COLLX_ALLREDUCE_ALGO", sc.algo.c_str(), 1);
    bool ok = run_scenario(sc);
    if (!ok) ++retried;
    for (int run = 1; !ok && run < kRuns; ++run) {
      std::printf("  (failed: running it again)\n");
      ok = run_scenario(sc);
    }
    if (!ok) ++failed;
  }
  std::printf("%d scenario(s) needed more than one run\n", retried);
  // Shared memory: the segments are memfds with no name, so even the jobs whose ranks died
  // left nothing behind in /dev/shm.
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "collx-", 6) == 0) {
        std::printf("FAIL: /dev/shm/%s left behind\n", e->d_name);
        ++failed;
      }
    }
    closedir(d);
  }
  std::printf("%d of %zu scenarios failed\n", failed, matrix.size());
  return failed == 0 ? 0 : 1;
}
