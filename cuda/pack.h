// Pack<T, V>: V elements of T that the kernels load and store as one access (16 bytes when
// V = 16 / sizeof(T); V = 1 for the scalar tails). Aligned to its own size, so an array of
// packs has no padding and a P* steps over the data exactly. For .cu files only.
#pragma once

namespace collx::cuda {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T e[V];
};

}  // namespace collx::cuda
