#include "algo/store_choice.h"

#include <algorithm>
#include <utility>

namespace collx {

int StoreChoice::size_class(size_t bytes) {
  int c = 0;
  while (bytes > 1 && c < kSizes - 1) {
    bytes >>= 1;
    ++c;
  }
  return c;
}

double StoreChoice::Kind::estimate() const {
  double v[kSamples];
  int n = 0;
  for (double c : cost) {
    if (c > 0) v[n++] = c;
  }
  if (n == 0) return 0;
  for (int i = 1; i < n; ++i) {  // insertion sort of at most kSamples values
    for (int j = i; j > 0 && v[j] < v[j - 1]; --j) std::swap(v[j], v[j - 1]);
  }
  return v[(n - 1) / 2];  // of two samples, the lower
}

uint64_t StoreChoice::retry_spacing(double a, double b) {
  const double fast = std::min(a, b), slow = std::max(a, b);
  uint64_t spacing = kRetry;
  if (fast <= 0) return spacing;  // a kind not measured yet
  while (spacing < uint64_t{kRetry} * kMaxSpacing && spacing < kRetry * (slow / fast - 1)) {
    spacing *= 2;
  }
  return spacing;
}

bool StoreChoice::streaming(size_t bytes) {
  if (mode_ != ShmStores::kAuto) return mode_ == ShmStores::kStreaming;
  Size& s = sizes_[size_class(bytes)];
  const uint64_t k = s.calls++;
  int kind;
  if (k < 2 * kSamples) {
    kind = static_cast<int>(k % 2);  // the first calls alternate, to measure both
  } else {
    const double a = s.kind[0].estimate(), b = s.kind[1].estimate();
    const int best = b < a ? 1 : 0;
    kind = k % retry_spacing(a, b) == 0 ? 1 - best : best;
  }
  s.pending = kind;
  return kind == 0;
}

void StoreChoice::record(size_t bytes, uint64_t ticks) {
  if (mode_ != ShmStores::kAuto || bytes == 0) return;
  Size& s = sizes_[size_class(bytes)];
  Kind& k = s.kind[s.pending];
  k.cost[k.next] = std::max(static_cast<double>(ticks), 1.0) / static_cast<double>(bytes);
  k.next = (k.next + 1) % kSamples;
}

}  // namespace collx
