// One copy from the memory of another process of the same node into this process's:
// process_vm_readv (cross-memory attach), where the kernel copies between the two address
// spaces directly, with no intermediate buffer. Partial transfers are completed. Where the
// kernel's copy would be slow (the destination 1 to 31 bytes past the source modulo a page),
// the read goes through a per-thread bounce buffer instead. pid 0 stands for this process
// itself (threads sharing one address space, as in the unit tests): a copy_cached.
//
// Errors: COLLX_ERR_PEER_FAILED when the process is gone, COLLX_ERR_TRANSPORT otherwise; the
// message says what failed and why, the caller adds whose memory and in which step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/status.h"

namespace collx {

// Where `seal` is given, reads the 8 bytes at `word` of the same process into it after the
// data: a word that the peer changes before it may change the data (Guarded's seal, for the
// one-copy path) then tells whether all of the data was read before that.
Status peer_read(int64_t pid, uint64_t remote, void* local, size_t bytes, uint64_t word = 0,
                 uint64_t* seal = nullptr);

}  // namespace collx
