// How a communicator comes to be: the out-of-band bootstrap (identities, node, worker
// addresses), the UCX transport and its wireup, and on one node the shared-memory segment
// with the settings every rank must share. Running collectives is in comm.cc
// (blocking) and comm_async.cc (non-blocking).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/comm.h"
#include "core/context.h"
#include "topo/node.h"
#include "topo/topo.h"
#include "transport/group.h"
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

void Comm::take_place(const NodeLayout& l, int node_processes) {
  node_ = collx_comm_node_t{l.node_index, l.nodes, l.local_rank, static_cast<int>(l.local.size())};
  ops_->watch = watch_period_for(std::max(node_.local_size, node_processes), usable_cpus());
}

// How far a rank's creation got, for one that fails where its peers cannot tell (a local
// error, an exception: no memory): the allgather round they wait in or go to next, which no
// deadline of ours bounds (the allgather is the user's), and the id it holds.
struct BootRounds {
  int next = 1;           // the round the peers are in or go to next: 1, 2, 3 (a status
                          // round), or 0 (none: a round failed alike everywhere, or all done)
  size_t slot_bytes = 0;  // round 2's slot, once round 1 has agreed on it
  // A status round's slots, the peers' and then this rank's: taken before round 1, so that
  // joining a status round allocates nothing.
  std::vector<int32_t> statuses;
  Context* ctx = nullptr;
  bool holds_id = false;  // a reserved communicator id, not yet the communicator's
  uint16_t id = 0;
  uint64_t owner = 0;
};

namespace {

// A status round: every rank gives 0 or the code of its failure (`local`), and all learn
// whether every rank's steps since the last round succeeded, so that all go on or all stop.
// The steps between two rounds are a rank's own and may fail in it alone (no memory, an
// endpoint UCX could not create); without the round its peers would wait for it until their
// deadline. Allocates nothing but an error's message.
Status status_round(const collx_comm_params_t& p, BootRounds& r, const Status& local,
                    const char* when) {
  r.next = 0;
  int32_t* all = r.statuses.data();
  int32_t& mine = all[p.size];
  mine = local.code();
  const Status st = oob_allgather(p, &mine, all, sizeof mine, "creation's statuses");
  if (!local.ok()) return local;
  COLLX_TRY(st);
  for (int i = 0; i < p.size; ++i) {
    if (all[i] != COLLX_SUCCESS) {
      return error(COLLX_ERR_PEER_FAILED,
                   "rank %d: rank %d's collx_comm_create failed %s (its own error says why)",
                   p.rank, i, when);
    }
  }
  return Status();
}

// A failed creation releases the id it holds and joins the round its peers wait in, saying it
// failed (round 1: its status in the header; round 2: kFlagFailed; a status round: its code),
// so that they fail too. Round 1's and 2's buffers are mapped for it, not taken from the C++
// heap, which may be what ran out (a creation that found no memory, then none for this
// either, left its peers in their allgather: found by oom_test with allocations failing in a
// row).
void leave_rounds(const collx_comm_params_t& p, BootRounds& r, const Status& why) {
  if (r.holds_id) r.ctx->ids.release(r.id, r.owner);
  r.holds_id = false;
  if (r.next == 3) {
    (void)status_round(p, r, why, "");
    return;
  }
  const size_t slot = r.next == 1 ? sizeof(BootHeader) : r.slot_bytes;
  const size_t bytes = slot * (static_cast<size_t>(p.size) + 1);  // the peers' slots, then ours
  void* m = r.next == 0 ? MAP_FAILED
                        : mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED) {  // (zeroed)
    auto* all = static_cast<uint8_t*>(m);
    uint8_t* mine = all + slot * static_cast<size_t>(p.size);
    if (r.next == 1) {
      BootHeader failed{};
      failed.magic = kBootMagic;
      failed.rank = p.rank;
      failed.size = p.size;
      failed.failed = why.code();
      std::memcpy(mine, &failed, sizeof failed);
      (void)oob_allgather(p, mine, all, slot, "communicator headers");
    } else {
      mine[0] = kFlagFailed;
      (void)oob_allgather(p, mine, all, slot, "worker addresses");
    }
    munmap(m, bytes);
  }
  r.next = 0;
}

}  // namespace

