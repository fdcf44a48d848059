// The UCX worker's endpoints: one per peer process, shared by the communicators with it, kept
// after the last of them for the next (closing one gracefully waits for the peer to answer),
// closed at once only after an error; its protocol where TCP is the only network; and the
// messages no receive matched, taken out before it is destroyed; the seal of Guarded messages
// within a node.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/scoped_env.h"
#include "transport/ucx.h"

using namespace collx;

namespace {

std::unique_ptr<UcxWorker> make_worker() {
  UcxWorker* w = nullptr;
  REQUIRE(UcxWorker::create(&w).ok());
  return std::unique_ptr<UcxWorker>(w);
}

// Closes w's endpoint on `a` at once (as after an error) and waits for the close.
void close_at_once(UcxWorker* a, PeerWatch* w) {
  void* closing = nullptr;
  {
    LockGuard g(*a);
    closing = a->release_endpoint(w, true);
  }
  std::vector<void*> reqs{closing};
  ucs_status_t failure = UCS_OK;
  a->complete_all(reqs, 5, &failure);
}

}  // namespace

TEST_CASE("UCX endpoints: shared, kept after their last user, closed at once after an error",
          "[ucx]") {
  std::unique_ptr<UcxWorker> owned_a = make_worker(), owned_b = make_worker();
  UcxWorker* a = owned_a.get();
  UcxWorker* b = owned_b.get();
  PeerWatch* w = nullptr;
  ucp_ep_h first = nullptr, other = nullptr;
  void* closing = nullptr;
  {
    LockGuard g(*a);
    w = a->watch(b->address(), 0);  // b as a peer on another node (peer error mode)
    REQUIRE(a->endpoint(w, b->address(), false, &first).ok());
    REQUIRE(a->endpoint(w, b->address(), false, &other).ok());
    CHECK(other == first);  // one endpoint per peer, however many communicators
    CHECK(a->release_endpoint(w, false) == nullptr);
    CHECK(a->release_endpoint(w, false) == nullptr);  // the last user: nothing to wait for
    CHECK(w->ep == first);                             // kept
    REQUIRE(a->endpoint(w, b->address(), false, &other).ok());
    CHECK(other == first);  // the next communicator's
    closing = a->release_endpoint(w, true);  // its last user after an error: closed at once
    CHECK(w->ep == nullptr);
  }
  std::vector<void*> reqs{closing};
  ucs_status_t failure = UCS_OK;
  CHECK(a->complete_all(reqs, 5, &failure));
  {
    LockGuard g(*a);
    REQUIRE(a->endpoint(w, b->address(), false, &other).ok());  // opened anew
    CHECK(w->ep == other);
    CHECK(a->release_endpoint(w, false) == nullptr);  // kept again
    CHECK(w->ep == other);
  }
  // a's destructor closes the endpoint it kept, gracefully: b answers (its progress runs on
  // another thread, as a peer process finalizing at the same time would). Exercised, not
  // observed: nothing here sees the close itself (ASan's leak check sees what it frees).
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    while (!stop.load()) {
      LockGuard g(*b);
      ucp_worker_progress(b->worker());
    }
  });
  owned_a.reset();
  stop = true;
  peer.join();
}

