// Host staging: an allreduce of device buffers done by the host algorithms, chunk by chunk,
// through the copier's pinned slots. Chunk i is copied in while chunk i-1 is reduced, and
// copied out while chunk i+1 is reduced:
//
//   in:      [c0][c1]      [c2]      [c3]
//   reduce:      [ c0 ][ c1 ][ c2 ][ c3 ]
//   out:               [c0]  [c1]  [c2]  [c3]
//
// Three slots make that safe: chunk i+1 is copied into the slot of chunk i-2, whose copy out
// has had the whole reduction of chunk i-1 to finish (and is waited for all the same).
#pragma once

#include <cstddef>
#include <functional>

#include "memory/device_copy.h"

namespace collx {

// Elements per chunk for `chunk_bytes` (at least one element).
size_t staging_chunk_count(size_t chunk_bytes, size_t elem_size);
// Chunks (one collective each) for `count` elements: 0 for count 0.
size_t staging_chunks(size_t count, size_t chunk_count);

// reduce(host, n, i): allreduce in place n elements at `host` (pinned), chunk i of the
// message. Every rank calls it for the same chunks in the same order.
using ChunkReduce = std::function<Status(void* host, size_t n, size_t i)>;

// send/recv: device memory (equal for in-place), `count` elements of `elem_size` bytes.
Status staged_allreduce(DeviceCopier& copier, const void* send, void* recv, size_t count,
                        size_t elem_size, size_t chunk_count, const ChunkReduce& reduce);

}  // namespace collx
