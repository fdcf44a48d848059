// Copies between host buffers at full speed whatever their alignment: the copies of the
// shared-memory algorithms, and the bounce of a cross-memory read (transport/peer_memory.cc).
#pragma once

#include <cstddef>

namespace collx {

// memcpy with non-temporal stores where the CPU has them (x86-64; memcpy elsewhere), for data
// that another core reads next: that core then reads it from memory instead of probing this
// core's cache line by line, which is much slower (docs/PERFORMANCE.md: shm_two_shot 1.7x
// faster at 1-16 MiB). Ends with a store fence, so a release store after it publishes the
// data. No overlap allowed.
void copy_streaming(void* dst, const void* src, size_t n);

// memcpy, except where the destination lies 1 to 63 bytes past the source modulo 4096 (on x86-64):
// there glibc 2.36 copies with `rep movsb`, which AMD Zen CPUs run at about 3 GB/s instead of
// 40 - 80 GB/s (docs/PERFORMANCE.md, "Copies at an unlucky page offset"), so an SSE2 loop
// copies instead. User buffers lie at any offset from the shared segment, so every copy
// between them goes through here. No overlap allowed.
void copy_cached(void* dst, const void* src, size_t n);

}  // namespace collx
