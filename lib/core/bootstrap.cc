#include "core/bootstrap.h"

#include <algorithm>

namespace collx {

Status decode_boot_headers(const BootHeader* all, int rank, int size, BootAgreement* out) {
  uint32_t comm_id = 0, max_len = 0;
  for (int i = 0; i < size; ++i) {
    const BootHeader& h = all[i];
    if (h.magic != kBootMagic || h.rank != i || h.size != size || h.addr_len == 0 ||
        h.addr_len > kMaxAddress || h.comm_id > 0xffff) {
      return error(COLLX_ERR_MISMATCH,
                   "rank %d: bootstrap data from rank %d is inconsistent (rank %d, size %d, "
                   "address length %u, id %u); are all ranks calling collx_comm_create with the "
                   "same size and distinct ranks?",
                   rank, i, h.rank, h.size, h.addr_len, h.comm_id);
    }
    comm_id = std::max(comm_id, h.comm_id);
    max_len = std::max(max_len, h.addr_len);
  }
  *out = BootAgreement{static_cast<uint16_t>(comm_id), max_len};
  return Status();
}

Status decode_addresses(const uint8_t* blob, size_t blob_bytes, const BootHeader* all, int size,
                        uint32_t max_len, std::vector<std::vector<uint8_t>>* out) {
  if (size <= 0 || blob_bytes / static_cast<size_t>(size) < max_len) {
    return error(COLLX_ERR_INTERNAL, "bootstrap: %zu address bytes for %d ranks of %u",
                 blob_bytes, size, max_len);
  }
  out->assign(static_cast<size_t>(size), {});
  for (int i = 0; i < size; ++i) {
    if (all[i].addr_len > max_len) {
      return error(COLLX_ERR_MISMATCH, "bootstrap: rank %d's address length %u exceeds %u", i,
                   all[i].addr_len, max_len);
    }
    const uint8_t* a = blob + static_cast<size_t>(i) * max_len;
    (*out)[i].assign(a, a + all[i].addr_len);
  }
  return Status();
}

}  // namespace collx
