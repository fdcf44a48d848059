// Comm: running blocking collectives on host buffers (COLLX_CHECK, the profiler) and the
// communicator's lifetime after creation. Creation is in comm_create.cc, the non-blocking
// operations in comm_async.cc, the device-buffer calls in comm_device.cc.
#include "core/comm.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/context.h"
#include "memory/cuda_driver.h"
#include "memory/host_copy.h"

namespace collx {

Comm::Comm(std::unique_ptr<Transport> transport, const Config& config, Selection selection)
    : transport_(std::move(transport)),
      config_(config),
      selection_(std::move(selection)),
      stores_(config.shm_stores == "streaming" ? ShmStores::kStreaming
              : config.shm_stores == "cached"  ? ShmStores::kCached
                                               : ShmStores::kAuto),
      pointers_(std::make_unique<PointerCache>(cuda_memory_query())),
      make_copier_(cuda_copier),
      make_ipc_(cuda_device_ipc) {
  if (config.profile) profile_ = std::make_unique<Profile>();
  ops_->spin_us = config.spin;
  ops_->async_min = config.async_min;
}

Status Comm::check_memory(const void* send, const void* recv, size_t bytes, const char* fn,
                          AllreduceOp* op) {
  bool send_straddles = false, recv_straddles = false;
  const MemRange s = pointers_->classify(send, bytes, &send_straddles);
  const MemRange r = send == recv ? s : pointers_->classify(recv, bytes, &recv_straddles);
  if (send_straddles || recv_straddles) {
    return error(COLLX_ERR_INVALID_ARG,
                 "%s: %s (%zu bytes) is not inside one allocation: part of it is CUDA memory "
                 "and part is not, or it runs past the end of its CUDA allocation",
                 fn, send_straddles ? "sendbuf" : "recvbuf", bytes);
  }
  if (s.kind != r.kind) {
    return error(COLLX_ERR_INVALID_ARG,
                 "%s: sendbuf is %s memory and recvbuf %s memory: both buffers of a call must "
                 "be the same kind of memory",
                 fn, mem_kind_name(s.kind), mem_kind_name(r.kind));
  }
  if (s.kind == MemKind::kDevice && s.device != r.device) {
    return error(COLLX_ERR_INVALID_ARG,
                 "%s: sendbuf is memory of CUDA device %d and recvbuf of device %d: both "
                 "buffers of a call must be on one device",
                 fn, s.device, r.device);
  }
  // The GPU kernels read and write whole elements, and a misaligned one is a device fault
  // that would end the process's CUDA context: refused here instead. (cudaMalloc's are
  // 256-byte aligned; host buffers may lie at any offset.)
  if (s.kind == MemKind::kDevice) {
    const size_t elem = op->red.elem_size;  // (set by the caller: at least 1)
    const size_t send_off = reinterpret_cast<uintptr_t>(send) % elem;
    const size_t recv_off = reinterpret_cast<uintptr_t>(recv) % elem;
    if (send_off != 0 || recv_off != 0) {
      return error(COLLX_ERR_INVALID_ARG,
                   "%s: %s is CUDA device memory %zu bytes past a multiple of its element "
                   "size (%zu): device buffers must be aligned to their elements",
                   fn, send_off != 0 ? "sendbuf" : "recvbuf",
                   send_off != 0 ? send_off : recv_off, elem);
    }
  }
  // Managed memory is host-accessible: the host algorithms reduce it where it is.
  op->mem = s.kind == MemKind::kDevice ? MemKind::kDevice : MemKind::kHost;
  op->device = s.device;
  op->send_base = s.base;
  op->recv_base = r.base;
  op->send_size = s.size;
  op->recv_size = r.size;
  op->send_id = s.buffer_id;
  op->recv_id = r.buffer_id;
  return Status();
}

template <typename F>
Status Comm::contained(const char* what, F&& op) {
  try {
    return op();
  } catch (...) {
    const Status st = exception_status(what);
    try {
      (void)transport_->end_op(st);  // cancels what is pending: nothing lands in buffers later
      fail(st);
    } catch (...) {
      fail(Status(st.code(), std::string()));  // allocates nothing
    }
    return st;
  }
}

Status Comm::small_allreduce(int64_t* v, size_t n, collx_op_t op) {
  if (!failed_.ok()) return failed_;
  Reducer red;
  COLLX_TRY(make_reducer(COLLX_INT64, op, &red));
  return contained("an internal allreduce", [&] {
    transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
    Status st = transport_->end_op(allreduce_recursive_doubling(
        AllreduceArgs{*transport_, red, reinterpret_cast<uint8_t*>(v),
                      reinterpret_cast<uint8_t*>(v), n, scratch_, config_.ring_segment}));
    if (!st.ok()) fail(st);
    return st;
  });
}

Status Comm::execute_profiled(const AllreduceOp& op) {
  const auto t0 = std::chrono::steady_clock::now();
  across_ran_ = 0;
  Status st = execute(op);
  if (st.ok()) {
    const size_t bytes = op.count * op.red.elem_size;
    profile_->record(bytes, ran_, across_ran_, std::chrono::steady_clock::now() - t0);
  }
  return st;
}

Status Comm::report_profile() {
  constexpr int kB = Profile::kBuckets;
  ProfileBucket* b = profile_->buckets();
  constexpr int kCaches = 6;
  int64_t sums[3 * kB + kCaches], mins[kB], maxs[kB], algos[2 * kB];  // algos, then across
  for (int i = 0; i < kB; ++i) {
    sums[i] = b[i].calls, sums[kB + i] = b[i].total_ns, sums[2 * kB + i] = b[i].bytes;
    mins[i] = b[i].min_ns, maxs[i] = b[i].max_ns, algos[i] = b[i].algos;
    algos[kB + i] = b[i].across;
  }
  const PointerCache::Stats& pc = pointers_->stats();
  const IpcCache::Stats ipc = ipc_peers_ ? ipc_peers_->stats() : IpcCache::Stats{};
  int64_t* caches = sums + 3 * kB;
  caches[0] = static_cast<int64_t>(pc.hits), caches[1] = static_cast<int64_t>(pc.misses);
  caches[2] = static_cast<int64_t>(ipc.hits), caches[3] = static_cast<int64_t>(ipc.opens);
  caches[4] = static_cast<int64_t>(ipc.closes), caches[5] = static_cast<int64_t>(ipc_exported_);
  if (size() > 1) {
    COLLX_TRY(small_allreduce(sums, 3 * kB + kCaches, COLLX_SUM));
    COLLX_TRY(small_allreduce(mins, kB, COLLX_MIN));
    COLLX_TRY(small_allreduce(maxs, kB, COLLX_MAX));
    COLLX_TRY(small_allreduce(algos, 2 * kB, COLLX_BOR));
  }
  if (rank() != 0) return Status();
  Profile all;
  all.caches = CacheCounts{caches[0], caches[1], caches[2], caches[3], caches[4], caches[5]};
  for (int i = 0; i < kB; ++i) {
    all.buckets()[i] = ProfileBucket{sums[i],          sums[kB + i], mins[i],    maxs[i],
                                     sums[2 * kB + i], algos[i],     algos[kB + i]};
  }
  std::fputs(all.table(size()).c_str(), stderr);
  if (!config_.profile_file.empty()) {
    const std::string j = all.json(size());  // before the file is open: it may throw
    FILE* f = std::fopen(config_.profile_file.c_str(), "w");
    if (f == nullptr) {
      return error(COLLX_ERR_CONFIG, "COLLX_PROFILE_FILE=%s: cannot write: %s",
                   config_.profile_file.c_str(), strerror(errno));
    }
    const bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
    if (std::fclose(f) != 0 || !ok) {
      return error(COLLX_ERR_CONFIG, "COLLX_PROFILE_FILE=%s: write failed",
                   config_.profile_file.c_str());
    }
  }
  return Status();
}

Comm::~Comm() {
  drain();
  {
    std::lock_guard<std::mutex> g(ops_->mu);
    ops_->stop = true;
  }
  ops_->work.notify_all();
  if (worker_.joinable()) worker_.join();
  across_.clear();  // views of transport_
  // A request let go (Transport::gave_up) may still read the scratch space, or one of host
  // staging's pinned slots (a chunk's send), while the endpoint to that peer serves other
  // communicators: they stay with the transport's keeper.
  if (transport_ != nullptr && transport_->gave_up()) {
    if (uint8_t* p = scratch_.release()) transport_->keep(p, Scratch::free_released);
    if (copier_ != nullptr) {
      transport_->keep(copier_.release(), [](void* p) { delete static_cast<DeviceCopier*>(p); });
    }
  }
  transport_.reset();
  if (context_ != nullptr) {
    context_->ids.release(comm_id_, id_owner_);
    context_->live_comms.fetch_sub(1);
  }
}

Status Comm::usable() const {
  if (failed_.ok()) return Status();
  return error(COLLX_ERR_COMM_FAILED, "communicator unusable after an earlier error: %s",
               failed_.message().c_str());
}

// COLLX_CHECK inside the running operation. On disagreement it ends the operation: nothing is
// in flight then, so the communicator stays usable; any other error (timeout, peer failure)
// leaves it unusable.
Status Comm::agree(const AllreduceOp& op, uint32_t seq) {
  Status st = check_agreement(op, seq);
  if (st.ok()) return st;
  st = transport_->end_op(std::move(st));
  if (st.code() != COLLX_ERR_MISMATCH) fail(st);
  return st;
}

Status Comm::execute(const AllreduceOp& op) {
  if (op.mem == MemKind::kDevice) return execute_device(op);
  if (op.on_stream) COLLX_TRY(cuda_stream_synchronize(op.stream));
  return execute_host(op, next_seq_++, config_.check);
}

Status Comm::execute_host(const AllreduceOp& op, uint32_t seq, bool check) {
  COLLX_TRY(usable());
  const int p = size();
  const auto* send = static_cast<const uint8_t*>(op.send);
  auto* recv = static_cast<uint8_t*>(op.recv);
  const size_t bytes = op.count * op.red.elem_size;
  ran_ = selection_.pick(bytes);
  if (p == 1) {
    if (send != recv && bytes != 0) copy_cached(recv, send, bytes);
    return Status();
  }
  if (op.count == 0 && !check) return Status();
  transport_->begin_op(seq, config_.timeout_s, config_.spin);
  if (check) COLLX_TRY(agree(op, seq));
  if (op.count == 0) return transport_->end_op(Status());
  const AllreduceArgs args{*transport_, op.red,   send,       recv,     op.count,
                           scratch_,    config_.ring_segment, shm_.get(), &stores_,
                           hier_.blocks > 0 ? &hier_ : nullptr, op.red.finalize != nullptr ? p : 0};
  Status st = transport_->end_op(run_allreduce(ran_, args));
  if (!st.ok()) fail(st);
  return st;
}

// COLLX_CHECK: one small allreduce (min of each field and of its negation) tells whether all
// ranks agree; only on disagreement two more find the first rank that differs and its call.
// Runs in the collective's own sequence number, on steps above the algorithms' range.
Status Comm::check_agreement(const AllreduceOp& op, uint32_t seq) {
  constexpr int kFields = 5;
  const int r = rank();
  const int64_t sig[kFields] = {static_cast<int64_t>(op.count), op.dtype, op.op,
                                op.send == op.recv ? 1 : 0, op.mem == MemKind::kDevice ? 1 : 0};
  Reducer min, sum;
  COLLX_TRY(make_reducer(COLLX_INT64, COLLX_MIN, &min));
  COLLX_TRY(make_reducer(COLLX_INT64, COLLX_SUM, &sum));
  uint32_t base = kMaxSteps;
  auto allreduce = [&](int64_t* v, size_t n, const Reducer& red) {
    transport_->set_step_base(base);
    base += 0x100;
    return allreduce_recursive_doubling(
        AllreduceArgs{*transport_, red, reinterpret_cast<uint8_t*>(v),
                      reinterpret_cast<uint8_t*>(v), n, scratch_, config_.ring_segment});
  };
  int64_t range[2 * kFields];
  for (int i = 0; i < kFields; ++i) range[i] = sig[i], range[kFields + i] = -sig[i];
  COLLX_TRY(allreduce(range, 2 * kFields, min));
  bool agree = true;
  for (int i = 0; i < kFields; ++i) agree = agree && range[i] == -range[kFields + i];
  transport_->set_step_base(0);
  if (agree) return Status();

  int64_t ref[kFields];  // rank 0's call
  for (int i = 0; i < kFields; ++i) ref[i] = r == 0 ? sig[i] : 0;
  COLLX_TRY(allreduce(ref, kFields, sum));
  int64_t first = INT64_MAX;
  for (int i = 0; i < kFields; ++i) {
    if (sig[i] != ref[i]) first = r;
  }
  COLLX_TRY(allreduce(&first, 1, min));
  int64_t other[kFields];
  for (int i = 0; i < kFields; ++i) other[i] = r == first ? sig[i] : 0;
  COLLX_TRY(allreduce(other, kFields, sum));
  transport_->set_step_base(0);
  auto describe = [](const int64_t* v) {
    return format("count %lld, %s, %s, %s, %s", static_cast<long long>(v[0]),
                  collx_dtype_name(static_cast<collx_dtype_t>(v[1])),
                  collx_op_name(static_cast<collx_op_t>(v[2])), v[3] ? "in-place" : "out-of-place",
                  v[4] ? "CUDA device memory" : "host memory");
  };
  return error(COLLX_ERR_MISMATCH,
               "rank %d: COLLX_CHECK: ranks disagree on collective #%u: rank 0 called with %s, "
               "rank %lld with %s",
               r, seq, describe(ref).c_str(), static_cast<long long>(first),
               describe(other).c_str());
}

void Comm::fail(const Status& st) {
  failed_ = st;
  transport_->mark_failed();
}

Status Comm::run_barrier() {
  COLLX_TRY(usable());
  return contained("the communicator's barrier", [&] {
    transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
    Status st = transport_->end_op(barrier(*transport_));
    if (!st.ok()) fail(st);
    return st;
  });
}

Status Comm::shutdown() {
  drain();
  Status st;
  if (profile_ && failed_.ok()) st = report_profile();
  Status barrier = run_barrier();
  return st.ok() ? barrier : st;
}

Status Comm::allreduce(const AllreduceOp& op) {
  drain();
  return execute_safely(op);
}

Status Comm::execute_safely(const AllreduceOp& op) {
  return contained("allreduce", [&] {
    if (profile_) [[unlikely]]
      return execute_profiled(op);
    return execute(op);
  });
}

}  // namespace collx
