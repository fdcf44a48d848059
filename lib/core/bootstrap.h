// The wire format of communicator creation, exchanged through the user's out-of-band
// allgather: round 1 gathers one fixed-size header per rank, round 2 the UCX worker addresses
// padded to the longest. Everything that arrives is checked here before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/status.h"

namespace collx {

constexpr uint64_t kBootMagic = 0x31544f4258434c43ull;  // "CLCXBOT1"
constexpr uint32_t kMaxAddress = 1 << 16;

struct BootHeader {
  uint64_t magic;
  int32_t rank;
  int32_t size;
  uint32_t comm_id;  // the sender's proposal; all ranks take the largest
  uint32_t addr_len;
};

struct BootAgreement {
  uint16_t comm_id;
  uint32_t max_addr_len;
};

// Checks the `size` headers gathered by rank `rank`: each must come from the rank of its slot,
// agree on the size, and carry an address length in (0, kMaxAddress] and a 16-bit id.
Status decode_boot_headers(const BootHeader* all, int rank, int size, BootAgreement* out);

// Splits round 2's `size` slots of `max_len` bytes into each rank's address.
Status decode_addresses(const uint8_t* blob, size_t blob_bytes, const BootHeader* all, int size,
                        uint32_t max_len, std::vector<std::vector<uint8_t>>* out);

}  // namespace collx
