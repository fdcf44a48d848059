#include "core/bootstrap.h"

#include "core/comm_ids.h"

#include <algorithm>
#include <cstring>

namespace collx {

Status decode_boot_headers(const BootHeader* all, int rank, int size, BootAgreement* out) {
  uint32_t comm_id = 0, max_len = 0;
  uint64_t owner = 0xcbf29ce484222325ull;  // FNV-1a over every rank's (node, pid, creation)
  const auto mix = [&owner](uint64_t v) {
    for (int b = 0; b < 8; ++b) owner = (owner ^ ((v >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  };
  for (int i = 0; i < size; ++i) {
    const BootHeader& h = all[i];
    if (h.magic == kBootMagic && h.rank == i && h.size == size && h.comm_id == CommIds::kNone) {
      return error(COLLX_ERR_NO_MEMORY,
                   "rank %d: rank %d's process has no free communicator id (all %u are in use)",
                   rank, i, CommIds::kCount);
    }
    if (h.magic != kBootMagic || h.rank != i || h.size != size || h.addr_len == 0 ||
        h.addr_len > kMaxAddress || h.comm_id >= CommIds::kCount || h.pid <= 0) {
      return error(COLLX_ERR_MISMATCH,
                   "rank %d: bootstrap data from rank %d is inconsistent (rank %d, size %d, "
                   "address length %u, id %u); are all ranks calling collx_comm_create with the "
                   "same size and distinct ranks?",
                   rank, i, h.rank, h.size, h.addr_len, h.comm_id);
    }
    comm_id = std::max(comm_id, h.comm_id);
    max_len = std::max(max_len, h.addr_len);
    mix(h.node);
    mix(static_cast<uint64_t>(h.pid));
    mix(h.creation);
  }
  *out = BootAgreement{static_cast<uint16_t>(comm_id), max_len, owner};
  return Status();
}

Status decode_peers(const uint8_t* blob, size_t blob_bytes, const BootHeader* all, int size,
                    uint32_t max_len, std::vector<PeerInfo>* out) {
  const size_t slot = size_t{max_len} + kSlotHeader;
  if (size <= 0 || blob_bytes / static_cast<size_t>(size) < slot) {
    return error(COLLX_ERR_INTERNAL, "bootstrap: %zu address bytes for %d ranks of %zu",
                 blob_bytes, size, slot);
  }
  out->assign(static_cast<size_t>(size), {});
  for (int i = 0; i < size; ++i) {
    if (all[i].addr_len > max_len) {
      return error(COLLX_ERR_MISMATCH, "bootstrap: rank %d's address length %u exceeds %u", i,
                   all[i].addr_len, max_len);
    }
    const uint8_t* a = blob + static_cast<size_t>(i) * slot;
    PeerInfo& peer = (*out)[i];
    peer.cma_ok = (a[0] & kFlagCma) != 0;
    const char* name = reinterpret_cast<const char*>(a + 1);
    peer.shm_name.assign(name, strnlen(name, kShmNameBytes));
    peer.address.assign(a + kSlotHeader, a + kSlotHeader + all[i].addr_len);
    peer.node = all[i].node;
    peer.pid = all[i].pid;
  }
  return Status();
}

void combine_flags(const uint8_t* blob, int size, uint32_t max_len, uint8_t* all_of,
                   uint8_t* any_of) {
  const size_t slot = size_t{max_len} + kSlotHeader;
  *all_of = 0xff;
  *any_of = 0;
  for (int i = 0; i < size; ++i) {
    *all_of &= blob[static_cast<size_t>(i) * slot];
    *any_of |= blob[static_cast<size_t>(i) * slot];
  }
}

}  // namespace collx
