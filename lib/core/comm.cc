#include "core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/bootstrap.h"
#include "core/context.h"
#include "memory/cuda_driver.h"
#include "topo/node.h"
#include "transport/ucx.h"

namespace collx {

namespace {

Status oob_allgather(const collx_comm_params_t& p, const void* send, void* recv, size_t bytes,
                     const char* what) {
  const int rc = p.allgather(send, recv, bytes, p.allgather_ctx);
  if (rc != 0) {
    return error(COLLX_ERR_TRANSPORT, "rank %d: out-of-band allgather of the %s failed (%d)",
                 p.rank, what, rc);
  }
  return Status();
}

// Peers read these 8 bytes with process_vm_readv to find out whether they may read this
// process's memory.
const volatile uint64_t g_cma_probe = kBootMagic;

}  // namespace

Comm::Comm(std::unique_ptr<Transport> transport, const Config& config, Selection selection)
    : transport_(std::move(transport)),
      config_(config),
      selection_(std::move(selection)),
      pointers_(std::make_unique<PointerCache>(cuda_memory_query())),
      make_copier_(cuda_copier),
      make_ipc_(cuda_device_ipc) {
  if (config.profile) profile_ = std::make_unique<Profile>();
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

Status Comm::create(std::unique_ptr<Transport> transport, const Config& config, Comm** out,
                    void* shared) {
  Selection sel;
  COLLX_TRY(make_selection(config, transport->size(),
                           Locality{shared != nullptr, shared != nullptr}, &sel));
  Comm* c = new Comm(std::move(transport), config, std::move(sel));
  if (shared != nullptr) {
    // Threads of this process: "peer memory" is this process's own (pid 0).
    c->shm_ = std::make_unique<ShmChannel>(shared, c->rank(), c->size(), config.shm_chunk,
                                           std::vector<int64_t>(c->size(), 0));
  }
  *out = c;
  return Status();
}

Status Comm::create(const collx_comm_params_t& p, Comm** out) {
  Context* ctx = Context::get();
  if (ctx == nullptr) {
    return error(COLLX_ERR_NOT_INITIALIZED, "collx_comm_create called before collx_init");
  }
  Config config;
  COLLX_TRY(load_config(&config));

  // Round 1: fixed-size headers (identity, node, proposed communicator id, address length).
  const std::vector<uint8_t>& my_addr = ctx->worker().address();
  const uint64_t my_node = node_id(config.node);
  BootHeader mine{kBootMagic,
                  p.rank,
                  p.size,
                  ctx->propose_comm_id(),
                  static_cast<uint32_t>(my_addr.size()),
                  my_node,
                  getpid(),
                  reinterpret_cast<uint64_t>(&g_cma_probe)};
  std::vector<BootHeader> all(static_cast<size_t>(p.size));
  COLLX_TRY(oob_allgather(p, &mine, all.data(), sizeof mine, "communicator headers"));
  BootAgreement agreed;
  COLLX_TRY(decode_boot_headers(all.data(), p.rank, p.size, &agreed));

  // Can this rank read the memory of every peer on its node (same user, ptrace allowed)?
  bool cma_ok = true, one_node = true;
  for (int i = 0; i < p.size; ++i) {
    one_node = one_node && all[i].node == my_node;
    if (i != p.rank && all[i].node == my_node) {
      cma_ok = cma_ok && cma_readable(all[i].pid, all[i].probe, kBootMagic);
    }
  }
  // Within one node rank 0 creates the shared-memory segment; its name travels in round 2.
  const bool use_shm = one_node && p.size > 1;
  std::unique_ptr<ShmSegment> created;
  Status shm_status;
  if (use_shm && p.rank == 0) {
    ShmSegment* seg = nullptr;
    shm_status = ShmSegment::create(ShmChannel::bytes_for(p.size, config.shm_chunk), &seg);
    created.reset(seg);
  }

  // Round 2: flags, segment name and the worker address padded to the longest, per rank.
  const uint32_t max_len = agreed.max_addr_len;
  std::vector<uint8_t> slot(size_t{max_len} + kSlotHeader, 0), slots(slot.size() * p.size);
  slot[0] = cma_ok ? kFlagCma : 0;
  if (created) std::memcpy(slot.data() + 1, created->name().c_str(), created->name().size());
  std::memcpy(slot.data() + kSlotHeader, my_addr.data(), my_addr.size());
  COLLX_TRY(oob_allgather(p, slot.data(), slots.data(), slot.size(), "worker addresses"));
  std::vector<PeerInfo> peers;
  COLLX_TRY(decode_peers(slots.data(), slots.size(), all.data(), p.size, max_len, &peers));
  const uint16_t comm_id = agreed.comm_id;
  ctx->commit_comm_id(comm_id);

  // One-copy transfers between ranks of a node only if every rank can do them.
  bool use_cma = true;
  for (const PeerInfo& peer : peers) use_cma = use_cma && peer.cma_ok;
  Selection sel;
  COLLX_TRY(make_selection(config, p.size, Locality{one_node, one_node && use_cma}, &sel));
  UcxTransport* t = nullptr;
  COLLX_TRY(UcxTransport::create(ctx->worker(), p.rank, p.size, comm_id, peers, my_node,
                                 use_cma ? config.cma_min : SIZE_MAX, config.timeout_s, &t));
  Comm* c = new Comm(std::unique_ptr<Transport>(t), config, std::move(sel));
  c->context_ = ctx;
  ctx->live_comms.fetch_add(1);
  c->segment_ = std::move(created);
  // Finish every endpoint's wireup, then wait for all ranks to have done so: afterwards no
  // rank needs another to progress for anything but the collectives themselves.
  Status st = t->connect(config.timeout_s);
  if (st.ok()) st = c->run_barrier();
  if (st.ok() && use_shm) {
    std::vector<int64_t> pids;
    if (use_cma) {
      for (const PeerInfo& peer : peers) pids.push_back(peer.pid);
    }
    st = c->setup_shm(peers[0].shm_name, shm_status, std::move(pids));
  }
  if (!st.ok()) {
    delete c;
    return st;
  }
  *out = c;
  return Status();
}

Status Comm::small_allreduce(int64_t* v, size_t n, collx_op_t op) {
  if (!failed_.ok()) return failed_;
  Reducer red;
  COLLX_TRY(make_reducer(COLLX_INT64, op, &red));
  transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
  Status st = transport_->end_op(allreduce_recursive_doubling(
      AllreduceArgs{*transport_, red, reinterpret_cast<uint8_t*>(v), reinterpret_cast<uint8_t*>(v),
                    n, scratch_, config_.ring_segment}));
  if (!st.ok()) fail(st);
  return st;
}

Status Comm::execute_profiled(const AllreduceOp& op) {
  const auto t0 = std::chrono::steady_clock::now();
  Status st = execute(op);
  if (st.ok()) {
    const size_t bytes = op.count * op.red.elem_size;
    profile_->record(bytes, ran_, std::chrono::steady_clock::now() - t0);
  }
  return st;
}

Status Comm::report_profile() {
  constexpr int kB = Profile::kBuckets;
  ProfileBucket* b = profile_->buckets();
  constexpr int kCaches = 6;
  int64_t sums[3 * kB + kCaches], mins[kB], maxs[kB], algos[kB];
  for (int i = 0; i < kB; ++i) {
    sums[i] = b[i].calls, sums[kB + i] = b[i].total_ns, sums[2 * kB + i] = b[i].bytes;
    mins[i] = b[i].min_ns, maxs[i] = b[i].max_ns, algos[i] = b[i].algos;
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
    COLLX_TRY(small_allreduce(algos, kB, COLLX_BOR));
  }
  if (rank() != 0) return Status();
  Profile all;
  all.caches = CacheCounts{caches[0], caches[1], caches[2], caches[3], caches[4], caches[5]};
  for (int i = 0; i < kB; ++i) {
    all.buckets()[i] =
        ProfileBucket{sums[i], sums[kB + i], mins[i], maxs[i], sums[2 * kB + i], algos[i]};
  }
  std::fputs(all.table(size()).c_str(), stderr);
  if (!config_.profile_file.empty()) {
    FILE* f = std::fopen(config_.profile_file.c_str(), "w");
    if (f == nullptr) {
      return error(COLLX_ERR_CONFIG, "COLLX_PROFILE_FILE=%s: cannot write: %s",
                   config_.profile_file.c_str(), strerror(errno));
    }
    const std::string j = all.json(size());
    const bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
    if (std::fclose(f) != 0 || !ok) {
      return error(COLLX_ERR_CONFIG, "COLLX_PROFILE_FILE=%s: write failed",
                   config_.profile_file.c_str());
    }
  }
  return Status();
}

Status Comm::setup_shm(const std::string& name, const Status& created, std::vector<int64_t> pids) {
  const size_t bytes = ShmChannel::bytes_for(size(), config_.shm_chunk);
  Status attached = created;  // rank 0 made the segment (or failed to); the others attach
  if (rank() != 0) {
    ShmSegment* seg = nullptr;
    attached = name.empty() ? error(COLLX_ERR_TRANSPORT, "rank 0 could not create the segment")
                            : ShmSegment::attach(name, bytes, &seg);
    segment_.reset(seg);
  }
  // With the attach status, the settings that decide which collectives a call with device
  // buffers runs: ranks that differ would wait for each other in different ones. Each value
  // and its negation, so that one minimum gives both the smallest and the largest.
  const auto clamp = [](size_t v) { return static_cast<int64_t>(std::min<size_t>(v, INT64_MAX)); };
  constexpr int kSettings = 6;
  const int64_t settings[kSettings] = {config_.cuda_ipc ? 1 : 0,
                                       clamp(config_.cuda_two_shot),
                                       clamp(config_.staging_chunk),
                                       clamp(config_.cuda_ipc_min),
                                       clamp(config_.cuda_ipc_min_timesliced),
                                       clamp(config_.cuda_flags_max)};
  int64_t v[1 + 2 * kSettings] = {attached.ok() ? 1 : 0};
  for (int i = 0; i < kSettings; ++i) v[1 + i] = settings[i], v[1 + kSettings + i] = -settings[i];
  COLLX_TRY(small_allreduce(v, 1 + 2 * kSettings, COLLX_MIN));
  // Every rank has attached (or given up): the name is no longer needed.
  if (segment_) segment_->unlink();
  static const char* const kNames[kSettings] = {
      "COLLX_CUDA",         "COLLX_CUDA_TWO_SHOT",           "COLLX_STAGING_CHUNK",
      "COLLX_CUDA_IPC_MIN", "COLLX_CUDA_IPC_MIN_TIMESLICED", "COLLX_CUDA_FLAGS_MAX"};
  for (int i = 0; i < kSettings; ++i) {
    if (v[1 + i] != -v[1 + kSettings + i]) {
      return error(COLLX_ERR_CONFIG,
                   "rank %d: %s differs between the ranks (from %lld to %lld): set it alike on "
                   "all ranks",
                   rank(), kNames[i], static_cast<long long>(v[1 + i]),
                   static_cast<long long>(-v[1 + kSettings + i]));
    }
  }
  const int64_t ok = v[0];
  if (ok == 1) {
    shm_ = std::make_unique<ShmChannel>(segment_->base(), rank(), size(), config_.shm_chunk,
                                        std::move(pids));
    return Status();
  }
  // Without the segment: the point-to-point algorithms, unless one was forced.
  segment_.reset();
  Selection sel;
  Status st = make_selection(config_, size(), Locality{}, &sel);
  if (!st.ok()) {
    return error(COLLX_ERR_TRANSPORT, "rank %d: shared memory unavailable (%s): %s", rank(),
                 attached.ok() ? "a peer could not attach" : attached.message().c_str(),
                 st.message().c_str());
  }
  selection_ = std::move(sel);
  return Status();
}

Comm::~Comm() {
  drain();
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  transport_.reset();
  if (context_ != nullptr) context_->live_comms.fetch_sub(1);
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
    if (send != recv && bytes != 0) std::memcpy(recv, send, bytes);
    return Status();
  }
  if (op.count == 0 && !check) return Status();
  transport_->begin_op(seq, config_.timeout_s, config_.spin);
  if (check) COLLX_TRY(agree(op, seq));
  if (op.count == 0) return transport_->end_op(Status());
  const AllreduceArgs args{*transport_,          op.red,    send, recv, op.count, scratch_,
                           config_.ring_segment, shm_.get()};
  Status st = transport_->end_op(run_allreduce(ran_, args));
  if (!st.ok()) {
    fail(st);
    return st;
  }
  if (op.red.finalize != nullptr) op.red.finalize(recv, op.count, p);
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
  uint32_t base = 0xf000;
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
  if (!failed_.ok()) return failed_;
  transport_->begin_op(next_seq_++, config_.timeout_s, config_.spin);
  Status st = transport_->end_op(barrier(*transport_));
  if (!st.ok()) fail(st);
  return st;
}

Status Comm::shutdown() {
  drain();
  Status st;
  if (profile_ && failed_.ok()) st = report_profile();
  Status barrier = run_barrier();
  return st.ok() ? barrier : st;
}

void Comm::drain() {
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins > 100) sched_yield();
  }
}

Status Comm::allreduce(const AllreduceOp& op) {
  drain();
  if (profile_) [[unlikely]]
    return execute_profiled(op);
  return execute(op);
}

Status Comm::iallreduce(const AllreduceOp& op, Request** out) {
  auto* req = new (std::nothrow) Request();
  if (req == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory posting an iallreduce");
  req->op = op;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!worker_.joinable()) worker_ = std::thread(&Comm::worker_main, this);
    queue_.push_back(req);
    pending_.fetch_add(1, std::memory_order_relaxed);
  }
  cv_.notify_one();
  *out = req;
  return Status();
}

void Comm::worker_main() {
  for (;;) {
    Request* req;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      req = queue_.front();
      queue_.pop_front();
    }
    req->result = profile_ ? execute_profiled(req->op) : execute(req->op);
    req->done.store(true, std::memory_order_release);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace collx