TEST_CASE("UCX over TCP alone: every eager send is zero-copy, so none ends before the socket "
          "took it", "[ucx]") {
  // What ucp_context_print_info lists: this VM's resources, and others.
  const std::string vm =
      "#      resource 0  :  md 0  dev 0  flags -- self/memory0\n"
      "#      resource 1  :  md 1  dev 1  flags -- tcp/lo\n"
      "#      resource 2  :  md 1  dev 2  flags -- tcp/eth0\n"
      "#      resource 3  :  md 2  dev 3  flags -- sysv/memory\n"
      "#      resource 4  :  md 3  dev 3  flags -- posix/memory\n"
      "#      resource 5  :  md 4  dev 3  flags -- cma/memory\n";
  CHECK(tcp_is_the_only_network(vm));
  CHECK(tcp_is_the_only_network(  // GPU copies are not a network
      vm + "#      resource 6  :  md 5  dev 4  flags -- cuda_ipc/cuda\n"));
  CHECK_FALSE(tcp_is_the_only_network(
      vm + "#      resource 6  :  md 5  dev 4  flags -- rc_mlx5/mlx5_0:1\n"));
  CHECK_FALSE(tcp_is_the_only_network(
      vm + "#      resource 6  :  md 5  dev 4  flags -- ud_verbs/mlx5_0:1\n"));
  CHECK_FALSE(tcp_is_the_only_network(  // memory within the node only: no network at all
      "#      resource 0  :  md 0  dev 0  flags -- posix/memory\n"));
  CHECK_FALSE(tcp_is_the_only_network(""));

  // On this machine: an endpoint to a peer on another node (peer error mode) sends every
  // tagged message zero-copy where TCP is the only network, and as UCX chooses otherwise or
  // where UCX_ZCOPY_THRESH says.
  auto protocols = [](const char* zcopy_env, bool* zcopy_always) {
    collx::test::ScopedEnv env("UCX_ZCOPY_THRESH", zcopy_env);
    std::unique_ptr<UcxWorker> owned_a = make_worker(), owned_b = make_worker();
    UcxWorker* a = owned_a.get();
    UcxWorker* b = owned_b.get();
    *zcopy_always = a->zcopy_always();
    char* text = nullptr;
    size_t len = 0;
    PeerWatch* w = nullptr;
    {
      LockGuard g(*a);
      w = a->watch(b->address(), 0);
      ucp_ep_h ep = nullptr;
      REQUIRE(a->endpoint(w, b->address(), false, &ep).ok());
      FILE* f = open_memstream(&text, &len);
      REQUIRE(f != nullptr);
      ucp_ep_print_info(ep, f);
      fclose(f);
    }
    close_at_once(a, w);
    std::string info(text, len);
    free(text);
    owned_a.reset();  // before b's listening socket closes: else a's connecting retries, loudly
    return info;
  };
  bool zcopy_always = false;
  const std::string chosen = protocols(nullptr, &zcopy_always);
  if (!zcopy_always) {
    WARN("this machine has a network besides TCP: UCX's own protocol choice is kept");
  } else {
    INFO(chosen);
    CHECK(chosen.find("tag_send: 0..<egr/zcopy>") != std::string::npos);
    CHECK(chosen.find("egr/short") == std::string::npos);
  }
  const std::string set = protocols("8k", &zcopy_always);
  CHECK_FALSE(zcopy_always);  // the user's UCX_ZCOPY_THRESH stands
  INFO(set);
  CHECK(set.find("tag_send: 0..<egr/zcopy>") == std::string::npos);
}

TEST_CASE("UCX worker: messages no receive matched are taken out before it is destroyed",
          "[ucx]") {
  std::unique_ptr<UcxWorker> owned_a = make_worker(), owned_b = make_worker();
  UcxWorker* a = owned_a.get();
  UcxWorker* b = owned_b.get();
  // Three messages from a to b that b never receives: sizes below and above UCX's short and
  // zero-copy thresholds, different tags.
  const std::vector<size_t> sizes{8, 700, 64 << 10};
  std::vector<std::vector<char>> bufs;
  std::vector<void*> sends;
  PeerWatch* w = nullptr;
  {
    LockGuard g(*a);
    w = a->watch(b->address(), 0);
    ucp_ep_h ep = nullptr;
    REQUIRE(a->endpoint(w, b->address(), false, &ep).ok());
    for (size_t i = 0; i < sizes.size(); ++i) {
      bufs.emplace_back(sizes[i], static_cast<char>(i));
      ucp_request_param_t p{};
      void* req = ucp_tag_send_nbx(ep, bufs[i].data(), sizes[i], 0x1234 + i, &p);
      REQUIRE_FALSE(UCS_PTR_IS_ERR(req));
      sends.push_back(req);
    }
  }
  // a's sends and b's dropping progress each other (a's on another thread, as a peer's own;
  // its results are checked after the join: Catch's assertions are for one thread at a time).
  std::atomic<bool> stop{false};
  bool sent = false;
  ucs_status_t failure = UCS_OK;
  std::thread peer([&] {
    sent = a->complete_all(sends, 5, &failure);
    while (!stop.load()) {
      LockGuard g(*a);
      ucp_worker_progress(a->worker());
    }
  });
  size_t dropped = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (dropped < sizes.size() && std::chrono::steady_clock::now() < deadline) {
    dropped += b->drop_unexpected();  // (each call progresses b's worker, which wires up)
  }
  CHECK(dropped == sizes.size());
  CHECK(b->drop_unexpected() == 0);
  {
    LockGuard g(*b);
    ucp_tag_recv_info_t info{};
    CHECK(ucp_tag_probe_nb(b->worker(), 0, 0, 0, &info) == nullptr);  // none left
  }
  stop = true;
  peer.join();
  CHECK(sent);
  CHECK(failure == UCS_OK);
  close_at_once(a, w);
}

