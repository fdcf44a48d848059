// StoreChoice (algo/store_choice.h): which kind of stores shm_two_shot uses, from the times
// its calls took. The times here are made up, so every decision is known in advance.
#include <catch2/catch.hpp>

#include "algo/store_choice.h"

using namespace collx;

namespace {

// One call of `bytes`: the kind chosen, then the time it "took" with that kind.
bool call(StoreChoice& c, size_t bytes, uint64_t streaming_ticks, uint64_t cached_ticks) {
  const bool s = c.streaming(bytes);
  c.record(bytes, s ? streaming_ticks : cached_ticks);
  return s;
}

}  // namespace

TEST_CASE("store choice: forced kinds never change and measure nothing") {
  StoreChoice s(ShmStores::kStreaming), c(ShmStores::kCached);
  CHECK_FALSE(s.measuring());
  CHECK_FALSE(c.measuring());
  for (int i = 0; i < 100; ++i) {
    CHECK(call(s, 1 << 20, 1000, 1));
    CHECK_FALSE(call(c, 1 << 20, 1, 1000));
  }
}

TEST_CASE("store choice: auto tries both, keeps the faster, retries the other every 32nd call") {
  StoreChoice c;
  REQUIRE(c.measuring());
  const size_t bytes = 1 << 20;
  // The first six calls alternate, starting with streaming stores.
  for (int i = 0; i < 6; ++i) CHECK(call(c, bytes, 2000, 1000) == (i % 2 == 0));
  // Ordinary stores are faster: used, except that every 32nd call streams.
  int streamed = 0;
  for (int k = 6; k < 6 + 320; ++k) {
    const bool s = call(c, bytes, 2000, 1000);
    CHECK(s == (k % StoreChoice::kRetry == 0));
    streamed += s;
  }
  CHECK(streamed == 10);
  // One slow outlier (a page fault, a preemption) does not flip the choice: the median of the
  // last three calls of each kind decides.
  CHECK_FALSE(call(c, bytes, 2000, 50000));
  CHECK_FALSE(call(c, bytes, 2000, 1000));
  // The machine changes (the ranks' cores move apart): streaming becomes the faster. Within
  // two retries the choice follows.
  int k = 6 + 320 + 2, first_kept = -1;
  for (; k < 6 + 320 + 2 + 3 * StoreChoice::kRetry; ++k) {
    const bool s = call(c, bytes, 1000, 3000);
    if (s && k % StoreChoice::kRetry != 0 && first_kept < 0) first_kept = k;
  }
  REQUIRE(first_kept >= 0);
  CHECK(first_kept < 6 + 320 + 2 + 2 * StoreChoice::kRetry + 1);
  // From then on streaming, except the retries of ordinary stores.
  for (int j = 0; j < 64; ++j, ++k) {
    CHECK(call(c, bytes, 1000, 3000) == (k % StoreChoice::kRetry != 0));
  }
}

TEST_CASE("store choice: each power-of-two size decides on its own") {
  StoreChoice c;
  // Small messages: streaming faster. Large ones: ordinary stores faster. Interleaved.
  for (int i = 0; i < 6; ++i) {
    call(c, 16 << 10, 100, 300);
    call(c, 8 << 20, 90000, 30000);
  }
  for (int k = 6; k < 32; ++k) {
    CHECK(call(c, 16 << 10, 100, 300));
    CHECK_FALSE(call(c, 8 << 20, 90000, 30000));
  }
  // The 32nd call of each retries the other kind.
  CHECK_FALSE(call(c, 16 << 10, 100, 300));
  CHECK(call(c, 8 << 20, 90000, 30000));
  call(c, 0, 1, 1);  // a call of 0 bytes (never made by shm_two_shot) is harmless
}
