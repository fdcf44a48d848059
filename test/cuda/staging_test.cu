// Device buffers through collx_allreduce over real processes (`cuda_staging_test N` forks N
// ranks, bootstrapped through a shared-memory allgather: the GPU machine has no MPI):
// over CUDA IPC (the default within a node) or staged (COLLX_CUDA=0), with cudaMalloc'd
// buffers across the count x dtype x op x in-place matrix, bitwise against the exact
// reference and across ranks; collx_allreduce_stream ordered between copies queued on the
// caller's stream; a buffer freed and allocated again at the same address between calls;
// collx_iallreduce on device buffers; buffers inside a larger allocation, at offsets that
// differ by rank, and one off its element alignment (refused). Ranks share GPUs round robin,
// so several ranks per GPU is the usual case. Exits 77 (skipped) without a GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "common/board.h"
#include "common/cuda_ok.h"
#include "common/pattern.h"
#include "topo/node.h"

using namespace collx::test;

namespace {

int g_rank = 0, g_passed = 0, g_failed = 0;
Group* g_group = nullptr;

void expect(bool ok, const std::string& what) {
  if (ok) {
    ++g_passed;
  } else if (++g_failed <= 20) {
    std::fprintf(stderr, "rank %d: FAILED: %s (%s)\n", g_rank, what.c_str(), collx_last_error());
  }
}

bool same_everywhere(uint64_t h) {
  uint64_t all[kMaxRanks];
  if (board_allgather(&h, all, sizeof h, g_group) != 0) return false;
  for (int r = 0; r < g_group->size; ++r) {
    if (all[r] != h) return false;
  }
  return true;
}

void matrix(collx_comm_t comm, int p) {
  for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(p) + 1, size_t{1000},
                       size_t{70000} + 3}) {
    for (collx_dtype_t d : all_dtypes()) {
      for (collx_op_t op : all_ops()) {
        if (!op_valid(d, op)) continue;
        const size_t bytes = count * collx_dtype_size(d);
        std::vector<uint8_t> in(bytes), want(bytes), got(bytes + 64);
        fill_input(d, op, g_rank, count, in.data());
        fill_expected(d, op, p, count, want.data());
        for (bool in_place : {false, true}) {
          uint8_t *send = nullptr, *recv = nullptr;
          CUDA_OK(cudaMalloc(&send, bytes + 1));
          CUDA_OK(cudaMalloc(&recv, bytes + 64));
          CUDA_OK(cudaMemset(recv, 0xab, bytes + 64));
          CUDA_OK(cudaMemcpy(in_place ? recv : send, in.data(), bytes, cudaMemcpyHostToDevice));
          const collx_status_t st = collx_allreduce(in_place ? COLLX_IN_PLACE : send, recv,
                                                    count, d, op, comm);
          CUDA_OK(cudaMemcpy(got.data(), recv, bytes + 64, cudaMemcpyDeviceToHost));
          const std::string what = std::string(collx_dtype_name(d)) + " " + collx_op_name(op) +
                                   " count " + std::to_string(count) +
                                   (in_place ? " in place" : "");
          expect(st == COLLX_SUCCESS, what + ": status");
          expect(std::memcmp(got.data(), want.data(), bytes) == 0, what + ": result");
          expect(got[bytes] == 0xab && got[bytes + 63] == 0xab, what + ": guard bytes");
          got.resize(bytes);
          expect(same_everywhere(collx::fnv1a(got.data(), got.size())), what + ": identical on every rank");
          got.resize(bytes + 64);
          CUDA_OK(cudaFree(send));
          CUDA_OK(cudaFree(recv));
        }
      }
    }
  }
}

// The allreduce sits between an upload and a download queued on the caller's stream, with
// no synchronisation in between: the stream alone orders them.
void on_stream(collx_comm_t comm, int p) {
  const size_t count = (4u << 20) + 5;
  std::vector<float> want(count);
  float* host = nullptr;
  CUDA_OK(cudaMallocHost(&host, count * sizeof(float)));
  fill_input(COLLX_FLOAT32, COLLX_SUM, g_rank, count, host);
  fill_expected(COLLX_FLOAT32, COLLX_SUM, p, count, want.data());
  float* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, count * sizeof(float)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaMemcpyAsync(dev, host, count * sizeof(float), cudaMemcpyHostToDevice, s));
  const collx_status_t st =
      collx_allreduce_stream(COLLX_IN_PLACE, dev, count, COLLX_FLOAT32, COLLX_SUM, comm, s);
  std::memset(host, 0, count * sizeof(float));
  CUDA_OK(cudaMemcpyAsync(host, dev, count * sizeof(float), cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  expect(st == COLLX_SUCCESS, "collx_allreduce_stream: status");
  expect(std::memcmp(host, want.data(), count * sizeof(float)) == 0,
         "collx_allreduce_stream: result");
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFreeHost(host));
}

