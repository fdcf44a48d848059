// CUDA IPC allreduce of device buffers for the ranks of one node whose GPUs can read each
// other's memory (several ranks on one GPU, or GPUs with peer access). Each rank's kernels
// read the peers' buffers directly, through IPC mappings of the peers' allocations kept open
// by the IPC registration cache (memory/ipc_cache.h), so a repeated call opens nothing.
//
// cuda_ipc_one_shot  every rank reduces all inputs, in rank order, into its own output: one
//                    kernel, p reads of every element. For small messages (latency).
// cuda_ipc_two_shot  rank r reduces slice r of all inputs, in rank order, into slice r of its
//                    own output; then copies every other slice from its owner's output. Each
//                    element is read p times in all and written p times, whatever p: for
//                    large messages (bandwidth).
//
// Both reduce in rank order, so the results are bitwise identical on all ranks.
//
// The ranks synchronise through the node's shared segment (host flags, epochs as in
// transport/shm.h), after the GPU work they order has finished (the stream synchronised):
//   ready    its input is complete on the device and its buffers are described;
//   voted    it has opened every peer's buffers, or says it cannot;
//   reduced  its reduction has finished: it reads no peer's input any more (one-shot), its
//            slice of the result is complete (two-shot);
//   done     two-shot: it has copied the other slices out: it reads no peer's output any more;
//   aborted  its GPU work failed, or it saw a peer's fail: it leaves the call, and so do the
//            others at their next wait (each returning only once no peer reads its buffers).
// No rank writes memory a peer may still read: a one-shot in place reduces into scratch and
// copies the result over its input only after every rank has finished reading that input;
// a two-shot writes only its own slice (read by nobody else before `reduced`) until
// `reduced`, and no rank returns (freeing its buffers for reuse) before `done`.
//
// Host flags, not flags in device memory written by the kernels themselves: with several
// processes on one GPU and no MPS the GPU runs one process's kernels at a time, so a kernel
// spinning on a flag that a kernel of another process sets would hold the GPU while the other
// waits for its time slice.
#include <algorithm>
#include <cstring>

#include "algo/algo.h"
#include "algo/gpu_head.h"
#include "algo/rank_math.h"
#include "algo/shm_sync.h"
#include "memory/device_ipc.h"
#include "transport/shm.h"