Status Comm::create(std::unique_ptr<Transport> transport, const Config& config, Comm** out,
                    void* shared, const std::vector<uint64_t>* node_of) {
  const NodeLayout layout =
      node_layout(node_of != nullptr ? *node_of : std::vector<uint64_t>(transport->size()),
                  transport->rank(), transport->max_lanes());
  const bool one_node = layout.nodes == 1 && shared != nullptr;
  const bool hierarchical = layout.nodes > 1 && layout.most >= 2 && shared != nullptr;
  Selection sel;
  COLLX_TRY(make_selection(config, transport->size(),
                           Locality{one_node, one_node, hierarchical, cpu_maker()}, &sel));
  Selection across;
  if (hierarchical) COLLX_TRY(make_across_selection(config, layout.nodes, &across));
  Comm* c = new Comm(std::move(transport), config, std::move(sel));
  c->across_table_ = std::move(across);
  c->take_place(layout, 0);  // (the ranks are threads of this process)
  if (hierarchical) c->set_nodes(layout, shared);
  if (one_node) {
    // Threads of this process: "peer memory" is this process's own (pid 0).
    c->shm_ = std::make_unique<ShmChannel>(shared, c->rank(), c->size(), config.shm_chunk,
                                           config.shm_areas, std::vector<int64_t>(c->size(), 0));
  }
  c->start_announcing();
  *out = c;
  return Status();
}

void Comm::refuse(const collx_comm_params_t& p, collx_status_t code) {
  BootRounds rounds;  // (in round 1, holding nothing)
  leave_rounds(p, rounds, Status(code, std::string()));
}

Status Comm::create(const collx_comm_params_t& p, Comm** out, Admit admit) {
  BootRounds rounds;
  Status st;
  try {
    st = create(p, out, admit, &rounds);
  } catch (...) {  // std::bad_alloc: what the creation made is freed on the way out
    st = exception_status("collx_comm_create");
  }
  if (!st.ok()) leave_rounds(p, rounds, st);  // (allocates nothing)
  return st;
}

