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
  // From then on streaming, except the retries of ordinary stores: at three times the cost,
  // every 64th call (below).
  for (int j = 0; j < 256; ++j, ++k) {
    CHECK(call(c, bytes, 1000, 3000) == (k % (2 * StoreChoice::kRetry) != 0));
  }
}

TEST_CASE("store choice: the costlier a retry, the rarer, so retries cost at most 1/32") {
  // The slower kind costs R times the faster: retried every 32 * 2^j calls, for the least j
  // with 2^j >= R - 1, and at least every 512th call.
  const struct {
    uint64_t slow;  // ticks, against 1000 for the faster kind
    int spacing;
  } cases[] = {{1100, 32}, {2000, 32}, {2100, 64}, {3000, 64}, {5200, 256}, {9000, 256},
               {9100, 512}, {100000, 512}};
  for (const auto& t : cases) {
    CAPTURE(t.slow);
    StoreChoice c;
    const size_t bytes = 1 << 20;
    uint64_t spent = 0, k = 0;
    for (; k < 6; ++k) call(c, bytes, 1000, t.slow);
    for (; k < 6 + 4096; ++k) {
      const bool s = call(c, bytes, 1000, t.slow);
      CHECK(s == (k % t.spacing != 0));
      spent += s ? 1000 : t.slow;
    }
    // The retries' share of the time, against streaming on every call: at most 1/32 up to
    // R = 17, where the spacing stops growing; at least 1/64 where it doubled.
    const double extra = static_cast<double>(spent) / (4096.0 * 1000) - 1;
    if (t.slow <= 17000) CHECK(extra <= 1.0 / StoreChoice::kRetry + 1e-9);
    if (t.slow > 2000 && t.slow <= 17000) CHECK(extra > 0.5 / StoreChoice::kRetry);
  }
}

TEST_CASE("store choice: after a change, a rarely retried kind is taken up within two retries") {
  // Ordinary stores cost 5.2x streaming: retried every 256th call. Then they become the faster
  // (2.2x): streaming's own cost rises at once, which narrows the spacing to 64 calls while the
  // estimate of ordinary stores is still the old one; two retries replace the median.
  StoreChoice c;
  const size_t bytes = 1 << 20;
  int k = 0;
  for (; k < 512; ++k) call(c, bytes, 1000, 5200);
  int first_kept = -1;
  for (; k < 512 + 256 && first_kept < 0; ++k) {
    if (!call(c, bytes, 2200, 1000) && k % 64 != 0) first_kept = k;
  }
  CHECK(first_kept == 512 + 64 + 1);
}

TEST_CASE("store choice: ranks that measure different costs still retry on the same calls") {
  // Two ranks, one measuring the slower kind at 4.9x, one at 5.2x: every retry of the one with
  // the wider spacing falls on a call where the other retries too.
  StoreChoice a, b;
  const size_t bytes = 4 << 20;
  int both = 0, only_a = 0, only_b = 0;
  for (int k = 0; k < 4096; ++k) {
    const bool ra = !call(a, bytes, 1000, 4900), rb = !call(b, bytes, 1000, 5200);
    if (k < 6) continue;
    both += ra && rb;
    only_a += ra && !rb;
    only_b += rb && !ra;
  }
  CHECK(both == 15);    // calls 256, 512, ..., 3840 (call 0 is one of the first six)
  CHECK(only_a == 16);  // calls 128, 384, ..., 3968
  CHECK(only_b == 0);
}

TEST_CASE("store choice: each power-of-two size decides on its own") {
  StoreChoice c;
  // Small messages: streaming faster. Large ones: ordinary stores faster. Interleaved.
  for (int i = 0; i < 6; ++i) {
    call(c, 16 << 10, 100, 190);
    call(c, 8 << 20, 50000, 30000);
  }
  for (int k = 6; k < 32; ++k) {
    CHECK(call(c, 16 << 10, 100, 190));
    CHECK_FALSE(call(c, 8 << 20, 50000, 30000));
  }
  // The 32nd call of each retries the other kind.
  CHECK_FALSE(call(c, 16 << 10, 100, 190));
  CHECK(call(c, 8 << 20, 50000, 30000));
  call(c, 0, 1, 1);  // a call of 0 bytes (never made by shm_two_shot) is harmless
}
