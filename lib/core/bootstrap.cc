#include "core/bootstrap.h"

#include "core/comm_ids.h"
#include "topo/node.h"

#include <algorithm>
#include <cstring>

namespace collx {

namespace {

uint64_t hash(const std::string& s) { return fnv1a(s.data(), s.size()); }

// SharedSettings' entries: the variable, and for a string (which travels as its hash) the
// Config member that holds it.
struct SettingName {
  const char* name;
  const std::string Config::*text = nullptr;
};
const SettingName kSettingNames[kSharedSettings] = {
    {"COLLX_ALLREDUCE_ALGO", &Config::algo}, {"COLLX_TUNE", &Config::tune},
    {"COLLX_TUNE_ACROSS", &Config::tune_across}, {"COLLX_RING_SEGMENT"},
    {"COLLX_CHECK"},         {"COLLX_CMA_MIN"},
    {"COLLX_SHM_CHUNK"},     {"COLLX_SHM_AREAS"},
    {"COLLX_STAGING_CHUNK"}, {"COLLX_CUDA"},
    {"COLLX_CUDA_TWO_SHOT"}, {"COLLX_CUDA_IPC_MIN"},
    {"COLLX_CUDA_IPC_MIN_TIMESLICED"}, {"COLLX_CUDA_FLAGS_MAX"},
    {"COLLX_CUDA_STAGED_GPU_MIN"}, {"COLLX_PROFILE"}};

}  // namespace

SharedSettings shared_settings(const Config& c) {
  return SharedSettings{{hash(c.algo), hash(c.tune), hash(c.tune_across), c.ring_segment,
                         c.check, c.cma_min, c.shm_chunk, static_cast<uint64_t>(c.shm_areas),
                         c.staging_chunk, c.cuda_ipc, c.cuda_two_shot, c.cuda_ipc_min,
                         c.cuda_ipc_min_timesliced, c.cuda_flags_max, c.cuda_staged_gpu_min,
                         c.profile}};
}

Status decode_boot_headers(const BootHeader* all, int rank, int size, BootAgreement* out,
                           const Config* own) {
  uint32_t comm_id = 0, max_len = 0;
  uint64_t owner = kFnvBasis;  // FNV-1a over every rank's (node, pid, creation)
  const auto mix = [&owner](uint64_t v) { owner = fnv1a(&v, sizeof v, owner); };
  for (int i = 0; i < size; ++i) {
    const BootHeader& h = all[i];
    if (h.magic == kBootMagic && h.rank == i && h.size == size && h.failed != 0) {
      const bool known = h.failed < 0 && h.failed >= COLLX_ERR_INTERNAL;
      return error(known ? static_cast<collx_status_t>(h.failed) : COLLX_ERR_MISMATCH,
                   "rank %d: rank %d's collx_comm_create failed before it could take part (%s; "
                   "its own error says why)",
                   rank, i, known ? status_name(static_cast<collx_status_t>(h.failed))
                                  : "an unknown status");
    }
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
  for (int i = 1; i < size; ++i) {
    for (int k = 0; k < kSharedSettings; ++k) {
      const uint64_t first = all[0].settings.value[k], mine = all[i].settings.value[k];
      if (mine == first) continue;
      const SettingName& s = kSettingNames[k];
      if (s.text != nullptr) {  // (strings travel as hashes: this rank can show only its own)
        const std::string here =
            own != nullptr ? format(" (this rank's: \"%s\")", ((*own).*s.text).c_str())
                           : std::string();
        return error(COLLX_ERR_CONFIG,
                     "rank %d: %s differs between rank 0 and rank %d%s: set it alike on all "
                     "ranks",
                     rank, s.name, i, here.c_str());
      }
      return error(COLLX_ERR_CONFIG,
                   "rank %d: %s differs between rank 0 (%llu) and rank %d (%llu): set it alike "
                   "on all ranks",
                   rank, s.name, static_cast<unsigned long long>(first), i,
                   static_cast<unsigned long long>(mine));
    }
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

Status failed_in_round_2(const uint8_t* blob, int rank, int size, uint32_t max_len) {
  const size_t slot = size_t{max_len} + kSlotHeader;
  int first = 0;
  while (first < size - 1 && (blob[static_cast<size_t>(first) * slot] & kFlagFailed) == 0) {
    ++first;
  }
  return error(COLLX_ERR_PEER_FAILED,
               "rank %d: rank %d's collx_comm_create failed during the bootstrap (its own "
               "error says why)",
               rank, first);
}

}  // namespace collx