Status Comm::create(const collx_comm_params_t& p, Comm** out, Admit admit,
                    BootRounds* rounds) {
  Context* ctx = Context::get();
  rounds->ctx = ctx;
  Config config;
  // A failure before round 1 joins it all the same, saying so: the peers then stop too
  // instead of waiting in the user's allgather for a round 2 that never comes.
  COLLX_TRY(ctx == nullptr ? error(COLLX_ERR_NOT_INITIALIZED,
                                   "collx_comm_create called before collx_init%s",
                                   Context::fork_note())
                           : load_config(&config));
  rounds->statuses.assign(static_cast<size_t>(p.size) + 1, 0);
  std::vector<BootHeader> all(static_cast<size_t>(p.size));

  // Round 1: fixed-size headers (identity, node, proposed communicator id, address length,
  // the settings all ranks must share).
  // Round 2: flags, segment name and the worker address padded to the longest, per rank.
  // Both are repeated while some rank could not reserve the agreed id (core/comm_ids.h).
  // Then two status rounds (status_round): once the transport is made, and last.
  const std::vector<uint8_t>& my_addr = ctx->worker().address();
  const uint64_t my_node = node_id(config.node);
  BootHeader mine{kBootMagic,
                  p.rank,
                  p.size,
                  CommIds::kNone,
                  static_cast<uint32_t>(my_addr.size()),
                  my_node,
                  getpid(),
                  reinterpret_cast<uint64_t>(&g_cma_probe),
                  ctx->next_creation(),
                  0,
                  static_cast<uint32_t>(config.node.empty() ? my_node : node_id("")),
                  shared_settings(config)};
  BootAgreement agreed;
  bool cma_ok = true, one_node = true, hierarchical = false, use_shm = false;
  NodeLayout layout;
  std::unique_ptr<ShmSegment> created;
  Status shm_status;
  std::vector<uint8_t> slot, slots;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(config.timeout_s));
  for (int attempt = 0;; ++attempt) {
    mine.comm_id = ctx->ids.propose(attempt == 0 ? CommIds::kNone : agreed.comm_id + 1u);
    // (A round that fails, fails alike on every rank, and then no round follows; so does
    // decoding.)
    rounds->next = 0;
    COLLX_TRY(oob_allgather(p, &mine, all.data(), sizeof mine, "communicator headers"));
    COLLX_TRY(decode_boot_headers(all.data(), p.rank, p.size, &agreed, &config));
    rounds->next = 2;
    rounds->slot_bytes = size_t{agreed.max_addr_len} + kSlotHeader;
    const bool reserved = ctx->ids.reserve(agreed.comm_id, agreed.owner);
    if (reserved) {
      rounds->holds_id = true;
      rounds->id = agreed.comm_id;
      rounds->owner = agreed.owner;
    }

    if (attempt == 0) {
      // Can this rank read the memory of every peer on its node (same user, ptrace allowed)?
      std::vector<uint64_t> node_of;
      for (int i = 0; i < p.size; ++i) {
        node_of.push_back(all[i].node);
        if (i != p.rank && all[i].node == my_node) {
          cma_ok = cma_ok && cma_readable(all[i].pid, all[i].probe, kBootMagic);
        }
      }
      layout = node_layout(node_of, p.rank, UcxTransport::lanes_for(p.size));
      one_node = layout.nodes == 1;
      // Across nodes the segments serve hierarchical only: none where the table in force
      // (COLLX_TUNE, COLLX_ALLREDUCE_ALGO) never picks it.
      Selection across;
      hierarchical = layout.nodes > 1 && layout.most >= 2 &&
                     make_selection(config, p.size, Locality{false, false, true}, &across).ok() &&
                     across.uses(Algo::kHierarchical);
      // On each node of several ranks its lowest rank creates the node's shared-memory
      // segment; its name goes in round 2.
      use_shm = (one_node && p.size > 1) || hierarchical;
      if (use_shm && layout.local[0] == p.rank && layout.local.size() > 1) {
        ShmSegment* seg = nullptr;
        shm_status = ShmSegment::create(
            ShmChannel::bytes_for(static_cast<int>(layout.local.size()), config.shm_chunk,
                                  config.shm_areas),
            &seg);
        created.reset(seg);
      }
    }

    slot.assign(size_t{agreed.max_addr_len} + kSlotHeader, 0);
    slots.assign(slot.size() * static_cast<size_t>(p.size), 0);
    const bool out_of_time = std::chrono::steady_clock::now() > deadline;
    slot[0] = static_cast<uint8_t>((cma_ok ? kFlagCma : 0) | (reserved ? kFlagIdReserved : 0) |
                                   (out_of_time ? kFlagOutOfTime : 0));
    if (created) std::memcpy(slot.data() + 1, created->name().c_str(), created->name().size());
    std::memcpy(slot.data() + kSlotHeader, my_addr.data(), my_addr.size());
    rounds->next = 0;
    Status st = oob_allgather(p, slot.data(), slots.data(), slot.size(), "worker addresses");
    uint8_t all_of = 0, any_of = 0;
    if (st.ok()) combine_flags(slots.data(), p.size, agreed.max_addr_len, &all_of, &any_of);
    if (st.ok() && (any_of & kFlagFailed)) {
      st = failed_in_round_2(slots.data(), p.rank, p.size, agreed.max_addr_len);
    }
    if (all_of & kFlagIdReserved) break;
    // A concurrent creation in some member's process holds the id: try above it, after a
    // pause that differs by creation and attempt (so that two creations stop colliding).
    // Every rank sees the same flags, so all retry or all give up together.
    if (reserved) ctx->ids.release(agreed.comm_id, agreed.owner);
    rounds->holds_id = false;
    COLLX_TRY(st);
    if (any_of & kFlagOutOfTime) {
      return error(COLLX_ERR_TIMEOUT,
                   "rank %d: no communicator id free in every member's process after %d "
                   "attempts in %g s (COLLX_TIMEOUT)",
                   p.rank, attempt + 1, config.timeout_s);
    }
    rounds->next = 1;
    const uint64_t r = (agreed.owner ^ (static_cast<uint64_t>(attempt) * 0x9e3779b97f4a7c15ull)) >> 40;
    std::this_thread::sleep_for(std::chrono::microseconds(r % (50u << std::min(attempt, 6))));
  }
  // The id is this creation's now: the communicator's once made (~Comm releases it), until
  // then released by leave_rounds on failure.
  rounds->next = 3;
  std::vector<PeerInfo> peers;
  Status st = decode_peers(slots.data(), slots.size(), all.data(), p.size, agreed.max_addr_len,
                           &peers);
  // One-copy transfers between ranks of a node only if every rank can do them.
  bool use_cma = true;
  for (const PeerInfo& peer : peers) use_cma = use_cma && peer.cma_ok;
  std::vector<int64_t> pids;  // (for the node's channel)
  if (use_cma) {
    for (const PeerInfo& peer : peers) pids.push_back(peer.pid);
  }
  Selection sel;
  if (st.ok()) {
    st = make_selection(config, p.size,
                        Locality{one_node, one_node && use_cma, hierarchical, cpu_maker()}, &sel);
  }
  Selection across;
  if (st.ok() && hierarchical) st = make_across_selection(config, layout.nodes, &across);
  UcxTransport* t = nullptr;
  if (st.ok()) {
    st = UcxTransport::create(ctx->worker(), p.rank, p.size, agreed.comm_id, peers, my_node,
                              use_cma ? config.cma_min : SIZE_MAX, config.timeout_s, &t);
  }
  std::unique_ptr<Comm> c;
  if (st.ok()) {
    std::unique_ptr<Transport> transport(t);
    c.reset(new Comm(std::move(transport), config, std::move(sel)));
    c->context_ = ctx;
    c->comm_id_ = agreed.comm_id;
    c->id_owner_ = agreed.owner;
    rounds->holds_id = false;  // ~Comm releases it
    ctx->live_comms.fetch_add(1);
    c->across_table_ = std::move(across);
    std::vector<int64_t> machine_pids;
    for (const BootHeader& h : all) {
      if (h.machine == mine.machine) machine_pids.push_back(h.pid);
    }
    c->take_place(layout, node_processes().note(std::move(machine_pids)));
    c->segment_ = std::move(created);
    // The scratch space of the creation's own small allreduces (setup_shm), taken here: a
    // rank without it fails in the status round below, not in an allreduce its peers wait in.
    uint8_t* space = nullptr;
    st = c->scratch_.get(4096, &space);
  }
  // Making the transport may fail in one rank alone (no memory, an endpoint UCX could not
  // create), whose peers would then wait for it in the wireup until their deadline.
  COLLX_TRY(status_round(p, *rounds, st, "making its transport"));
  // What remains may fail in this rank alone too (no memory, a deadline that passed here and
  // not there), while its peers' succeeds: every rank takes part in the last status round,
  // whatever happened to it, and all keep the communicator or none does (a rank that kept it
  // where another did not would wait for that one in its first collective, and under the
  // preload the other would pass that call through to MPI). The steps up to the segment's
  // agreement allocate nothing (their lists' room was taken with the transport).
  rounds->next = 3;
  // Finish every endpoint's wireup, then wait for all ranks to have done so: afterwards no
  // rank needs another to progress for anything but the collectives themselves.
  st = t->connect(config.timeout_s);
  if (st.ok()) st = c->run_barrier();
  bool admitted = false;
  try {
    if (st.ok() && use_shm) {
      st = c->setup_shm(peers[static_cast<size_t>(layout.local[0])].shm_name, shm_status,
                        std::move(pids), layout);
    }
    if (st.ok()) c->start_announcing();
    if (st.ok() && admit != nullptr) {
      admit(c.get(), true);
      admitted = true;
    }
  } catch (...) {
    st = exception_status("collx_comm_create");
  }
  st = status_round(p, *rounds, st, "in its last steps");
  if (!st.ok()) {
    if (admitted) admit(c.get(), false);
    return st;  // (c is freed)
  }
  *out = c.release();
  return Status();
}

