// libFuzzer target: the bootstrap data a rank receives from its peers at communicator
// creation. The input's first byte picks the receiving rank and the communicator size; the
// rest is the peers' headers and address slots. Decoding must reject or accept without reading
// or writing out of bounds, and an accepted agreement must be within the documented limits.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/bootstrap.h"

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
  collx::BootAgreement agreed;
  if (!collx::decode_boot_headers(headers.data(), rank, ranks, &agreed).ok()) return 0;
  if (agreed.max_addr_len == 0 || agreed.max_addr_len > collx::kMaxAddress) std::abort();
  for (const collx::BootHeader& h : headers) {
    if (h.addr_len > agreed.max_addr_len || h.comm_id > agreed.comm_id) std::abort();
  }
  const size_t rest = size > header_bytes ? size - header_bytes : 0;
  std::vector<uint8_t> blob(static_cast<size_t>(agreed.max_addr_len) * ranks);
  std::memcpy(blob.data(), data + (size - rest), rest < blob.size() ? rest : blob.size());
  std::vector<std::vector<uint8_t>> addrs;
  if (!collx::decode_addresses(blob.data(), blob.size(), headers.data(), ranks,
                               agreed.max_addr_len, &addrs).ok()) {
    std::abort();  // consistent headers always decode
  }
  for (int i = 0; i < ranks; ++i) {
    if (addrs[i].size() != headers[i].addr_len) std::abort();
  }
  return 0;
}