// Freed and allocated again (the allocator usually hands back the same address): the pointer
// cache must not take the new allocation for the old one.
void reallocated(collx_comm_t comm, int p) {
  const size_t count = 1 << 16;
  std::vector<int32_t> in(count), want(count), got(count);
  int same_address = 0;
  void* last = nullptr;
  for (int round = 0; round < 4; ++round) {
    int32_t* buf = nullptr;
    CUDA_OK(cudaMalloc(&buf, count * sizeof(int32_t)));
    same_address += buf == last;
    last = buf;
    fill_input(COLLX_INT32, COLLX_SUM, g_rank + round, count, in.data());
    for (size_t i = 0; i < count; ++i) {
      int64_t acc = 0;
      for (int r = 0; r < p; ++r) acc += value(COLLX_SUM, true, r + round, i);
      want[i] = static_cast<int32_t>(acc);
    }
    CUDA_OK(cudaMemcpy(buf, in.data(), count * sizeof(int32_t), cudaMemcpyHostToDevice));
    const collx_status_t st =
        collx_allreduce(COLLX_IN_PLACE, buf, count, COLLX_INT32, COLLX_SUM, comm);
    CUDA_OK(cudaMemcpy(got.data(), buf, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
    expect(st == COLLX_SUCCESS && got == want, "reallocated buffer, round " + std::to_string(round));
    CUDA_OK(cudaFree(buf));
  }
  if (g_rank == 0) std::printf("reallocation at the same address: %d of 3 rounds\n", same_address);
}

void nonblocking(collx_comm_t comm, int p) {
  constexpr int kOps = 8;
  std::vector<float*> bufs(kOps);
  std::vector<collx_request_t> reqs(kOps);
  for (int k = 0; k < kOps; ++k) {
    const size_t count = 1000u * (k + 1) * (k + 1);
    std::vector<float> in(count);
    fill_input(COLLX_FLOAT32, COLLX_SUM, g_rank, count, in.data());
    CUDA_OK(cudaMalloc(&bufs[k], count * sizeof(float)));
    CUDA_OK(cudaMemcpy(bufs[k], in.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    expect(collx_iallreduce(COLLX_IN_PLACE, bufs[k], count, COLLX_FLOAT32, COLLX_SUM, comm,
                            &reqs[k]) == COLLX_SUCCESS,
           "iallreduce post " + std::to_string(k));
  }
  for (int k = kOps - 1; k >= 0; --k) {
    expect(collx_wait(&reqs[k]) == COLLX_SUCCESS, "iallreduce wait " + std::to_string(k));
    const size_t count = 1000u * (k + 1) * (k + 1);
    std::vector<float> want(count), got(count);
    fill_expected(COLLX_FLOAT32, COLLX_SUM, p, count, want.data());
    CUDA_OK(cudaMemcpy(got.data(), bufs[k], count * sizeof(float), cudaMemcpyDeviceToHost));
    expect(got == want, "iallreduce result " + std::to_string(k));
    CUDA_OK(cudaFree(bufs[k]));
  }
}


// Buffers inside one larger allocation, as frameworks pass them (tensors carved from one
// block, views at any element): send and recv lie in the same cudaMalloc'd block, at offsets
// that differ by rank, so the ranks' buffers sit at different 16-byte phases (each kernel's
// packed path meets peers' buffers it cannot take as packs) and a rank's two buffers share
// one IPC handle. Every byte of the block outside recv must be left as it was. Then a buffer
// off its element alignment must be refused (COLLX_ERR_INVALID_ARG, nothing written), with
// the communicator still usable afterwards.
void interior(collx_comm_t comm, int p) {
  const size_t max_count = (size_t{1} << 19) + 3;  // float64: 4 MiB, past the one kernel
  const size_t region = max_count * 8 + 256;
  const size_t block = 2 * region;
  uint8_t* base = nullptr;
  CUDA_OK(cudaMalloc(&base, block));
  std::vector<uint8_t> before(block), after(block);
  for (collx_dtype_t d : all_dtypes()) {
    const size_t elem = collx_dtype_size(d);
    for (size_t count : {size_t{1}, static_cast<size_t>(p) + 1, size_t{5003}, max_count}) {
      const size_t bytes = count * elem;
      std::vector<uint8_t> in(bytes), want(bytes);
      fill_input(d, COLLX_SUM, g_rank, count, in.data());
      fill_expected(d, COLLX_SUM, p, count, want.data());
      for (bool in_place : {false, true}) {
        uint8_t* send = base + (1 + g_rank % 4) * elem;
        uint8_t* recv = base + region + (1 + (g_rank + 1) % 3) * elem;
        for (size_t i = 0; i < block; ++i) before[i] = static_cast<uint8_t>(i * 131 + g_rank);
        std::memcpy(before.data() + ((in_place ? recv : send) - base), in.data(), bytes);
        CUDA_OK(cudaMemcpy(base, before.data(), block, cudaMemcpyHostToDevice));
        const collx_status_t st = collx_allreduce(in_place ? COLLX_IN_PLACE : send, recv,
                                                  count, d, COLLX_SUM, comm);
        CUDA_OK(cudaMemcpy(after.data(), base, block, cudaMemcpyDeviceToHost));
        const std::string what = std::string("interior buffers, ") + collx_dtype_name(d) +
                                 " count " + std::to_string(count) +
                                 (in_place ? " in place" : "");
        expect(st == COLLX_SUCCESS, what + ": status");
        const size_t at = recv - base;
        expect(std::memcmp(after.data() + at, want.data(), bytes) == 0, what + ": result");
        expect(std::memcmp(after.data(), before.data(), at) == 0 &&
                   std::memcmp(after.data() + at + bytes, before.data() + at + bytes,
                               block - at - bytes) == 0,
               what + ": the rest of the block untouched");
        expect(same_everywhere(collx::fnv1a(after.data() + at, bytes)),
               what + ": identical on every rank");
      }
    }
  }
  // float32 two bytes past its alignment, on every rank (the check is each rank's own).
  const size_t count = 4096;
  for (size_t i = 0; i < block; ++i) before[i] = static_cast<uint8_t>(i * 7);
  CUDA_OK(cudaMemcpy(base, before.data(), block, cudaMemcpyHostToDevice));
  const collx_status_t st = collx_allreduce(base + 2, base + region + 2, count, COLLX_FLOAT32,
                                            COLLX_SUM, comm);
  CUDA_OK(cudaMemcpy(after.data(), base, block, cudaMemcpyDeviceToHost));
  expect(st == COLLX_ERR_INVALID_ARG, "misaligned device buffer: refused");
  expect(after == before, "misaligned device buffer: nothing written");
  CUDA_OK(cudaFree(base));
  float* buf = nullptr;
  std::vector<float> in(count), want(count), got(count);
  fill_input(COLLX_FLOAT32, COLLX_SUM, g_rank, count, in.data());
  fill_expected(COLLX_FLOAT32, COLLX_SUM, p, count, want.data());
  CUDA_OK(cudaMalloc(&buf, count * sizeof(float)));
  CUDA_OK(cudaMemcpy(buf, in.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  expect(collx_allreduce(COLLX_IN_PLACE, buf, count, COLLX_FLOAT32, COLLX_SUM, comm) ==
             COLLX_SUCCESS,
         "after the refusal: status");
  CUDA_OK(cudaMemcpy(got.data(), buf, count * sizeof(float), cudaMemcpyDeviceToHost));
  expect(got == want, "after the refusal: result");
  CUDA_OK(cudaFree(buf));
}

// One rank: returns 0 (all passed), 1 (a failure) or 77 (no GPU).
int run_rank(Board* board, int rank, int p) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  g_rank = rank;
  Group group{board, rank, p};
  g_group = &group;
  CUDA_OK(cudaSetDevice(rank % devices));
  collx_comm_t comm = nullptr;
  collx_comm_params_t params{rank, p, board_allgather, &group};
  if (collx_init() != COLLX_SUCCESS || collx_comm_create(&params, &comm) != COLLX_SUCCESS) {
    std::fprintf(stderr, "rank %d: setup failed: %s\n", rank, collx_last_error());
    return 1;
  }
  matrix(comm, p);
  on_stream(comm, p);
  reallocated(comm, p);
  nonblocking(comm, p);
  interior(comm, p);
  expect(collx_comm_destroy(comm) == COLLX_SUCCESS, "comm destroy");
  collx_finalize();
  std::printf("rank %d: %d passed, %d failed\n", rank, g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int p = argc > 1 ? std::atoi(argv[1]) : 2;
  if (p < 1 || p > kMaxRanks) {
    std::fprintf(stderr, "usage: %s [ranks 1-%d]\n", argv[0], kMaxRanks);
    return 2;
  }
  const std::vector<int> rcs = fork_ranks(p, [&](Board* board, int r) { return run_rank(board, r, p); });
  if (rcs.empty()) return 1;
  int skipped = 0, failed = 0;
  for (int rc : rcs) {
    skipped += rc == 77;
    failed += rc != 0 && rc != 77;
  }
  if (skipped == p) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  std::printf("%d ranks: %s\n", p, failed == 0 && skipped == 0 ? "all passed" : "FAILED");
  return failed == 0 && skipped == 0 ? 0 : 1;
}
