// Comm's device-buffer calls: the one kernel (cuda/flags.h) for small messages, CUDA IPC
// (algo/cuda_ipc.cc) where every rank of the node can take part, host staging
// (memory/staging.h) elsewhere, reduced on the GPUs (algo/staged_gpu.cc) where so configured
// and every rank is on one node. The host calls are in comm.cc and comm_async.cc, creation in
// comm_create.cc.
#include <algorithm>
#include <memory>

#include "algo/algo.h"
#include "core/comm.h"
#include "memory/staging.h"

namespace collx {

namespace {

// A rank's own part before a vote of the device algorithms, as a status: an exception there
// (no memory for its device object or caches) must not keep it from the vote its peers wait
// in; it votes no, and every rank stages the call.
template <typename F>
Status own_part(const char* what, F&& part) {
  try {
    return part();
  } catch (...) {
    return exception_status(what);
  }
}

}  // namespace

// Device buffers: over CUDA IPC where every rank of the node can take part, else staged
// through host memory. COLLX_CHECK checks the call as a whole first (the chunks of staged
// calls that disagree could agree), so that a mismatch leaves every rank at the same
// sequence number.
Status Comm::execute_device(const AllreduceOp& op) {
  COLLX_TRY(usable());
  if (config_.check && size() > 1) {
    const uint32_t seq = next_seq_++;
    transport_->begin_op(seq, config_.timeout_s, config_.spin);
    COLLX_TRY(agree(op, seq));
    COLLX_TRY(transport_->end_op(Status()));
  }
  if (op.count == 0) {  // nothing to reduce: no copier or IPC object needed
    ran_ = Algo::kStaged;
    return Status();
  }
  // Every rank takes the same branch: the shared segment, COLLX_CUDA and the IPC thresholds
  // (agreed at creation), the count (COLLX_CHECK verifies it) and the kind of memory are the
  // same on all ranks. Below both thresholds the call is staged whatever the GPUs are, so
  // without describing the buffers (which costs a time slice where ranks share a GPU).
  const size_t bytes = op.count * op.red.elem_size;
  const bool ipc = shm_ != nullptr && config_.cuda_ipc && size() > 1;
  if (ipc && bytes <= config_.cuda_flags_max && flags_.state != Flags::State::kOff) {
    bool ran = false;
    Status st = execute_flags(op, &ran);
    if (!st.ok() || ran) return st;
  }
  const bool small = bytes < std::min(config_.cuda_ipc_min, config_.cuda_ipc_min_timesliced);
  if (ipc && !small) {
    bool ran = false;
    Status st = execute_ipc(op, &ran);
    if (!st.ok() || ran) return st;
  }
  if (ipc && bytes >= config_.cuda_staged_gpu_min) {
    bool ran = false;
    Status st = execute_staged_gpu(op, &ran);
    if (!st.ok() || ran) return st;
  }
  return execute_staged(op);
}

Status Comm::ipc_export(uintptr_t base, size_t size, uint64_t id, const void* p, IpcExport* out) {
  IpcHandle* h = ipc_handles_.find(id);
  if (h == nullptr) {
    IpcHandle fresh;
    COLLX_TRY(ipc_dev_->export_handle(reinterpret_cast<const void*>(base), &fresh));
    ++ipc_exported_;
    h = &ipc_handles_.put(id, fresh, [](uint64_t, IpcHandle&) {});
  }
  *out = IpcExport{*h, base, size, reinterpret_cast<uintptr_t>(p) - base, id};
  return Status();
}

Status Comm::execute_ipc(const AllreduceOp& op, bool* ran) {
  *ran = false;
  // This rank's part: its device's IPC object (kept across calls) and its buffers' handles.
  // Where it cannot, it still takes part in the vote, which then sends every rank to staging.
  IpcExport send_x, recv_x;
  const Status local = own_part("the CUDA IPC allreduce's setup", [&] {
    if (ipc_dev_ == nullptr || ipc_device_ != op.device) {
      ipc_peers_.reset();  // its mappings close through the old object
      ipc_dev_.reset();
      ipc_device_ = -1;
      std::unique_ptr<DeviceIpc> dev;
      COLLX_TRY(make_ipc_(op.device, &dev));
      ipc_peers_ = std::make_unique<IpcCache>(dev.get(), std::max<size_t>(64, 4 * size()));
      ipc_dev_ = std::move(dev);
      ipc_device_ = op.device;
    }
    // The peers read the input as soon as this rank says it is there.
    COLLX_TRY(ipc_dev_->wait_stream(op.on_stream ? op.stream : nullptr));
    COLLX_TRY(ipc_export(op.send_base, op.send_size, op.send_id, op.send, &send_x));
    return ipc_export(op.recv_base, op.recv_size, op.recv_id, op.recv, &recv_x);
  });
  const CudaIpcArgs args{*transport_,
                         *shm_,
                         scratch_,
                         ipc_dev_.get(),
                         ipc_peers_.get(),
                         op.dtype,
                         op.op,
                         op.red.elem_size,
                         static_cast<const uint8_t*>(op.send),
                         static_cast<uint8_t*>(op.recv),
                         op.count,
                         local.ok(),
                         send_x,
                         recv_x,
                         op.count * op.red.elem_size >= config_.cuda_two_shot,
                         config_.cuda_ipc_min,
                         config_.cuda_ipc_min_timesliced};
  ran_ = args.two_shot ? Algo::kCudaIpcTwoShot : Algo::kCudaIpcOneShot;
  transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
  Status st = transport_->end_op(allreduce_cuda_ipc(args, ran));
  if (!st.ok()) fail(st);
  return st;
}

Status Comm::execute_flags(const AllreduceOp& op, bool* ran) {
  *ran = false;
  if (flags_.state == Flags::State::kUnknown) {
    // Where this rank cannot make its device object it still takes part, voting no.
    std::unique_ptr<DeviceIpc> dev;
    const Status made = own_part("the one-kernel allreduce's setup", [&] {
      flags_.areas.assign(static_cast<size_t>(size()), nullptr);
      return make_ipc_(op.device, &dev);
    });
    if (!made.ok()) dev.reset();  // (without a device the setup touches no area)
    bool on = false;
    transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
    Status st =
        transport_->end_op(cuda_flags_setup({*transport_, *shm_, dev.get(), config_.cuda_flags_max},
                                            &on, &flags_.one_gpu, flags_.areas.data()));
    if (!st.ok()) {
      fail(st);
      return st;
    }
    flags_.state = on ? Flags::State::kOn : Flags::State::kOff;
    if (!on) return Status();
    flags_.dev = std::move(dev);
    flags_.device = op.device;
    flags_.rank = rank();
  }
  if (flags_.state != Flags::State::kOn) return Status();
  *ran = true;
  ran_ = Algo::kCudaIpcFlags;
  Status st;
  if (op.device != flags_.device) {
    // The peers' kernels wait for this rank's flags on the other device: they time out.
    st = error(COLLX_ERR_INVALID_ARG,
               "rank %d: device buffers of %zu bytes on device %d, but this communicator's "
               "one-kernel allreduce runs on device %d (COLLX_CUDA_FLAGS_MAX=0 lets a "
               "communicator change devices)",
               rank(), op.count * op.red.elem_size, op.device, flags_.device);
  } else {
    const DeviceIpc::FlagsCall c{flags_.areas.data(),
                                 size(),
                                 rank(),
                                 ++flags_.seq,
                                 config_.cuda_flags_max,
                                 op.send,
                                 op.recv,
                                 op.count,
                                 op.dtype,
                                 op.op,
                                 op.on_stream,
                                 op.stream,
                                 config_.timeout_s,
                                 config_.spin,
                                 flags_.one_gpu,
                                 outer_progress};
    int waited_for = -1;
    st = flags_.dev->allreduce_flags(c, &waited_for);
    if (st.ok() && waited_for >= 0) {
      st =
          error(COLLX_ERR_TIMEOUT,
                "rank %d: the one-kernel CUDA allreduce (call %llu) waited %g s for rank %d's "
                "kernel",
                rank(), static_cast<unsigned long long>(flags_.seq), config_.timeout_s, waited_for);
    }
  }
  if (!st.ok()) fail(st);
  return st;
}

Status Comm::execute_staged_gpu(const AllreduceOp& op, bool* ran) {
  *ran = false;
  // This rank's part: a device object with the slots registered (kept across calls; made
  // again for another device). Where it cannot, it still takes part, voting no.
  StagedGpu& g = staged_gpu_;
  if (g.device != op.device) {
    g.dev.reset();  // unregisters the slots before another object registers them
    g.slots_device = nullptr;
    g.device = op.device;
    std::unique_ptr<DeviceIpc> dev;
    void* slots = nullptr;
    const Status made = own_part("the staged allreduce's setup", [&] {
      COLLX_TRY(make_ipc_(op.device, &dev));
      return dev->map_host(shm_->slots_begin(), shm_->slots_bytes(), &slots);
    });
    if (made.ok()) {
      g.dev = std::move(dev);
      g.slots_device = static_cast<uint8_t*>(slots);
    }
  }
  // The copies read the input as soon as this call runs.
  const bool local =
      g.dev != nullptr && g.dev->wait_stream(op.on_stream ? op.stream : nullptr).ok();
  const StagedGpuArgs args{*transport_,
                           *shm_,
                           scratch_,
                           local ? g.dev.get() : nullptr,
                           g.slots_device,
                           op.dtype,
                           op.op,
                           op.red.elem_size,
                           op.red.kind,
                           static_cast<const uint8_t*>(op.send),
                           static_cast<uint8_t*>(op.recv),
                           op.count};
  ran_ = Algo::kStagedGpu;
  transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
  Status st = transport_->end_op(allreduce_staged_gpu(args, ran));
  if (!st.ok()) fail(st);
  return st;
}

// Host staging: the host algorithms reduce device buffers chunk by chunk in pinned host
// memory, each chunk a collective of its own.
Status Comm::execute_staged(const AllreduceOp& op) {
  Status st;
  if (copier_ == nullptr || copier_device_ != op.device) {
    copier_.reset();
    st = make_copier_(op.device, &copier_);
    copier_device_ = st.ok() ? op.device : -1;
  }
  if (st.ok() && op.on_stream) st = copier_->after_stream(op.stream);
  if (st.ok()) {
    const size_t chunk = staging_chunk_count(config_.staging_chunk, op.red.elem_size);
    st = staged_allreduce(*copier_, op.send, op.recv, op.count, op.red.elem_size, chunk,
                          [&](void* host, size_t n, size_t) {
                            AllreduceOp c = op;
                            c.send = host;
                            c.recv = host;
                            c.count = n;
                            c.mem = MemKind::kHost;
                            return execute_host(c, next_seq_++, false);
                          });
  }
  ran_ = Algo::kStaged;
  // The peers went on with the chunks this rank did not run: it is out of step with them.
  if (!st.ok() && failed_.ok()) fail(st);
  return st;
}

}  // namespace collx
