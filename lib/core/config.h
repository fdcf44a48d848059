// The configuration table: every COLLX_* variable is one row. Parsing, validation, the error
// for an unknown COLLX_* name, the README's table and `collx_info --config` all come from it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "api/status.h"

namespace collx {

struct ConfigRow {
  const char* name;
  const char* type;  // "seconds", "microseconds", "bytes", "name", "ranges", "bool"
  const char* default_value;
  const char* doc;
};

// All rows, terminated by a row with a null name.
const ConfigRow* config_rows();

// The deadline is a time point: a larger timeout would overflow the clock (and is a hang).
constexpr double kMaxTimeout = 1e7;

struct Config {
  double timeout_s = 300;
  std::string algo = "auto";
  std::string tune;
  std::string tune_across;  // COLLX_TUNE_ACROSS: hierarchical's step between nodes
  size_t ring_segment = 0;
  int spin = 0;              // microseconds a wait busy-polls before yielding
  size_t async_min = 64 << 10;  // smaller non-blocking operations start when waited for
  bool check = false;        // agree on the call before each collective
  std::string node;          // node identity override
  size_t cma_min = 16 << 10;
  size_t shm_chunk = 256 << 10;
  int shm_areas = 4;  // COLLX_SHM_AREAS: data areas per rank, used in turn by epoch
  std::string shm_stores = "auto";  // COLLX_SHM_STORES: auto, streaming, cached
  size_t staging_chunk = 1 << 20;  // device buffers: bytes per staged chunk
  bool cuda_ipc = true;            // COLLX_CUDA: device buffers over CUDA IPC within a node
  size_t cuda_two_shot = 2 << 20;  // device buffers of at least this size: two-shot
  // Device buffers below these sizes are staged rather than reduced over CUDA IPC: when every
  // GPU runs one rank or MPS (cuda_ipc_min), and when ranks share a GPU without MPS, which
  // then runs one process's kernels at a time (cuda_ipc_min_timesliced).
  size_t cuda_ipc_min = 16 << 10;
  size_t cuda_ipc_min_timesliced = 2 << 20;
  // Device buffers of up to this size: the one-kernel allreduce (cuda/flags.h); 0: never.
  size_t cuda_flags_max = 2 << 20;
  // Staged device buffers of at least this size, every rank on one node: staged_gpu
  // (algo/staged_gpu.cc) instead of the host algorithms; SIZE_MAX ("off"): never.
  size_t cuda_staged_gpu_min = SIZE_MAX;
  bool profile = false;      // COLLX_PROFILE
  std::string profile_file;  // COLLX_PROFILE_FILE
  bool mpi = true;           // PMPI interposer on
  bool mpi_verbose = false;  // PMPI interposer statistics at MPI_Finalize
  bool mpi_host_copies = false;  // PMPI interposer: pass-through copies host buffers too
};

// Reads the COLLX_* variables of `env` (an environ-style array; the process environment when
// null). Unknown names and malformed values are COLLX_ERR_CONFIG naming the variable and value.
Status load_config(Config* out, char** env = nullptr);

// "4096", "4K", "512k", "1M", "2G" (powers of 1024). False if malformed or overflowing.
bool parse_bytes(std::string_view s, size_t* out);

}  // namespace collx
