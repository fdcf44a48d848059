// Argument validation of every public entry point. Uses real one-rank communicators over UCX.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "common/scoped_env.h"
#include "memory/cuda_driver.h"

using collx::test::ScopedEnv;

namespace {

int self_allgather(const void* send, void* recv, size_t bytes, void*) {
  std::memcpy(recv, send, bytes);
  return 0;
}
int failing_allgather(const void*, void*, size_t, void*) { return 7; }
// Pretends to be rank 0 of 2 but returns garbage for rank 1.
int garbage_allgather(const void* send, void* recv, size_t bytes, void*) {
  std::memcpy(recv, send, bytes);
  std::memset(static_cast<char*>(recv) + bytes, 0x5a, bytes);
  return 0;
}

collx_comm_t make_self() {
  collx_comm_params_t p{0, 1, self_allgather, nullptr};
  collx_comm_t c = nullptr;
  REQUIRE(collx_comm_create(&p, &c) == COLLX_SUCCESS);
  return c;
}

bool says(const char* needle) { return std::string(collx_last_error()).find(needle) != std::string::npos; }

struct Init {
  Init() { REQUIRE(collx_init() == COLLX_SUCCESS); }
  ~Init() { collx_finalize(); }
};

}  // namespace

TEST_CASE("status strings and names") {
  for (int s = COLLX_ERR_INTERNAL; s <= COLLX_IN_PROGRESS; ++s) {
    CHECK(std::string(collx_strerror(static_cast<collx_status_t>(s))) != "unknown status");
  }
  CHECK(std::string(collx_strerror(static_cast<collx_status_t>(-100))) == "unknown status");
  CHECK(std::string(collx_dtype_name(COLLX_BFLOAT16)) == "bfloat16");
  CHECK(collx_dtype_size(COLLX_FLOAT64) == 8);
  CHECK(collx_dtype_size(static_cast<collx_dtype_t>(42)) == 0);
  CHECK(std::string(collx_op_name(COLLX_BXOR)) == "bxor");
  CHECK(std::string(collx_version_string()).find("0.1.0") != std::string::npos);
}

TEST_CASE("calls before collx_init fail cleanly") {
  CHECK(collx_finalize() == COLLX_ERR_NOT_INITIALIZED);
  collx_comm_params_t p{0, 1, self_allgather, nullptr};
  collx_comm_t c = nullptr;
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_NOT_INITIALIZED);
  CHECK(says("collx_init"));
  CHECK(c == nullptr);
}

TEST_CASE("collx_init: a UCX that cannot start is an error, and a later init works") {
  {
    ScopedEnv tls("UCX_TLS", "no-such-transport");
    CHECK(collx_init() == COLLX_ERR_TRANSPORT);
    CHECK(says("UCX could not start: ucp_init failed"));
    CHECK(says("UCX_TLS"));
    CHECK(collx_init() == COLLX_ERR_TRANSPORT);  // nothing was left half made
    CHECK(collx_finalize() == COLLX_ERR_NOT_INITIALIZED);
  }
  REQUIRE(collx_init() == COLLX_SUCCESS);
  collx_comm_t c = make_self();
  float x = 2;
  CHECK(collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_SUCCESS);
  CHECK(x == 2);
  CHECK(collx_comm_destroy(c) == COLLX_SUCCESS);
  CHECK(collx_finalize() == COLLX_SUCCESS);
}

TEST_CASE("collx_comm_create validates its arguments") {
  Init init;
  collx_comm_t c = nullptr;
  collx_comm_params_t p{0, 1, self_allgather, nullptr};
  CHECK(collx_comm_create(nullptr, &c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("params"));
  CHECK(collx_comm_create(&p, nullptr) == COLLX_ERR_INVALID_ARG);
  p.size = 0;
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_INVALID_ARG);
  p = {1, 1, self_allgather, nullptr};
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("rank 1 / size 1"));
  p = {-1, 4, self_allgather, nullptr};
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_INVALID_ARG);
  p = {0, 1, nullptr, nullptr};
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("allgather"));
  p = {0, 1, failing_allgather, nullptr};
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_TRANSPORT);
  CHECK(says("(7)"));
  p = {0, 2, garbage_allgather, nullptr};
  CHECK(collx_comm_create(&p, &c) == COLLX_ERR_MISMATCH);
  CHECK(says("rank 1"));
  CHECK(c == nullptr);
}

