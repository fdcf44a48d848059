// staged_gpu: an allreduce of device buffers for the ranks of one node that CUDA IPC does not
// serve (GPUs without peer access, or below its sizes), through the node's shared memory and
// reduced by the GPUs instead of the host algorithms. The shared segment's slots are
// registered with each rank's GPU (page-locked and mapped), so copies into them are DMA and
// kernels read them directly. Chunk by chunk (the channel's chunk, one epoch each):
//
//   every rank copies its chunk of the input into its slot (device to host, a copy engine);
//   once all slots are full, every rank's kernel reads all of them, in rank order, into its
//   own output (one-shot: p reads of every element per rank, over PCIe).
//
// A rank queues chunk i's reduction and chunk i+1's copy together and then waits for both,
// so the kernel and the copy take one synchronisation; the CPU neither copies nor reduces.
// Every rank reduces in rank order with the same kernels, so results are bitwise identical
// across ranks (on GPUs of one kind).
//
// Slots are reused as in shm_one_shot (algo/shm_allreduce.cc): a rank publishes `ready` of
// epoch e only once its GPU work of epoch e-1 (the reads of every slot of e-1) has finished,
// and writes a slot of epoch e only after seeing every rank's `ready` of e-1, so a slot is
// never overwritten while a peer's kernel may read it; nothing is read once a rank returns.
//
// The first epoch carries each rank's GPU, whether it runs under MPS, and its vote (it has a
// device object, the registered segment and memory for the kernels' inputs, and its first
// copy worked), and the call check (algo/shm_sync.h). Where any rank votes no, or two ranks
// share a GPU without MPS (whose kernels would each wait for a time slice), every rank
// returns having reduced nothing, for the host algorithms to stage the call. A rank whose
// GPU work fails later publishes `aborted` for the epoch the others wait on, so they stop at
// once.
#include <algorithm>
#include <cstring>

#include "algo/algo.h"
#include "algo/gpu_head.h"
#include "algo/shm_sync.h"
#include "memory/device_ipc.h"
#include "transport/shm.h"

namespace collx {

static_assert(sizeof(GpuHead) <= sizeof(ShmIpcArea::staged[0]));

Status allreduce_staged_gpu(const StagedGpuArgs& a, bool* ran) {
  *ran = false;
  ShmChannel& ch = a.ch;
  const int p = ch.size(), r = ch.rank();
  const size_t elem = a.elem_size;
  const size_t per = ch.chunk() / elem;  // elements per chunk (the chunk is at least 4K)
  const size_t chunks = (a.count + per - 1) / per;
  auto elems = [&](size_t i) { return std::min(per, a.count - i * per); };
  auto copy_in = [&](size_t i, uint64_t e) {
    return a.dev->copy_to_host(ch.slot(e, r), a.send + i * per * elem, elems(i) * elem);
  };

  uint64_t e = ch.next_epoch();
  // The kernels' inputs: taken before the first epoch, which carries this rank's vote.
  uint8_t* space = nullptr;
  bool can = a.dev != nullptr && a.scratch.get(static_cast<size_t>(p) * sizeof(void*), &space).ok();
  if (can) {  // and its first copy works
    Status st = copy_in(0, e);
    const Status synced = a.dev->synchronize();
    can = st.ok() && synced.ok();
  }
  const GpuHead mine = gpu_head(a.dev, can);
  std::memcpy(ch.flags(r).ipc.staged[e & 1], &mine, sizeof mine);
  const uint64_t word = shm_call_word(a.count, a.kind);
  shm_set_call(ch, e, word);
  shm_publish(ch, &ShmRankFlags::ready, e);
  COLLX_TRY(shm_wait_all(a.t, ch, &ShmRankFlags::ready, e, "copy its first chunk to the host"));
  COLLX_TRY(shm_check_calls(a.t, ch, e, word));
  const auto head_of = [&](int q) {
    GpuHead h;
    std::memcpy(&h, ch.flags(q).ipc.staged[e & 1], sizeof h);
    return h;
  };
  for (int q = 0; q < p; ++q) {
    if (head_of(q).ok == 0) return Status();
  }
  if (timesliced(p, head_of)) return Status();
  *ran = true;

  auto* inputs = reinterpret_cast<const void**>(space);
  for (size_t i = 0; i < chunks; ++i) {
    for (int q = 0; q < p; ++q) inputs[q] = a.slots_device + (ch.slot(e, q) - ch.slots_begin());
    const uint64_t next = i + 1 < chunks ? ch.next_epoch() : e;
    Status st = a.dev->reduce(a.recv + i * per * elem, inputs, p, elems(i), a.dtype, a.op, p);
    if (st.ok() && next != e) st = copy_in(i + 1, next);
    const Status synced = a.dev->synchronize();  // also after a failure: nothing left queued
    if (st.ok()) st = synced;
    if (!st.ok()) {
      shm_publish(ch, &ShmRankFlags::aborted, next);
      return st;
    }
    if (next == e) break;
    e = next;
    shm_publish(ch, &ShmRankFlags::ready, e);
    int first = -1;
    COLLX_TRY(shm_wait_all_or_aborted(a.t, ch, &ShmRankFlags::ready, e,
                                      "copy its chunk to the host", &first));
    if (first >= 0) {
      shm_publish(ch, &ShmRankFlags::aborted, e);
      return error(COLLX_ERR_PEER_FAILED,
                   "rank %d: rank %d's GPU work failed in the staged allreduce reduced on the "
                   "GPU (its own error names the cause)",
                   r, ch.comm_rank(first));
    }
  }
  return Status();
}

}  // namespace collx
