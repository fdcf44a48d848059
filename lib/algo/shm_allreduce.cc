// Shared-memory allreduce for the ranks of one node (transport/shm.h), in chunks of the
// channel's size so that any message streams through a fixed segment, each chunk one epoch:
//
// shm_one_shot  every rank copies its chunk into its slot; once all slots are full, every rank
//               reduces all of them, in rank order, into its own output. One copy in, p-1
//               reductions per element per rank; one synchronisation. For small messages.
// shm_two_shot  every rank copies its chunk in, but for slice r, which rank r reduces from its
//               own input and the other slots into the shared result and its own output;
//               everyone copies the other slices of the result out. (p-1)/p of a copy in,
//               (p-1)/p reductions and (p-1)/p of a copy out per element per rank; two
//               synchronisations. What it writes for the others, it writes with streaming
//               or ordinary stores, whichever this rank measured faster (algo/store_choice.h).
//
// A one-shot message of at most 56 bytes skips the slots: it travels in the line of the flag
// that announces it (ShmInline), which halves the cache-line transfers a peer waits for.
//
// Both reduce in rank order (s0 op s1 op s2 ...), so results are bitwise identical on all
// ranks. A slot and the result area are reused COLLX_SHM_AREAS epochs later (at least two), a
// flag line's data two epochs later, and none needs a wait of its own: a rank starts epoch e
// only after it saw every rank's `ready` of epoch e-1 (for a message in the flag lines, their
// epoch), which every rank publishes only after it has finished epoch e-2 (epochs run in
// order on every rank). So the fast path is one flag store and one wait per epoch (two for
// the two-shot). In a call's first epoch, every rank also checks that all made the same call
// (count, datatype, op: algo/shm_sync.h). More than two areas cost segment memory but pay
// where another CPU's cache still holds what a rank overwrites: taking lines back from it is
// slow (PERFORMANCE.md, "Areas used in turn").
//
// shm_cma       no copy through the segment: every rank names its buffers in it; rank r reads
//               slice r of every peer's input straight from the peer's memory (one copy,
//               cross-memory attach, into a cache-sized buffer) and reduces it, in rank order,
//               into slice r of its own output; then every rank reads the other slices from
//               their owners' outputs into its own. Each input is read once, and no rank ever
//               writes another's memory (a peer that stalls and resumes after this rank gave
//               up can only read it). Three synchronisations per call, whatever its size:
//               buffers named; slices reduced (so inputs may be overwritten, for in-place);
//               results copied out (so the caller may reuse its buffers).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "algo/algo.h"
#include "algo/rank_math.h"
#include "algo/shm_sync.h"
#include "memory/host_copy.h"
#include "transport/shm.h"

