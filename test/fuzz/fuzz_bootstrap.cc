// libFuzzer target: the bootstrap data a rank receives from its peers at communicator
// creation. The input's first byte picks the receiving rank and the communicator size; the
// rest is the peers' headers and address slots. Decoding must reject or accept without reading
// or writing out of bounds, and an accepted agreement must be within the documented limits and
// the same for every receiving rank.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/bootstrap.h"
#include "transport/shm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int ranks = 1 + data[0] % 8;
  const int rank = (data[0] / 8) % ranks;
  data += 1;
  size -= 1;
  std::vector<collx::BootHeader> headers(static_cast<size_t>(ranks));
  const size_t header_bytes = sizeof(collx::BootHeader) * headers.size();
  std::memcpy(headers.data(), data, size < header_bytes ? size : header_bytes);
  // Make well-formed headers reachable: a zero magic means "fill in the expected one".
  for (int i = 0; i < ranks; ++i) {
    if (headers[i].magic == 0) headers[i].magic = collx::kBootMagic;
  }
  // Every member decodes the same headers alike, whatever its rank: all go on with the same
  // agreement, or all stop with the same status (a failed peer, settings that differ).
  collx::BootAgreement agreed, other;
  const collx::Status mine = collx::decode_boot_headers(headers.data(), rank, ranks, &agreed);
  const collx::Status theirs =
      collx::decode_boot_headers(headers.data(), (rank + 1) % ranks, ranks, &other);
  if (mine.code() != theirs.code()) std::abort();
  if (!mine.ok()) return 0;
  if (agreed.max_addr_len == 0 || agreed.max_addr_len > collx::kMaxAddress) std::abort();
  if (other.comm_id != agreed.comm_id || other.owner != agreed.owner ||
      other.max_addr_len != agreed.max_addr_len) {
    std::abort();
  }
  for (const collx::BootHeader& h : headers) {
    if (h.addr_len > agreed.max_addr_len || h.comm_id > agreed.comm_id) std::abort();
  }
  const size_t rest = size > header_bytes ? size - header_bytes : 0;
  const size_t slot = agreed.max_addr_len + collx::kSlotHeader;
  std::vector<uint8_t> blob(slot * ranks);
  std::memcpy(blob.data(), data + (size - rest), rest < blob.size() ? rest : blob.size());
  std::vector<collx::PeerInfo> peers;
  if (!collx::decode_peers(blob.data(), blob.size(), headers.data(), ranks, agreed.max_addr_len,
                           &peers).ok()) {
    std::abort();  // consistent headers always decode
  }
  for (int i = 0; i < ranks; ++i) {
    if (peers[i].address.size() != headers[i].addr_len) std::abort();
    if (peers[i].shm_name.size() >= collx::kShmNameBytes + 1) std::abort();
    if (peers[i].pid != headers[i].pid || peers[i].node != headers[i].node) std::abort();
  }
  uint8_t all_of = 0, any_of = 0;
  collx::combine_flags(blob.data(), ranks, agreed.max_addr_len, &all_of, &any_of);
  if ((all_of & ~any_of) != 0) std::abort();
  // A peer's segment name is only ever used after this check.
  for (const collx::PeerInfo& p : peers) (void)collx::ShmSegment::valid_name(p.shm_name);
  return 0;
}