Status Comm::setup_shm(const std::string& name, const Status& created, std::vector<int64_t> pids,
                       const NodeLayout& layout) {
  const size_t bytes = ShmChannel::bytes_for(static_cast<int>(layout.local.size()),
                                             config_.shm_chunk, config_.shm_areas);
  // The node's lowest rank made the segment (or failed to); the others attach. A rank alone
  // on its node has none.
  Status attached = created;
  if (rank() != layout.local[0]) {
    ShmSegment* seg = nullptr;
    try {  // (no memory to attach: the ranks go without the segment, as for any failure)
      attached = name.empty() ? error(COLLX_ERR_TRANSPORT,
                                      "rank %d could not create the segment", layout.local[0])
                              : ShmSegment::attach(name, bytes, &seg);
    } catch (...) {
      attached = exception_status("attaching the node's segment");
    }
    segment_.reset(seg);
  }
  // Whether every rank attached (the settings they share were agreed in round 1).
  int64_t v[1] = {attached.ok() ? 1 : 0};
  COLLX_TRY(small_allreduce(v, 1, COLLX_MIN));
  // Every rank has attached (or given up): the name is no longer needed.
  if (segment_) segment_->close_name();
  const int64_t ok = v[0];
  if (ok == 1 && layout.nodes > 1) {
    set_nodes(layout, segment_ ? segment_->base() : nullptr);
    return Status();
  }
  if (ok == 1) {
    shm_ = std::make_unique<ShmChannel>(segment_->base(), rank(), size(), config_.shm_chunk,
                                        config_.shm_areas,
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

void Comm::set_nodes(const NodeLayout& layout, void* shared) {
  if (layout.local.size() > 1) {
    node_shm_ = std::make_unique<ShmChannel>(shared, layout.local_rank,
                                             static_cast<int>(layout.local.size()),
                                             config_.shm_chunk, config_.shm_areas,
                                             std::vector<int64_t>{}, layout.local);
  }
  hier_ = Hierarchy{.node = node_shm_.get(),
                    .blocks = layout.blocks,
                    .even = layout.fewest == layout.most,
                    .serial_groups = layout.blocks > layout.fewest,
                    .groups = {},
                    .table = &across_table_,
                    .across_ran = &across_ran_};
  for (const NodeLayout::Group& g : layout.groups) {
    across_.push_back(
        std::make_unique<GroupTransport>(*transport_, g.ranks, g.lanes, layout.node_index));
    hier_.groups.push_back({.block = g.block, .across = across_.back().get()});
  }
}

}  // namespace collx
