// Host copies at every distance modulo a page: copy_cached and copy_streaming, and peer_read
// (process_vm_readv), which takes a bounce buffer where the kernel's copy would be slow. The
// slow distances are where each takes its own path, so both sides of each boundary are tested,
// with sizes around the 64-byte loop step and across several bounce buffers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "memory/host_copy.h"
#include "transport/peer_memory.h"

using namespace collx;

namespace {

uint8_t* page_up(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t{4095});
}

using Copy = std::function<void(uint8_t* dst, const uint8_t* src, size_t n)>;

// Copies random bytes with `copy` for every size, source alignment and distance; returns the
// number of copies that differ from the source or touch a byte of the guards around dst.
int wrong_copies(const Copy& copy, const std::vector<size_t>& sizes, int* runs) {
  constexpr size_t kGuard = 64;
  size_t max = 0;
  for (size_t n : sizes) max = std::max(max, n);
  std::vector<uint8_t> src_area(max + 4096 + 2 * kGuard), dst_area(max + 2 * 4096 + 2 * kGuard);
  std::vector<size_t> distances;
  for (size_t d = 0; d <= 70; ++d) distances.push_back(d);
  for (size_t d = 4030; d < 4096; ++d) distances.push_back(d);
  distances.push_back(2048);
  std::mt19937 rng(7);
  int wrong = 0;
  for (size_t n : sizes) {
    for (size_t src_off : {size_t{0}, size_t{5}}) {
      for (size_t d : distances) {
        uint8_t* src = page_up(src_area.data()) + src_off;
        uint8_t* dst = page_up(dst_area.data() + kGuard) + (src_off + d) % 4096;
        for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(rng());
        std::memset(dst - kGuard, 0xA5, n + 2 * kGuard);
        copy(dst, src, n);
        ++*runs;
        if (std::memcmp(dst, src, n) != 0) ++wrong;
        for (size_t i = 0; i < kGuard; ++i) {
          if (dst[-1 - static_cast<ptrdiff_t>(i)] != 0xA5 || dst[n + i] != 0xA5) {
            ++wrong;
            break;
          }
        }
      }
    }
  }
  return wrong;
}

}  // namespace

TEST_CASE("copy_cached and copy_streaming copy exactly, at every distance modulo a page") {
  // copy_cached takes its own loop for distances 1-63 modulo 4096 and memcpy elsewhere.
  const std::vector<size_t> sizes = {0, 1, 63, 64, 65, 4113, 20000};
  int runs = 0;
  CHECK(wrong_copies(copy_cached, sizes, &runs) == 0);
  CHECK(wrong_copies(copy_streaming, sizes, &runs) == 0);
  CHECK(runs == 2 * 7 * 2 * 138);
}

TEST_CASE("peer_read copies exactly through the kernel, at every distance modulo a page, and "
          "reads a seal after the data") {
  // This process reads itself through process_vm_readv (its pid, not 0), so the kernel's copy
  // and, at distances 1-31, the bounce buffer (64 KiB at a time: the largest size spans three)
  // are the ones the transports use between processes. With a seal, each read takes a new
  // value of the word too.
  const int64_t self = getpid();
  for (const bool sealed : {false, true}) {
    CAPTURE(sealed);
    int runs = 0, failed = 0, wrong_seals = 0;
    uint64_t word = 0;
    const Copy read = [&](uint8_t* dst, const uint8_t* src, size_t n) {
      word = word * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t seal = ~word;
      if (!peer_read(self, reinterpret_cast<uint64_t>(src), dst, n,
                     reinterpret_cast<uint64_t>(&word), sealed ? &seal : nullptr)
               .ok()) {
        ++failed;
      }
      if (seal != (sealed ? word : ~word)) ++wrong_seals;
    };
    CHECK(wrong_copies(read, {0, 1, 64, 4113, (64 << 10) * 2 + 4113}, &runs) == 0);
    CHECK(runs == 5 * 2 * 138);
    CHECK(failed == 0);
    CHECK(wrong_seals == 0);
  }
}

TEST_CASE("peer_read of an unmapped address is an error value, at any distance") {
  // Room for the 8192 bytes up to 4095 + 100 bytes past the start (page_up, then d).
  std::vector<uint8_t> buf(8192 + 2 * 4096);
  for (size_t d : {size_t{0}, size_t{16}, size_t{100}}) {
    // Page 0 is never mapped; the destination d bytes past a page takes the bounce path at 16.
    const Status st = peer_read(getpid(), 0, page_up(buf.data()) + d, 8192);
    CHECK(st.code() == COLLX_ERR_TRANSPORT);
    CHECK(st.message().find("Bad address") != std::string::npos);
    // Readable data, its seal at an unmapped address.
    uint64_t seal = 0;
    const Status sealed = peer_read(getpid(), reinterpret_cast<uint64_t>(buf.data()),
                                    page_up(buf.data()) + d, 64, 8, &seal);
    CHECK(sealed.code() == COLLX_ERR_TRANSPORT);
  }
}
