// The wire format of communicator creation, exchanged through the user's out-of-band
// allgather: round 1 gathers one fixed-size header per rank, round 2 the UCX worker addresses
// padded to the longest. Everything that arrives is checked here before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/status.h"
#include "core/config.h"
#include "transport/peer.h"

namespace collx {

constexpr uint64_t kBootMagic = 0x34544f4258434c43ull;  // "CLCXBOT4"
constexpr uint32_t kMaxAddress = 1 << 16;

// The settings every rank must share: a rank that differs would take other steps (another
// algorithm, chunk or protocol) and its peers would wait for it until the deadline. Strings
// travel as 64-bit hashes.
constexpr int kSharedSettings = 16;
struct SharedSettings {
  uint64_t value[kSharedSettings];
};
SharedSettings shared_settings(const Config& c);

struct BootHeader {
  uint64_t magic;
  int32_t rank;
  int32_t size;
  uint32_t comm_id;  // the sender's proposal (core/comm_ids.h); all ranks take the largest
  uint32_t addr_len;
  uint64_t node;      // node identity (topo/node.h): ranks with equal values share memory
  int64_t pid;
  uint64_t probe;     // address of 8 bytes holding kBootMagic, read by peers to test CMA
  uint64_t creation;  // Context::next_creation() of the sender's collx_comm_create call
  // 0, or the status of the sender's collx_comm_create, which failed before round 1 (bad
  // configuration, no collx_init) and joined it only to stop its peers too.
  int32_t failed;
  // The low 32 bits of node_id("") (the machine, whatever COLLX_NODE pretends): the processes
  // of one machine share its CPUs (NodeProcesses).
  uint32_t machine;
  SharedSettings settings;
};

struct BootAgreement {
  uint16_t comm_id;
  uint32_t max_addr_len;
  uint64_t owner;  // names this creation among those of every member process (CommIds)
};

// Checks the `size` headers gathered by rank `rank`: each must come from the rank of its slot,
// agree on the size, and carry an address length in (0, kMaxAddress], a 16-bit id (a rank whose
// process has no free id says so) and a pid; a rank that failed is an error of its code, and
// settings that differ from rank 0's are COLLX_ERR_CONFIG naming the variable (and, for a
// string, this rank's value, from `own`: its Config). Every rank decides alike on the same
// headers, so all go on or all stop.
Status decode_boot_headers(const BootHeader* all, int rank, int size, BootAgreement* out,
                           const Config* own = nullptr);

// Round 2 gathers one slot of kSlotHeader + max_len bytes per rank: a flags byte (bit 0: CMA
// works towards every peer on the node; bit 1: the rank reserved the agreed id; bit 2: the
// rank's deadline for agreeing on an id has passed; bit 3: the rank's creation failed after
// round 1, and this slot says only that), the shared-memory segment name (rank 0's is used,
// checked by ShmSegment::attach), then the UCX address padded to max_len.
constexpr uint8_t kFlagCma = 1;
constexpr uint8_t kFlagIdReserved = 2;
constexpr uint8_t kFlagOutOfTime = 4;
constexpr uint8_t kFlagFailed = 8;
constexpr size_t kShmNameBytes = 48;
constexpr size_t kSlotHeader = 1 + kShmNameBytes;
Status decode_peers(const uint8_t* blob, size_t blob_bytes, const BootHeader* all, int size,
                    uint32_t max_len, std::vector<PeerInfo>* out);
// The flags bytes of every rank's slot in a round-2 blob, combined: those set on all ranks
// (`all_of`) and those set on any (`any_of`).
void combine_flags(const uint8_t* blob, int size, uint32_t max_len, uint8_t* all_of,
                   uint8_t* any_of);
// A round-2 blob in which some rank set kFlagFailed: COLLX_ERR_PEER_FAILED naming the first.
Status failed_in_round_2(const uint8_t* blob, int rank, int size, uint32_t max_len);

}  // namespace collx