namespace collx {

namespace {

Status wait_all(const AllreduceArgs& a, ShmFlag ShmRankFlags::*which, uint64_t epoch,
                const char* what) {
  return shm_wait_all(a.t, *a.shm, which, epoch, what);
}

uint64_t call_word(const AllreduceArgs& a) { return shm_call_word(a.count, a.red.kind); }

// Publishes this rank's `ready` of epoch e (in the call's first epoch, `first`, after setting
// the call's word: shm_sync.h) and waits for every rank's.
Status ready_all(const AllreduceArgs& a, uint64_t e, bool first, const char* what) {
  if (first) shm_set_call(*a.shm, e, call_word(a));
  shm_publish(*a.shm, &ShmRankFlags::ready, e);
  return wait_all(a, &ShmRankFlags::ready, e, what);
}

Status check_calls(const AllreduceArgs& a, uint64_t e) {
  return shm_check_calls(a.t, *a.shm, e, call_word(a));
}

Status read_peer(const AllreduceArgs& a, int q, uint64_t remote, void* local, size_t bytes) {
  Status st = a.shm->read(q, remote, local, bytes);
  return st.ok() ? st : a.t.step_error(st, a.shm->comm_rank(q), "reading the buffer of");
}

// out = x0 op x1 op ... x(p-1), left to right, where x(q) = input(q).
template <typename In>
void reduce_in_rank_order(const AllreduceArgs& a, uint8_t* out, In input, size_t n) {
  a.red(out, input(0), input(1), n);
  for (int q = 2; q < a.shm->size(); ++q) a.red(out, out, input(q), n);
}

using CopyFn = void (*)(void* dst, const void* src, size_t bytes);

// Copies elements [0, n) but those of `skip` from src to dst.
void copy_except(uint8_t* dst, const uint8_t* src, size_t n, Range skip, size_t elem,
                 CopyFn copy = copy_cached) {
  copy(dst, src, skip.begin * elem);
  const size_t end = skip.begin + skip.len;
  copy(dst + end * elem, src + end * elem, (n - end) * elem);
}

// Streams the message through the segment: for each chunk of at most ch.chunk() bytes, one
// epoch: copy the chunk in with `copy_in` (but the elements `skip(n)` of it), wait for every
// rank's input, run `reduce(offset, n, epoch)`. The calls are checked after the first epoch's
// reduction, which writes only this rank's output and its slice of the result area.
template <typename Skip, typename F>
Status for_each_chunk(const AllreduceArgs& a, CopyFn copy_in, Skip skip, F&& reduce) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  const size_t per = ch.chunk() / elem;
  for (size_t off = 0; off < a.count; off += per) {
    const size_t n = std::min(per, a.count - off);
    const uint64_t e = ch.next_epoch();
    copy_except(ch.slot(e, ch.rank()), a.send + off * elem, n, skip(n), elem, copy_in);
    COLLX_TRY(ready_all(a, e, off == 0, "copy its input in"));
    COLLX_TRY(reduce(off, n, e));
    if (off == 0) COLLX_TRY(check_calls(a, e));
  }
  return Status();
}

// The whole message in one epoch, in the flag lines of the epoch's parity; the epoch's wait
// for every rank is on them instead of on `ready`.
Status one_shot_inline(const AllreduceArgs& a) {
  ShmChannel& ch = *a.shm;
  const uint64_t e = ch.next_epoch();
  ShmInline& mine = ch.flags(ch.rank()).small[e & 1];
  std::memcpy(mine.data, a.send, a.count * a.red.elem_size);
  shm_set_call(ch, e, call_word(a));
  mine.epoch.store(e, std::memory_order_release);
  auto flag = [&](int q) -> const std::atomic<uint64_t>& { return ch.flags(q).small[e & 1].epoch; };
  COLLX_TRY(shm_wait_all(a.t, ch, flag, e, "copy its input in"));
  auto input = [&](int q) { return ch.flags(q).small[e & 1].data; };
  reduce_in_rank_order(a, a.recv, input, a.count);
  finish(a, a.recv, a.count);
  return check_calls(a, e);
}

// The reduce-scatter and allgather move, per epoch, the next piece of every block at once (so
// every owner reduces in every epoch): block b's piece at b * piece elements of a slot or the
// result area. Block b's owner is the channel's rank b mod p. A piece is whole cache lines
// where the chunk allows it.
class Pieces {
 public:
  Pieces(const AllreduceArgs& a, int blocks) : a_(a), blocks_(static_cast<size_t>(blocks)) {}

  size_t blocks() const { return blocks_; }
  bool owns(size_t rank, size_t b) const { return b % static_cast<size_t>(a_.shm->size()) == rank; }

  // Runs step(e, k) for each epoch e: the pieces at offset k of every block.
  template <typename Step>
  Status for_each(Step step) {
    const size_t share = a_.shm->chunk() / blocks_;
    piece_ = (share >= 64 ? share & ~size_t{63} : share) / a_.red.elem_size;
    if (piece_ == 0) {
      return error(COLLX_ERR_CONFIG, "COLLX_SHM_CHUNK=%zu is too small for %zu blocks on a node",
                   a_.shm->chunk(), blocks_);
    }
    for (size_t k = 0; k < block(a_.count, blocks_, 0).len; k += piece_) {  // 0: the longest
      COLLX_TRY(step(a_.shm->next_epoch(), k));
    }
    return Status();
  }
  // Block b's piece at offset k: its elements in the message (len 0: the block is shorter).
  Range of(size_t b, size_t k) const {
    const Range blk = block(a_.count, blocks_, b);
    return k < blk.len ? Range{blk.begin + k, std::min(piece_, blk.len - k)} : Range{};
  }
  // Where block b's piece lies in a slot or the result area.
  size_t at(size_t b) const { return b * piece_ * a_.red.elem_size; }

 private:
  const AllreduceArgs& a_;
  size_t blocks_;
  size_t piece_ = 0;
};

}  // namespace

