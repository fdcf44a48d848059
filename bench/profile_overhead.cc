// What COLLX_PROFILE costs per call: the same 1-element allreduce on a one-rank communicator
// (no communication, so the profiler's share is what is measured), 2M calls with the profile
// off and 2M with it on, alternated 7 times; prints the medians in ns per call.
//   build/bench/profile_overhead
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collx/collx.h"

namespace {

int self_allgather(const void* send, void* recv, size_t bytes, void*) {
  std::memcpy(recv, send, bytes);
  return 0;
}

double ns_per_call(bool profile, int calls) {
  setenv("COLLX_PROFILE", profile ? "1" : "0", 1);
  collx_comm_params_t p{0, 1, self_allgather, nullptr};
  collx_comm_t c = nullptr;
  if (collx_comm_create(&p, &c) != COLLX_SUCCESS) {
    std::fprintf(stderr, "%s\n", collx_last_error());
    std::exit(1);
  }
  float x = 1.f;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_FLOAT32, COLLX_SUM, c);
  const auto t = std::chrono::steady_clock::now() - t0;
  collx_comm_destroy(c);  // prints the profile table when on
  return std::chrono::duration<double, std::nano>(t).count() / calls;
}

}  // namespace

int main() {
  if (collx_init() != COLLX_SUCCESS) return 1;
  constexpr int kCalls = 2000000, kRounds = 7;
  std::vector<double> off, on, diff;
  for (int r = 0; r < kRounds; ++r) {
    off.push_back(ns_per_call(false, kCalls));
    on.push_back(ns_per_call(true, kCalls));
    diff.push_back(on.back() - off.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("per call (median of %d rounds of %d calls): profile off %.1f ns, on %.1f ns, "
              "cost of the profiler %.1f ns\n",
              kRounds, kCalls, median(off), median(on), median(diff));
  collx_finalize();
  return 0;
}