// Sent as UcxTransport::post sends a Guarded (UcxWorker::send_guarded): within a node through
// the generic datatype, over the network as an IOV of the buffer and the seal.
TEST_CASE("UCX messages end with a seal; one let go midway arrives with its seal broken by the "
          "sender's error (within a node: zeros after the let-go, never the buffer again)",
          "[ucx]") {
  const bool within_node = GENERATE(true, false);
  CAPTURE(within_node);
  std::unique_ptr<UcxWorker> owned_a = make_worker(), owned_b = make_worker();
  UcxWorker* a = owned_a.get();
  UcxWorker* b = owned_b.get();
  PeerWatch* w = nullptr;
  ucp_ep_h ep = nullptr;
  {
    LockGuard g(*a);
    w = a->watch(b->address(), 0);
    // b on this node (shared memory), or on another (peer error mode: TCP here)
    REQUIRE(a->endpoint(w, b->address(), within_node, &ep).ok());
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = a->guarded_datatype();
  // More than b's FIFO or the sockets' buffers hold: the rest waits in a until b drains them.
  const size_t n = within_node ? 4 << 20 : 32 << 20;
  std::vector<uint8_t> data(n);
  std::vector<uint8_t> got(n);
  for (const bool let_go : {false, true}) {
    CAPTURE(let_go);
    std::fill(data.begin(), data.end(), 0x5a);
    std::fill(got.begin(), got.end(), 0xff);
    Guarded send{nullptr, data.data(), n, false, kSealIntact, {}};
    Guarded recv{nullptr, got.data(), n, false, 0, {}};
    {
      LockGuard g(*a);
      send.req = a->send_guarded(ep, &send, !within_node, 7);
    }
    REQUIRE(UCS_PTR_IS_PTR(send.req));  // waiting for b
    if (let_go) {  // as UcxTransport::cancel does; then the caller has its buffer back
      send.seal = broken_seal(COLLX_ERR_TIMEOUT, 3);
      send.let_go = true;
      std::fill(data.begin(), data.end(), 0x77);
    }
    ucp_request_param_t rp = p;
    rp.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    {
      LockGuard g(*b);
      recv.req = ucp_tag_recv_nbx(b->worker(), &recv, 1, 7, ~ucp_tag_t{0}, &rp);
    }
    REQUIRE(UCS_PTR_IS_PTR(recv.req));
    ucs_status_t sent = UCS_INPROGRESS, received = UCS_INPROGRESS;
    ucp_tag_recv_info_t info{};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((sent == UCS_INPROGRESS || received == UCS_INPROGRESS) &&
           std::chrono::steady_clock::now() < deadline) {
      {
        LockGuard g(*a);
        ucp_worker_progress(a->worker());
        sent = ucp_request_check_status(send.req);
      }
      LockGuard g(*b);
      ucp_worker_progress(b->worker());
      received = ucp_tag_recv_request_test(recv.req, &info);
    }
    REQUIRE(sent == UCS_OK);
    REQUIRE(received == UCS_OK);
    ucp_request_free(send.req);
    ucp_request_free(recv.req);
    CHECK(info.length == n + kSealBytes);
    const size_t real = std::find_if(got.begin(), got.end(), [](uint8_t v) { return v != 0x5a; }) -
                        got.begin();
    if (!let_go) {
      CHECK(recv.seal == kSealIntact);
      CHECK(real == n);
    } else {
      CHECK(recv.seal == broken_seal(COLLX_ERR_TIMEOUT, 3));  // the sender's code, rank
      CHECK(real < n);  // what left before the let-go, then
      const uint8_t after = within_node ? 0 : 0x77;  // zeros, or the buffer as it now is
      CHECK(std::all_of(got.begin() + real, got.end(), [&](uint8_t v) { return v == after; }));
      if (within_node) CHECK(real > 0);  // (b's FIFO took the first part at once)
    }
  }
  close_at_once(a, w);
}

// A failure passed on through seals: rank 0 knows rank 3 failed and lets go of its message to
// rank 1; rank 1, which has seen no failure itself, fails on that message and lets go of its
// own to rank 2. Rank 2 must still learn that rank 3 failed (the fault test's ring, where a
// survivor two hops away from the dead rank may read a broken seal before it sees the death).
TEST_CASE("UCX: a failed rank named in a broken seal is passed on in the seals broken after it",
          "[ucx]") {
  constexpr int kRanks = 4;
  const size_t n = 4 << 20;  // more than a FIFO holds: each send waits for its receiver
  std::vector<std::unique_ptr<UcxWorker>> workers;
  std::vector<PeerInfo> peers(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    workers.push_back(make_worker());
    peers[r].address = workers[r]->address();
    peers[r].node = 1;  // one node: shared memory, the processes watched through pidfds
    peers[r].pid = getpid();
  }
  std::atomic<int> phase{0};  // 1: rank 0 let go; 2: rank 1 let go; 3: rank 2 done
  std::string messages[kRanks];
  auto rank_main = [&](int r) {
    UcxTransport* t = nullptr;
    if (!UcxTransport::create(*workers[r], r, kRanks, 1, peers, 1, SIZE_MAX, 10, &t).ok()) {
      messages[r] = "create failed";
      phase = 3;
      return;
    }
    std::vector<uint8_t> out(n, 0x5a), in(n, 0xff);
    Handle h = 0;
    t->begin_op(1, 10, 0);
    if (r == 0) {
      {
        LockGuard g(*workers[0]);
        workers[0]->watch(peers[3].address, getpid())->fail(UCS_ERR_CONNECTION_RESET);
      }
      const Status posted = t->isend(1, 0, out.data(), n);
      messages[r] =
          t->end_op(posted.ok() ? Status(COLLX_ERR_PEER_FAILED, "rank 3") : posted).message();
      phase = 1;
    } else if (r == 1 || r == 2) {
      while (phase.load() < r) sched_yield();
      Status st = t->irecv(r - 1, 0, in.data(), n, &h);
      if (st.ok() && r == 1) st = t->isend(2, 0, out.data(), n);
      if (st.ok()) st = t->wait(h);
      messages[r] = t->end_op(st).message();
      phase = r == 2 ? 3 : 2;
    }
    while (phase.load() < 3) {  // the messages let go still drain (zeros after the let-go)
      LockGuard g(*workers[r]);
      ucp_worker_progress(workers[r]->worker());
    }
    t->mark_failed();
    delete t;
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank_main, r);
  for (std::thread& th : threads) th.join();
  INFO(messages[1] + "\n" + messages[2]);
  CHECK(messages[1].find("rank 3 failed (as the sender saw)") != std::string::npos);
  CHECK(messages[2].find("rank 3 failed (as the sender saw)") != std::string::npos);
  CHECK(messages[2].find("receive from rank 1") != std::string::npos);
}