Status shm_reduce_scatter(const AllreduceArgs& a, int blocks) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  const auto r = static_cast<size_t>(ch.rank());
  Pieces pieces(a, blocks);
  return pieces.for_each([&](uint64_t e, size_t k) {
    for (size_t b = 0; b < pieces.blocks(); ++b) {
      const Range theirs = pieces.of(b, k);
      // Streamed, as the two-shot's default: the owner reads it from another core.
      if (!pieces.owns(r, b) && theirs.len > 0) {
        copy_streaming(ch.slot(e, ch.rank()) + pieces.at(b), a.send + theirs.begin * elem,
                       theirs.len * elem);
      }
    }
    COLLX_TRY(ready_all(a, e, k == 0, "copy its input in"));
    if (k == 0) COLLX_TRY(check_calls(a, e));
    for (size_t b = r; b < pieces.blocks(); b += static_cast<size_t>(ch.size())) {
      const Range mine = pieces.of(b, k);
      if (mine.len == 0) continue;
      // In place, the output is this rank's input, which the first reduction (of ranks 0 and
      // 1) would overwrite before it is read when r > 1: then through scratch.
      uint8_t* out = a.recv + mine.begin * elem;
      uint8_t* into = out;
      if (a.send == a.recv && r > 1) COLLX_TRY(a.scratch.get(mine.len * elem, &into));
      auto input = [&](int q) {
        return static_cast<size_t>(q) == r ? a.send + mine.begin * elem
                                           : ch.slot(e, q) + pieces.at(b);
      };
      reduce_in_rank_order(a, into, input, mine.len);
      if (into != out) copy_cached(out, into, mine.len * elem);
    }
    return Status();
  });
}

Status shm_allgather(const AllreduceArgs& a, int blocks) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  const auto r = static_cast<size_t>(ch.rank());
  Pieces pieces(a, blocks);
  return pieces.for_each([&](uint64_t e, size_t k) {
    for (size_t b = r; b < pieces.blocks(); b += static_cast<size_t>(ch.size())) {
      const Range mine = pieces.of(b, k);
      if (mine.len > 0) {
        copy_streaming(ch.result(e) + pieces.at(b), a.recv + mine.begin * elem, mine.len * elem);
      }
    }
    COLLX_TRY(ready_all(a, e, k == 0, "copy its block in"));
    if (k == 0) COLLX_TRY(check_calls(a, e));
    for (size_t b = 0; b < pieces.blocks(); ++b) {
      const Range theirs = pieces.of(b, k);
      if (!pieces.owns(r, b) && theirs.len > 0) {
        copy_cached(a.recv + theirs.begin * elem, ch.result(e) + pieces.at(b), theirs.len * elem);
      }
    }
    return Status();
  });
}

Status allreduce_shm_one_shot(const AllreduceArgs& a) {
  if (a.count * a.red.elem_size <= ShmInline::kBytes) return one_shot_inline(a);
  ShmChannel& ch = *a.shm;
  return for_each_chunk(
      a, copy_cached, [](size_t) { return Range{}; },
      [&](size_t off, size_t n, uint64_t e) {
        uint8_t* out = a.recv + off * a.red.elem_size;
        reduce_in_rank_order(a, out, [&](int q) { return ch.slot(e, q); }, n);
        finish(a, out, n);
        return Status();
      });
}

