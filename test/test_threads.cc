// What the C API allows from several threads (collx.h, "Threads"), over real UCX
// communicators whose ranks are threads of this process: an in-process out-of-band allgather
// bootstraps them, and UCX carries the messages between the threads' endpoints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collx/collx.h"
#include "common/inproc.h"  // TCHECK, core/comm.h
#include "common/scoped_env.h"
#include "core/context.h"

using collx::test::ScopedEnv;

namespace {

// Allgather among the p threads that share one Board.
struct Board {
  explicit Board(int p) : size(p), slots(p) {}
  int size;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t arrived = 0, generation = 0;
  std::vector<std::vector<char>> slots;
};

struct Member {
  Board* board;
  int rank;
  std::barrier<>* gate = nullptr;  // if set, waited on in the first allgather
};

// Waits until every member has arrived (lk holds b.mu).
void rendezvous(Board& b, std::unique_lock<std::mutex>& lk) {
  const uint64_t gen = b.generation;
  if (++b.arrived == static_cast<uint64_t>(b.size)) {
    b.arrived = 0;
    ++b.generation;
    b.cv.notify_all();
  } else {
    b.cv.wait(lk, [&] { return b.generation != gen; });
  }
}

int board_allgather(const void* send, void* recv, size_t bytes, void* ctx) {
  auto* m = static_cast<Member*>(ctx);
  if (m->gate != nullptr) std::exchange(m->gate, nullptr)->arrive_and_wait();
  Board& b = *m->board;
  std::unique_lock<std::mutex> lk(b.mu);
  b.slots[m->rank].assign(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
  rendezvous(b, lk);
  for (int i = 0; i < b.size; ++i) {
    std::memcpy(static_cast<char*>(recv) + i * bytes, b.slots[i].data(), bytes);
  }
  rendezvous(b, lk);  // nobody overwrites a slot before everyone has read it
  return 0;
}

// Creates `n` communicators of p ranks each, whose ranks are threads, all n * p creations at
// once; returns comms[k][rank]. With `gate` (for n * p threads), every rank's first
// allgather waits until all have made their first id proposal.
// `errors`, if given, receives each rank's status and collx_last_error() (failures allowed).
struct Outcome {
  collx_status_t status = COLLX_SUCCESS;
  std::string message;
};
std::vector<std::vector<collx_comm_t>> make_thread_comms(
    int n, int p, std::barrier<>* gate = nullptr,
    std::vector<std::vector<Outcome>>* outcomes = nullptr) {
  std::vector<std::unique_ptr<Board>> boards;
  std::vector<std::vector<collx_comm_t>> comms(n, std::vector<collx_comm_t>(p, nullptr));
  std::vector<Member> members(static_cast<size_t>(n * p));
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k) {
    boards.push_back(std::make_unique<Board>(p));
    for (int r = 0; r < p; ++r) members[k * p + r] = Member{boards[k].get(), r, gate};
  }
  for (int k = 0; k < n; ++k) {
    for (int r = 0; r < p; ++r) {
      threads.emplace_back([&, k, r] {
        collx_comm_params_t params{r, p, board_allgather, &members[k * p + r]};
        const collx_status_t st = collx_comm_create(&params, &comms[k][r]);
        if (outcomes != nullptr) {
          (*outcomes)[k][r] = Outcome{st, st == COLLX_SUCCESS ? "" : collx_last_error()};
        } else {
          TCHECK(st == COLLX_SUCCESS);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  return comms;
}

std::vector<collx_comm_t> make_thread_comm(int p) { return make_thread_comms(1, p)[0]; }

// A communicator whose rank r is a thread that believes it runs on node nodes[r]
// (COLLX_NODE). Ranks on different nodes share no memory, so whatever they tell each other
// goes through UCX (the ranks of one node may share a segment: hierarchical). A creation reads the environment before its first allgather, so each
// rank starts only once the one before it is waiting there: no thread reads the environment
// while this one changes it.
std::vector<collx_comm_t> make_thread_comm_on_nodes(const std::vector<std::string>& nodes) {
  const int p = static_cast<int>(nodes.size());
  Board board(p);
  std::vector<std::unique_ptr<std::barrier<>>> configured;
  std::vector<Member> members;
  for (int r = 0; r < p; ++r) {
    configured.push_back(std::make_unique<std::barrier<>>(2));
    members.push_back(Member{&board, r, configured.back().get()});
  }
  std::vector<collx_comm_t> comms(p, nullptr);
  std::vector<std::thread> threads;
  {
    ScopedEnv node("COLLX_NODE", "");  // for its destructor: the loop sets each rank's value
    for (int r = 0; r < p; ++r) {
      setenv("COLLX_NODE", nodes[r].c_str(), 1);
      threads.emplace_back([&, r] {
        collx_comm_params_t params{r, p, board_allgather, &members[r]};
        const collx_status_t st = collx_comm_create(&params, &comms[r]);
        TCHECK(st == COLLX_SUCCESS);
      });
      configured[r]->arrive_and_wait();  // rank r has read its configuration
    }
  }
  for (auto& t : threads) t.join();
  return comms;
}

void destroy_thread_comm(std::vector<collx_comm_t>& comms) {
  std::vector<std::thread> threads;
  for (collx_comm_t c : comms) {
    threads.emplace_back([c] {
      const collx_status_t st = collx_comm_destroy(c);
      TCHECK(st == COLLX_SUCCESS);
    });
  }
  for (auto& t : threads) t.join();
}

// Every rank of every communicator reduces in its own thread, all at once: eager and
// rendezvous sizes, blocking and non-blocking, each result checked.
void drive_at_once(const std::vector<std::vector<collx_comm_t>>& comms) {
  constexpr int kIters = 60;
  std::vector<std::thread> threads;
  for (size_t k = 0; k < comms.size(); ++k) {
    for (size_t r = 0; r < comms[k].size(); ++r) {
      threads.emplace_back([&, k, r] {
        const auto p = static_cast<int64_t>(comms[k].size());
        std::vector<int64_t> buf;
        for (int i = 0; i < kIters; ++i) {
          const size_t count = (i % 3 == 0) ? 300000 : static_cast<size_t>(1 + 37 * i);
          const int64_t base = 10 * static_cast<int64_t>(k) + i;
          buf.assign(count, static_cast<int64_t>(r) + base);
          collx_status_t st;
          if (i % 2 == 0) {
            st = collx_allreduce(COLLX_IN_PLACE, buf.data(), count, COLLX_INT64, COLLX_SUM,
                                 comms[k][r]);
          } else {
            collx_request_t req = nullptr;
            st = collx_iallreduce(COLLX_IN_PLACE, buf.data(), count, COLLX_INT64, COLLX_SUM,
                                  comms[k][r], &req);
            if (st == COLLX_SUCCESS) st = collx_wait(&req);
          }
          const int64_t want = p * (p - 1) / 2 + p * base;
          TCHECK(st == COLLX_SUCCESS);
          TCHECK(buf.front() == want);
          TCHECK(buf.back() == want);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
}

bool says(const char* needle) {
  return std::string(collx_last_error()).find(needle) != std::string::npos;
}

struct Init {
  Init() { REQUIRE(collx_init() == COLLX_SUCCESS); }
  ~Init() { collx_finalize(); }
};

}  // namespace

TEST_CASE("a second thread using a busy communicator gets an error", "[threads]") {
  Init init;
  std::vector<collx_comm_t> comms = make_thread_comm(2);
  std::vector<int32_t> a(1000, 1), b(1000, 2);
  std::atomic<bool> entered{false};
  collx_status_t first = COLLX_ERR_INTERNAL;
  std::thread rank0([&] {
    entered = true;
    first = collx_allreduce(COLLX_IN_PLACE, a.data(), a.size(), COLLX_INT32, COLLX_SUM, comms[0]);
  });
  while (!entered) std::this_thread::yield();
  // rank 0's call waits for rank 1, which has not called yet: comms[0] is busy.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int32_t x = 5;
  CHECK(collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_INT32, COLLX_SUM, comms[0]) ==
        COLLX_ERR_INVALID_ARG);
  CHECK(says("in use by another thread"));
  collx_request_t req = nullptr;
  CHECK(collx_iallreduce(COLLX_IN_PLACE, &x, 1, COLLX_INT32, COLLX_SUM, comms[0], &req) ==
        COLLX_ERR_INVALID_ARG);
  CHECK(req == nullptr);
  CHECK(collx_comm_destroy(comms[0]) == COLLX_ERR_INVALID_ARG);
  CHECK(says("in use by another thread"));
  // Queries are allowed while another thread is inside a call.
  int rank = -1, size = -1;
  CHECK(collx_comm_rank(comms[0], &rank) == COLLX_SUCCESS);
  CHECK(collx_comm_size(comms[0], &size) == COLLX_SUCCESS);
  CHECK(rank == 0);
  CHECK(size == 2);
  CHECK(collx_comm_algorithm(comms[0], 4) != nullptr);
  CHECK(x == 5);
  // Now rank 1 joins and rank 0's call completes normally.
  CHECK(collx_allreduce(COLLX_IN_PLACE, b.data(), b.size(), COLLX_INT32, COLLX_SUM, comms[1]) ==
        COLLX_SUCCESS);
  rank0.join();
  CHECK(first == COLLX_SUCCESS);
  CHECK(a[999] == 3);
  CHECK(b[0] == 3);
  destroy_thread_comm(comms);
}

TEST_CASE("different communicators are driven from different threads at once", "[threads]") {
  Init init;
  std::vector<std::vector<collx_comm_t>> comms;
  for (int k = 0; k < 3; ++k) comms.push_back(make_thread_comm(2));
  drive_at_once(comms);
  for (auto& c : comms) destroy_thread_comm(c);
}

TEST_CASE("communicators created at once from different threads get distinct ids",
          "[threads]") {
  Init init;
  constexpr int kComms = 3, kRanks = 2;
  // Every rank proposes an id before any reserves one, so the three creations first agree on
  // the same id, and at least two of them must try again above it.
  std::barrier<> gate(kComms * kRanks);
  collx::CommIds& process_ids = collx::Context::get()->ids;
  const uint64_t refused = process_ids.refused();
  std::vector<std::vector<collx_comm_t>> comms = make_thread_comms(kComms, kRanks, &gate);
  // Of the three, one reserved the id first agreed; each rank of the other two was refused it.
  CHECK(process_ids.refused() - refused >= 2 * kRanks);
  std::vector<uint16_t> ids;
  for (const auto& c : comms) {
    const uint16_t id = reinterpret_cast<const collx::Comm*>(c[0])->id();
    for (collx_comm_t rank : c) CHECK(reinterpret_cast<const collx::Comm*>(rank)->id() == id);
    CHECK(std::find(ids.begin(), ids.end(), id) == ids.end());
    ids.push_back(id);
  }
  drive_at_once(comms);  // messages of one communicator never reach another
  for (auto& c : comms) destroy_thread_comm(c);
  // Destroying releases the ids (the ranks of one communicator held each one together).
  for (uint16_t id : ids) {
    CHECK(process_ids.reserve(id, 12345));
    process_ids.release(id, 12345);
  }
}

TEST_CASE("creations that still collide at the deadline fail together, holding no id",
          "[threads]") {
  Init init;
  constexpr int kComms = 3, kRanks = 2;
  std::barrier<> gate(kComms * kRanks);
  std::vector<std::vector<Outcome>> outcomes(kComms, std::vector<Outcome>(kRanks));
  std::vector<std::vector<collx_comm_t>> comms;
  {
    ScopedEnv timeout("COLLX_TIMEOUT", "1e-9");  // out of time at the first collision
    comms = make_thread_comms(kComms, kRanks, &gate, &outcomes);
  }
  int out_of_ids = 0;
  for (int k = 0; k < kComms; ++k) {
    const bool no_id =
        outcomes[k][0].message.find("no communicator id free in every member's process") !=
        std::string::npos;
    if (no_id) {  // the ranks of a creation agree on its id together: both fail alike
      ++out_of_ids;
      CHECK(outcomes[k][0].status == COLLX_ERR_TIMEOUT);
      CHECK(outcomes[k][1].status == COLLX_ERR_TIMEOUT);
      CHECK(outcomes[k][1].message.find("no communicator id free") != std::string::npos);
    }
    // The one that reserved the id first may still time out later, in its wireup: the rank
    // that ran out of time says so in the status round, and its peer fails too, naming it
    // (COLLX_ERR_PEER_FAILED). Both ranks get the communicator or neither does. Each rank
    // that got one destroys it, which may time out too (it is freed all the same).
    INFO("communicator " << k << ": rank 0 " << outcomes[k][0].status << " '"
                         << outcomes[k][0].message << "', rank 1 " << outcomes[k][1].status
                         << " '" << outcomes[k][1].message << "'");
    CHECK((outcomes[k][0].status == COLLX_SUCCESS) == (outcomes[k][1].status == COLLX_SUCCESS));
    int own_failures = 0;  // a rank that failed for itself, not for its peer
    std::vector<std::thread> destroyers;
    for (int r = 0; r < kRanks; ++r) {
      const collx_status_t st = outcomes[k][r].status;
      CHECK((st == COLLX_SUCCESS || st == COLLX_ERR_TIMEOUT || st == COLLX_ERR_PEER_FAILED));
      own_failures += st == COLLX_ERR_TIMEOUT;
      if (st == COLLX_SUCCESS) destroyers.emplace_back([&, r] { collx_comm_destroy(comms[k][r]); });
    }
    if (outcomes[k][0].status != COLLX_SUCCESS) CHECK(own_failures >= 1);
    for (auto& t : destroyers) t.join();
  }
  CHECK(out_of_ids >= kComms - 1);
  CHECK(collx::Context::get()->ids.propose(0) == 0);  // every id the creations tried is free
}

TEST_CASE("a request may be completed by another thread than the one that posted it",
          "[threads]") {
  Init init;
  std::vector<collx_comm_t> comms = make_thread_comm(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> buf(5000, static_cast<float>(r + 1));
      collx_request_t req = nullptr;
      const collx_status_t posted = collx_iallreduce(
          COLLX_IN_PLACE, buf.data(), buf.size(), COLLX_FLOAT32, COLLX_SUM, comms[r], &req);
      TCHECK(posted == COLLX_SUCCESS);
      std::thread waiter([&] {
        const collx_status_t st = collx_wait(&req);
        TCHECK(st == COLLX_SUCCESS);
      });
      waiter.join();
      TCHECK(req == nullptr);
      TCHECK(buf[4999] == 3.0f);
    });
  }
  for (auto& t : threads) t.join();
  destroy_thread_comm(comms);
}

TEST_CASE("collx_init and collx_finalize from several threads at once", "[threads]") {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 10; ++i) {
        const collx_status_t init = collx_init();
        TCHECK(init == COLLX_SUCCESS);
        collx_comm_params_t p{0, 1,
                              [](const void* s, void* r, size_t n, void*) {
                                std::memcpy(r, s, n);
                                return 0;
                              },
                              nullptr};
        collx_comm_t c = nullptr;
        const collx_status_t created = collx_comm_create(&p, &c);
        int32_t x = t + i;
        const collx_status_t reduced =
            collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_INT32, COLLX_MAX, c);
        const collx_status_t destroyed = collx_comm_destroy(c);
        const collx_status_t finalized = collx_finalize();
        TCHECK(created == COLLX_SUCCESS);
        TCHECK(reduced == COLLX_SUCCESS);
        TCHECK(x == t + i);
        TCHECK(destroyed == COLLX_SUCCESS);
        TCHECK(finalized == COLLX_SUCCESS);
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST_CASE("over UCX, thread ranks on nodes of 2, 1 and 1: each group across nodes its own tags",
          "[threads]") {
  // Hierarchical with two blocks: ranks 2 and 3, alone on their nodes, own both and run both
  // groups across nodes, {0, 2, 3} then {1, 2, 3}, with the same steps. Ranks 0 and 1 are
  // threads of this process and so share its UCX worker: only the lanes in the tags tell
  // which of them a message from rank 2 or 3 is for (without them, block 1 reached rank 0).
  Init init;
  std::vector<collx_comm_t> comms = make_thread_comm_on_nodes({"a", "a", "b", "c"});
  const int p = static_cast<int>(comms.size());
  REQUIRE(std::string(collx_comm_algorithm(comms[0], 1 << 20)) == "hierarchical");
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      // Counts whose blocks differ in size (so a message meant for the other group would be a
      // mismatch, not a silent swap), eager and rendezvous, in place and not.
      for (size_t count : {size_t{2101}, size_t{40001}, size_t{300001}}) {
        for (bool in_place : {true, false}) {
          std::vector<int64_t> send(count), recv(count, -1);
          for (size_t i = 0; i < count; ++i) send[i] = static_cast<int64_t>(i) * 10 + r;
          if (in_place) recv = send;
          const collx_status_t st =
              collx_allreduce(in_place ? COLLX_IN_PLACE : send.data(), recv.data(), count,
                              COLLX_INT64, COLLX_SUM, comms[r]);
          TCHECK(st == COLLX_SUCCESS);
          bool ok = true;
          for (size_t i = 0; i < count; ++i) {
            ok = ok && recv[i] == static_cast<int64_t>(i) * 10 * p + p * (p - 1) / 2;
          }
          TCHECK(ok);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  destroy_thread_comm(comms);
}

TEST_CASE("over UCX, ranks on two nodes announce what they started: their tests run it",
          "[threads]") {
  // Thread ranks 0 and 2 on node a, 1 on node b: no shared segment, so a test learns that every
  // peer started an operation only from the peers' announcements (UCX messages). Neither the
  // worker's watch period nor a test's grace period ends, so if the announcements did not
  // arrive, no operation would complete; had the tests handed them over, the tests would have
  // run none of them. Every operation is deferred (COLLX_ASYNC_MIN), so only tests start them.
  Init init;
  constexpr int kRanks = 3, kOps = 5;
  constexpr auto kNever = std::chrono::hours(1);
  std::vector<collx_comm_t> comms;
  {
    ScopedEnv deferred("COLLX_ASYNC_MIN", "1G");
    comms = make_thread_comm_on_nodes({"a", "b", "a"});
  }
  for (collx_comm_t c : comms) {
    auto* comm = reinterpret_cast<collx::Comm*>(c);
    comm->set_watch_period(kNever);
    comm->set_test_grace(kNever);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::vector<int32_t>> bufs;
      std::vector<collx_request_t> reqs(kOps, nullptr);
      for (int k = 0; k < kOps; ++k) {
        bufs.emplace_back(static_cast<size_t>(1 + 700 * k), r + k);
        const collx_status_t st = collx_iallreduce(COLLX_IN_PLACE, bufs[k].data(), bufs[k].size(),
                                                   COLLX_INT32, COLLX_SUM, comms[r], &reqs[k]);
        TCHECK(st == COLLX_SUCCESS);
      }
      // Rank 1 tests the operations in reverse order (testing the last starts all before it).
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (int i = 0; i < kOps; ++i) {
        const int k = r == 1 ? kOps - 1 - i : i;
        collx_status_t st = COLLX_IN_PROGRESS;
        while (st == COLLX_IN_PROGRESS && std::chrono::steady_clock::now() < end) {
          st = collx_test(&reqs[k]);
        }
        TCHECK(st == COLLX_SUCCESS);
      }
      for (int k = 0; k < kOps; ++k) {
        const int32_t want = 0 + 1 + 2 + kRanks * k;
        TCHECK(std::all_of(bufs[k].begin(), bufs[k].end(), [&](int32_t v) { return v == want; }));
      }
      const uint64_t by_tests = reinterpret_cast<collx::Comm*>(comms[r])->ops_run_by_tests();
      TCHECK(by_tests == static_cast<uint64_t>(kOps));
    });
  }
  for (auto& t : threads) t.join();
  destroy_thread_comm(comms);
}