namespace collx {

namespace {

// What a rank writes into its ShmIpcArea before publishing `ready`.
struct Descriptor {
  GpuHead head;  // ok: send and recv are valid
  IpcExport send, recv;
};
static_assert(sizeof(Descriptor) <= sizeof(ShmIpcArea::descriptor));

GpuHead head_of(const ShmChannel& ch, int q) {
  GpuHead h;
  std::memcpy(&h, ch.flags(q).ipc.descriptor, sizeof h);
  return h;
}

// Whether two ranks' descriptors name the same GPU and one of them works on it without MPS.
bool descriptors_timesliced(const ShmChannel& ch) {
  return timesliced(ch.size(), [&](int q) { return head_of(ch, q); });
}

// Describes this rank's buffers (`able`: it can take part), waits for every rank's
// description, opens the peers' buffers and votes. *ran: every rank could; then send_of[q]
// and recv_of[q] are rank q's buffers as this process addresses them.
Status describe_and_open(const CudaIpcArgs& a, uint64_t e, bool able, bool* ran,
                         const uint8_t** send_of, uint8_t** recv_of) {
  ShmChannel& ch = a.ch;
  const int p = ch.size(), r = ch.rank();
  Descriptor mine{};
  mine.head = gpu_head(a.dev, a.exported && able);
  mine.send = a.send_x;
  mine.recv = a.recv_x;
  std::memcpy(ch.flags(r).ipc.descriptor, &mine, sizeof mine);
  shm_publish(ch, &ShmRankFlags::ready, e);
  COLLX_TRY(shm_wait_all(a.t, ch, &ShmRankFlags::ready, e, "describe its device buffers"));
  // Small messages are staged, at a larger size where ranks share a GPU without MPS. Every
  // rank decides from the same descriptors, so no vote is needed for it. (Below both sizes
  // the communicator has staged already, without describing anything.)
  const size_t bytes = a.count * a.elem_size;
  if (bytes < std::max(a.ipc_min, a.ipc_min_timesliced) &&
      bytes < (descriptors_timesliced(ch) ? a.ipc_min_timesliced : a.ipc_min)) {
    *ran = false;
    return Status();
  }

  bool ok = mine.head.ok != 0;
  for (int q = 0; q < p && ok; ++q) {
    if (q == r) {
      send_of[q] = a.send;
      recv_of[q] = a.recv;
      continue;
    }
    Descriptor d;
    std::memcpy(&d, ch.flags(q).ipc.descriptor, sizeof d);
    ok = d.head.ok != 0 && a.dev->can_reach(d.head.device);
    void* send_base = nullptr;
    void* recv_base = nullptr;
    ok = ok && a.peers->map(q, d.send, &send_base).ok() &&
         a.peers->map(q, d.recv, &recv_base).ok();
    if (ok) {
      send_of[q] = static_cast<const uint8_t*>(send_base) + d.send.offset;
      recv_of[q] = static_cast<uint8_t*>(recv_base) + d.recv.offset;
    }
  }
  ch.flags(r).ipc.vote = ok ? 1 : 0;
  shm_publish(ch, &ShmRankFlags::voted, e);
  COLLX_TRY(shm_wait_all(a.t, ch, &ShmRankFlags::voted, e, "open the peers' device buffers"));
  for (int q = 0; q < p; ++q) ok = ok && ch.flags(q).ipc.vote != 0;
  *ran = ok;
  return Status();
}

// Waits for flag `which` of every rank. A rank that failed in the epoch ends the call for
// all: this rank then leaves the epoch too (so that nobody waits for it), once every rank
// has passed `which` or left, so that none still reads its buffers when it returns.
Status wait_peers(const CudaIpcArgs& a, ShmFlag ShmRankFlags::*which, uint64_t e,
                  const char* what) {
  int first = -1;
  COLLX_TRY(shm_wait_all_or_aborted(a.t, a.ch, which, e, what, &first));
  if (first < 0) return Status();
  shm_publish(a.ch, &ShmRankFlags::aborted, e);
  return error(COLLX_ERR_PEER_FAILED,
               "rank %d: rank %d's GPU work failed in the CUDA IPC allreduce (its own error "
               "names the cause)",
               a.ch.rank(), first);
}

// Runs the device work `f` (queue it and synchronize: also where queuing failed part way, so
// that no work queued before is left to touch the buffers). On failure this rank leaves the
// epoch, and returns once every rank has passed `which` (the point up to which peers read
// its buffers) or left too.
template <typename F>
Status on_device(const CudaIpcArgs& a, uint64_t e, ShmFlag ShmRankFlags::*which, F&& f) {
  Status st = f();
  const Status synced = a.dev->synchronize();
  if (st.ok()) st = synced;
  if (st.ok()) return st;
  shm_publish(a.ch, &ShmRankFlags::aborted, e);
  int first = -1;
  const char* what = "stop reading this rank's buffers";
  (void)shm_wait_all_or_aborted(a.t, a.ch, which, e, what, &first);
  return st;
}

Status one_shot(const CudaIpcArgs& a, uint64_t e, const void* const* inputs) {
  const int p = a.ch.size();
  const size_t bytes = a.count * a.elem_size;
  // In place, the output is this rank's input, which the peers are reading: the result waits
  // in scratch until they are done.
  void* dst = a.recv;
  COLLX_TRY(on_device(a, e, &ShmRankFlags::reduced, [&] {
    if (a.send == a.recv) COLLX_TRY(a.dev->scratch(bytes, &dst));
    return a.dev->reduce(dst, inputs, p, a.count, a.dtype, a.op, p);
  }));
  shm_publish(a.ch, &ShmRankFlags::reduced, e);
  COLLX_TRY(wait_peers(a, &ShmRankFlags::reduced, e, "read this rank's input"));
  if (dst == a.recv) return Status();
  // Every rank is done with this epoch's flags: a failure here is this rank's alone.
  COLLX_TRY(a.dev->copy(a.recv, dst, bytes));
  return a.dev->synchronize();
}

Status two_shot(const CudaIpcArgs& a, uint64_t e, const void** inputs, uint8_t* const* recv_of) {
  const int p = a.ch.size(), r = a.ch.rank();
  const size_t elem = a.elem_size;
  const Range mine = block(a.count, static_cast<size_t>(p), static_cast<size_t>(r));
  if (mine.len > 0) {
    const size_t at = mine.begin * elem;
    for (int q = 0; q < p; ++q) inputs[q] = static_cast<const uint8_t*>(inputs[q]) + at;
    COLLX_TRY(on_device(a, e, &ShmRankFlags::reduced, [&] {
      return a.dev->reduce(a.recv + at, inputs, p, mine.len, a.dtype, a.op, p);
    }));
  }
  shm_publish(a.ch, &ShmRankFlags::reduced, e);
  COLLX_TRY(wait_peers(a, &ShmRankFlags::reduced, e, "reduce its slice"));
  COLLX_TRY(on_device(a, e, &ShmRankFlags::done, [&] {
    for (int q = 0; q < p; ++q) {
      const Range theirs = block(a.count, static_cast<size_t>(p), static_cast<size_t>(q));
      if (q == r || theirs.len == 0) continue;
      const size_t at = theirs.begin * elem;
      COLLX_TRY(a.dev->copy(a.recv + at, recv_of[q] + at, theirs.len * elem));
    }
    return Status();
  }));
  shm_publish(a.ch, &ShmRankFlags::done, e);
  return wait_peers(a, &ShmRankFlags::done, e, "copy its result out");
}

}  // namespace

Status cuda_flags_setup(const CudaFlagsSetupArgs& a, bool* on, bool* one_gpu, void** areas) {
  *on = false;
  *one_gpu = true;
  ShmChannel& ch = a.ch;
  const int p = ch.size(), r = ch.rank();
  const uint64_t e = ch.next_epoch();
  Descriptor mine{};
  void* area = nullptr;
  bool ok = a.dev != nullptr && p <= kFlagsMaxRanks && a.dev->flag_area(a.max_bytes, &area).ok() &&
            a.dev->export_handle(area, &mine.send.handle).ok();
  mine.head = gpu_head(a.dev, ok);
  std::memcpy(ch.flags(r).ipc.descriptor, &mine, sizeof mine);
  shm_publish(ch, &ShmRankFlags::ready, e);
  COLLX_TRY(shm_wait_all(a.t, ch, &ShmRankFlags::ready, e, "describe its flag area"));
  // Kernels that wait for each other must run at once: not where the GPU time-slices.
  ok = ok && !descriptors_timesliced(ch);
  bool opened[kFlagsMaxRanks] = {};
  for (int q = 0; q < p && ok; ++q) {
    if (q == r) {
      areas[q] = area;
      continue;
    }
    Descriptor d;
    std::memcpy(&d, ch.flags(q).ipc.descriptor, sizeof d);
    ok = d.head.ok != 0 && a.dev->can_reach(d.head.device) &&
         a.dev->open(q, d.send.handle, &areas[q]).ok();
    opened[q] = ok;
    *one_gpu = *one_gpu && d.head.device == mine.head.device;
  }
  ch.flags(r).ipc.vote = ok ? 1 : 0;
  shm_publish(ch, &ShmRankFlags::voted, e);
  Status st = shm_wait_all(a.t, ch, &ShmRankFlags::voted, e, "open the peers' flag areas");
  for (int q = 0; q < p && st.ok(); ++q) ok = ok && ch.flags(q).ipc.vote != 0;
  *on = st.ok() && ok;
  for (int q = 0; q < std::min(p, kFlagsMaxRanks) && !*on; ++q) {
    if (opened[q]) a.dev->close(areas[q]);
  }
  return st;
}

Status allreduce_cuda_ipc(const CudaIpcArgs& a, bool* ran) {
  *ran = false;
  const auto p = static_cast<size_t>(a.ch.size());
  const uint64_t e = a.ch.next_epoch();
  // Per rank: its input, its output, and the kernel's input (its input, offset). A rank
  // without memory for them still describes itself (its peers wait for that), voting no.
  uint8_t* space = nullptr;
  const bool have_space = a.scratch.get(3 * p * sizeof(void*), &space).ok();
  auto* send_of = have_space ? reinterpret_cast<const uint8_t**>(space) : nullptr;
  auto* recv_of = have_space ? reinterpret_cast<uint8_t**>(space + p * sizeof(void*)) : nullptr;
  auto* inputs =
      have_space ? reinterpret_cast<const void**>(space + 2 * p * sizeof(void*)) : nullptr;
  COLLX_TRY(describe_and_open(a, e, have_space, ran, send_of, recv_of));
  if (!*ran) return Status();
  for (size_t q = 0; q < p; ++q) inputs[q] = send_of[q];
  return a.two_shot ? two_shot(a, e, inputs, recv_of) : one_shot(a, e, inputs);
}

}  // namespace collx