// Rank r's own slice never goes through the segment: it reduces it from its own input and
// writes it to its own output directly, so only the other (p-1)/p of each chunk is copied in
// and out. The other slices of a chunk are copied out one epoch later, so that their owners
// have long finished them: the wait for them almost never waits.
Status allreduce_shm_two_shot(const AllreduceArgs& a) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  StoreChoice* choice = a.stores;
  const bool measuring = choice != nullptr && choice->measuring();
  const uint64_t start = measuring ? StoreChoice::ticks() : 0;
  const CopyFn put =
      choice == nullptr || choice->streaming(a.count * elem) ? copy_streaming : copy_cached;
  const auto r = static_cast<size_t>(ch.rank()), p = static_cast<size_t>(ch.size());
  struct Chunk {
    uint64_t epoch = 0;
    size_t off = 0, n = 0;
  } last;
  auto copy_out_others = [&](const Chunk& c) {
    COLLX_TRY(wait_all(a, &ShmRankFlags::reduced, c.epoch, "reduce its slice"));
    copy_except(a.recv + c.off * elem, ch.result(c.epoch), c.n, block(c.n, p, r), elem);
    return Status();
  };
  COLLX_TRY(for_each_chunk(
      a, put, [&](size_t n) { return block(n, p, r); },
      [&](size_t off, size_t n, uint64_t e) {
        const Range mine = block(n, p, r);
        if (mine.len > 0) {
          const size_t at = mine.begin * elem;
          // Into the output, then streamed to the shared result for the others. In place,
          // the output is this rank's input, which the first reduction (of ranks 0 and 1)
          // would overwrite before it is read when r > 1: then through scratch.
          uint8_t* out = a.recv + off * elem + at;
          uint8_t* into = out;
          if (a.send == a.recv && r > 1) COLLX_TRY(a.scratch.get(mine.len * elem, &into));
          auto input = [&](int q) {
            return static_cast<size_t>(q) == r ? a.send + off * elem + at : ch.slot(e, q) + at;
          };
          reduce_in_rank_order(a, into, input, mine.len);
          finish(a, into, mine.len);
          if (into != out) copy_cached(out, into, mine.len * elem);
          put(ch.result(e) + at, into, mine.len * elem);
        }
        shm_publish(ch, &ShmRankFlags::reduced, e);
        if (last.epoch != 0) COLLX_TRY(copy_out_others(last));
        last = {e, off, n};
        return Status();
      }));
  COLLX_TRY(copy_out_others(last));
  if (measuring) choice->record(a.count * elem, StoreChoice::ticks() - start);
  return Status();
}

Status allreduce_shm_cma(const AllreduceArgs& a) {
  ShmChannel& ch = *a.shm;
  const int p = ch.size(), r = ch.rank();
  const size_t elem = a.red.elem_size;
  const uint64_t e = ch.next_epoch();
  ch.flags(r).buffers.send = reinterpret_cast<uint64_t>(a.send);
  ch.flags(r).buffers.recv = reinterpret_cast<uint64_t>(a.recv);
  COLLX_TRY(ready_all(a, e, true, "name its buffers"));
  COLLX_TRY(check_calls(a, e));  // before this rank reads the peers' buffers

  const Range mine = block(a.count, static_cast<size_t>(p), static_cast<size_t>(r));
  const size_t per = ch.chunk() / elem, end = mine.begin + mine.len;
  uint8_t* in = nullptr;  // a peer's input chunk
  COLLX_TRY(a.scratch.get(2 * per * elem, &in));
  uint8_t* acc = in + per * elem;  // the partial result while rank r's own input is unused
  for (size_t off = mine.begin; off < end; off += per) {
    const size_t n = std::min(per, end - off), at = off * elem, bytes = n * elem;
    uint8_t* out = a.recv + at;
    // out = x0 op x1 op ... x(p-1), left to right. `partial` holds x0 op ... x(q-1); it lives
    // in `acc` until x_r is consumed, because for in-place `out` is x_r.
    const uint8_t* partial = nullptr;
    for (int q = 0; q < p; ++q) {
      const uint8_t* x = a.send + at;
      if (q != r) {
        uint8_t* into = q == 0 ? acc : in;
        COLLX_TRY(read_peer(a, q, ch.flags(q).buffers.send + at, into, bytes));
        x = into;
      }
      if (q == 0) {
        partial = x;
        continue;
      }
      uint8_t* dst = q < r ? acc : out;
      a.red(dst, partial, x, n);
      partial = dst;
    }
    finish(a, out, n);
  }
  shm_publish(ch, &ShmRankFlags::reduced, e);
  COLLX_TRY(wait_all(a, &ShmRankFlags::reduced, e, "reduce its slice"));
  // Every rank has read all its inputs: the other slices of this rank's output (its input,
  // for in-place) are free to be overwritten with their owners' results.
  for (int q = 0; q < p; ++q) {
    const Range theirs = block(a.count, static_cast<size_t>(p), static_cast<size_t>(q));
    if (q == r || theirs.len == 0) continue;
    const size_t at = theirs.begin * elem;
    COLLX_TRY(read_peer(a, q, ch.flags(q).buffers.recv + at, a.recv + at, theirs.len * elem));
  }
  shm_publish(ch, &ShmRankFlags::done, e);
  return wait_all(a, &ShmRankFlags::done, e, "copy its result out");
}

}  // namespace collx