TEST_CASE("bad configuration is an error at communicator creation") {
  Init init;
  collx_comm_params_t p{0, 1, self_allgather, nullptr};
  collx_comm_t c = nullptr;
  {
    ScopedEnv tune("COLLX_TUNE", "0-4K:ring,4K-inf:bogus");
    CHECK(collx_comm_create(&p, &c) == COLLX_ERR_CONFIG);
    CHECK(says("4K-inf:bogus"));
  }
  {
    ScopedEnv unknown("COLLX_NOT_A_VARIABLE", "1");
    CHECK(collx_comm_create(&p, &c) == COLLX_ERR_CONFIG);
    CHECK(says("COLLX_NOT_A_VARIABLE"));
  }
  {
    ScopedEnv algo("COLLX_ALLREDUCE_ALGO", "ring");
    REQUIRE(collx_comm_create(&p, &c) == COLLX_SUCCESS);
  }
  CHECK(std::string(collx_comm_algorithm(c, 4)) == "ring");
  CHECK(collx_comm_destroy(c) == COLLX_SUCCESS);
}

TEST_CASE("collx_allreduce and collx_iallreduce validate their arguments") {
  Init init;
  collx_comm_t c = make_self();
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {};
  CHECK(collx_allreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, nullptr) == COLLX_ERR_INVALID_ARG);
  CHECK(says("comm is NULL"));
  CHECK(collx_allreduce(nullptr, b, 8, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("sendbuf"));
  CHECK(collx_allreduce(a, nullptr, 8, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("recvbuf"));
  void* const in_place = const_cast<void*>(COLLX_IN_PLACE);  // (it would be written at -1)
  CHECK(collx_allreduce(a, in_place, 8, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("recvbuf is COLLX_IN_PLACE"));
  CHECK(collx_allreduce(COLLX_IN_PLACE, in_place, 8, COLLX_FLOAT32, COLLX_SUM, c) ==
        COLLX_ERR_INVALID_ARG);
  CHECK(collx_allreduce(COLLX_IN_PLACE, in_place, 0, COLLX_FLOAT32, COLLX_SUM, c) ==
        COLLX_SUCCESS);  // (nothing to write)
  CHECK(collx_allreduce(nullptr, nullptr, 0, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_SUCCESS);
  CHECK(collx_allreduce(a, b, SIZE_MAX / 2, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("overflows"));
  CHECK(collx_allreduce(a, a + 1, 4, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("overlap"));
  CHECK(collx_allreduce(a, b, 8, static_cast<collx_dtype_t>(12), COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("dtype"));
  CHECK(collx_allreduce(a, b, 8, COLLX_FLOAT32, static_cast<collx_op_t>(8), c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("op"));
  CHECK(collx_allreduce(a, b, 8, COLLX_FLOAT32, COLLX_BAND, c) == COLLX_ERR_UNSUPPORTED);
  CHECK(collx_allreduce(a, b, 2, COLLX_INT32, COLLX_AVG, c) == COLLX_ERR_UNSUPPORTED);
  CHECK(std::memcmp(b, std::vector<float>(8, 0.f).data(), sizeof b) == 0);  // untouched

  // Valid calls: out-of-place, COLLX_IN_PLACE, sendbuf == recvbuf, adjacent buffers.
  CHECK(collx_allreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_SUCCESS);
  CHECK(b[7] == 8.f);
  CHECK(collx_allreduce(COLLX_IN_PLACE, a, 8, COLLX_FLOAT32, COLLX_MAX, c) == COLLX_SUCCESS);
  CHECK(collx_allreduce(a, a, 8, COLLX_FLOAT32, COLLX_MIN, c) == COLLX_SUCCESS);
  CHECK(collx_allreduce(a, a + 4, 4, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_SUCCESS);
  CHECK(a[4] == 1.f);
  CHECK(std::string(collx_last_error()).empty());

  collx_request_t r = nullptr;
  CHECK(collx_iallreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c, nullptr) == COLLX_ERR_INVALID_ARG);
  CHECK(collx_iallreduce(a, a + 1, 4, COLLX_FLOAT32, COLLX_SUM, c, &r) == COLLX_ERR_INVALID_ARG);
  CHECK(collx_iallreduce(a, in_place, 8, COLLX_FLOAT32, COLLX_SUM, c, &r) ==
        COLLX_ERR_INVALID_ARG);
  CHECK(r == nullptr);
  REQUIRE(collx_iallreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c, &r) == COLLX_SUCCESS);
  CHECK(collx_wait(&r) == COLLX_SUCCESS);
  CHECK(r == nullptr);
  CHECK(collx_wait(&r) == COLLX_ERR_INVALID_ARG);
  CHECK(collx_test(nullptr) == COLLX_ERR_INVALID_ARG);
  REQUIRE(collx_iallreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c, &r) == COLLX_SUCCESS);
  collx_status_t st;
  while ((st = collx_test(&r)) == COLLX_IN_PROGRESS) {}
  CHECK(st == COLLX_SUCCESS);

  // collx_allreduce_stream: the same validation; host buffers with the null stream work
  // anywhere; another stream needs a CUDA driver to wait on it.
  CHECK(collx_allreduce_stream(a, a + 1, 4, COLLX_FLOAT32, COLLX_SUM, c, nullptr) ==
        COLLX_ERR_INVALID_ARG);
  CHECK(says("collx_allreduce_stream"));
  CHECK(collx_allreduce_stream(a, in_place, 8, COLLX_FLOAT32, COLLX_SUM, c, nullptr) ==
        COLLX_ERR_INVALID_ARG);
  b[0] = 0;
  CHECK(collx_allreduce_stream(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c, nullptr) == COLLX_SUCCESS);
  CHECK(b[0] == a[0]);
  if (collx::cuda_memory_query() == nullptr) {
    auto* stream = reinterpret_cast<CUstream_st*>(uintptr_t{0x10});
    CHECK(collx_allreduce_stream(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c, stream) ==
          COLLX_ERR_UNSUPPORTED);
    CHECK(says("stream"));
  }

  int v = -1;
  CHECK(collx_comm_rank(c, &v) == COLLX_SUCCESS);
  CHECK(v == 0);
  CHECK(collx_comm_size(c, &v) == COLLX_SUCCESS);
  CHECK(v == 1);
  CHECK(collx_comm_rank(c, nullptr) == COLLX_ERR_INVALID_ARG);
  CHECK(collx_comm_size(nullptr, &v) == COLLX_ERR_INVALID_ARG);
  collx_comm_node_t node{-1, -1, -1, -1};
  CHECK(collx_comm_node(c, &node) == COLLX_SUCCESS);
  CHECK((node.node == 0 && node.nodes == 1 && node.local_rank == 0 && node.local_size == 1));
  CHECK(collx_comm_node(c, nullptr) == COLLX_ERR_INVALID_ARG);
  CHECK(says("collx_comm_node: node is NULL"));
  CHECK(collx_comm_node(nullptr, &node) == COLLX_ERR_INVALID_ARG);

  // Finalize refuses while a communicator lives; a destroyed communicator is rejected.
  CHECK(collx_finalize() == COLLX_ERR_INVALID_ARG);
  CHECK(says("still exist"));
  REQUIRE(collx_init() == COLLX_SUCCESS);  // undo the refused finalize's nothing: refs stay 1
  CHECK(collx_finalize() == COLLX_SUCCESS);
  CHECK(collx_comm_destroy(c) == COLLX_SUCCESS);
  CHECK(collx_comm_destroy(c) == COLLX_ERR_INVALID_ARG);
  CHECK(says("not a live communicator"));
  CHECK(collx_allreduce(a, b, 8, COLLX_FLOAT32, COLLX_SUM, c) == COLLX_ERR_INVALID_ARG);
  CHECK(collx_comm_algorithm(c, 8) == nullptr);
  CHECK(collx_comm_node(c, &node) == COLLX_ERR_INVALID_ARG);
}

TEST_CASE("several communicators at once, and repeated init/finalize") {
  for (int round = 0; round < 3; ++round) {
    Init init;
    collx_comm_t c1 = make_self(), c2 = make_self();
    int32_t x[3] = {1, 2, 3};
    CHECK(collx_allreduce(COLLX_IN_PLACE, x, 3, COLLX_INT32, COLLX_PROD, c1) == COLLX_SUCCESS);
    CHECK(collx_allreduce(COLLX_IN_PLACE, x, 3, COLLX_INT32, COLLX_BXOR, c2) == COLLX_SUCCESS);
    CHECK(x[2] == 3);
    CHECK(collx_comm_destroy(c1) == COLLX_SUCCESS);
    CHECK(collx_comm_destroy(c2) == COLLX_SUCCESS);
  }
}
