// Shared-memory allreduce for the ranks of one node (transport/shm.h), in chunks of the
// channel's size so that any message streams through a fixed segment, each chunk one epoch:
//
// shm_one_shot  every rank copies its chunk into its slot; once all slots are full, every rank
//               reduces all of them, in rank order, into its own output. One copy in, p-1
//               reductions per element per rank; one synchronisation. For small messages.
// shm_two_shot  every rank copies its chunk in; rank r reduces slice r of all slots into the
//               shared result; everyone copies the whole result out. One copy in, (p-1)/p
//               reductions and one copy out per element per rank; two synchronisations.
//
// Both reduce in rank order (s0 op s1 op s2 ...), so results are bitwise identical on all
// ranks. A slot (and the result area) is reused two epochs later, after every rank has said
// it is done with it; the double buffering means that wait almost never waits.
#include <algorithm>

#include "algo/algo.h"
#include "algo/rank_math.h"
#include "transport/shm.h"

namespace collx {

namespace {

// Waits until flag `which` of every rank has reached `epoch`.
Status wait_all(const AllreduceArgs& a, ShmFlag ShmRankFlags::*which, uint64_t epoch,
                const char* what) {
  ShmChannel& ch = *a.shm;
  for (int q = 0; q < ch.size(); ++q) {
    const std::atomic<uint64_t>& f = (ch.flags(q).*which).epoch;
    COLLX_TRY(a.t.wait_until([&] { return f.load(std::memory_order_acquire) >= epoch; }, q,
                             what));
  }
  return Status();
}

void publish(ShmChannel& ch, ShmFlag ShmRankFlags::*which, uint64_t epoch) {
  (ch.flags(ch.rank()).*which).epoch.store(epoch, std::memory_order_release);
}

// out = in[0] op in[1] op ... in[p-1], left to right.
void reduce_in_rank_order(const AllreduceArgs& a, uint8_t* out, uint64_t epoch, size_t offset,
                          size_t n) {
  ShmChannel& ch = *a.shm;
  a.red(out, ch.slot(epoch, 0) + offset, ch.slot(epoch, 1) + offset, n);
  for (int q = 2; q < ch.size(); ++q) a.red(out, out, ch.slot(epoch, q) + offset, n);
}

// Streams the message through the segment: for each chunk of at most ch.chunk() bytes, one
// epoch: wait until its areas are free (every rank done with epoch - 2), copy the chunk in,
// wait for every rank's input, run `reduce(offset, n, epoch)`, and say this rank is done.
template <typename F>
Status for_each_chunk(const AllreduceArgs& a, F&& reduce) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  const size_t per = ch.chunk() / elem;
  for (size_t off = 0; off < a.count; off += per) {
    const size_t n = std::min(per, a.count - off);
    const uint64_t e = ch.next_epoch();
    if (e > 2) COLLX_TRY(wait_all(a, &ShmRankFlags::done, e - 2, "release its buffers"));
    std::memcpy(ch.slot(e, ch.rank()), a.send + off * elem, n * elem);
    publish(ch, &ShmRankFlags::ready, e);
    COLLX_TRY(wait_all(a, &ShmRankFlags::ready, e, "copy its input in"));
    COLLX_TRY(reduce(off, n, e));
    publish(ch, &ShmRankFlags::done, e);
  }
  return Status();
}

}  // namespace

Status allreduce_shm_one_shot(const AllreduceArgs& a) {
  return for_each_chunk(a, [&](size_t off, size_t n, uint64_t e) {
    reduce_in_rank_order(a, a.recv + off * a.red.elem_size, e, 0, n);
    return Status();
  });
}

Status allreduce_shm_two_shot(const AllreduceArgs& a) {
  ShmChannel& ch = *a.shm;
  const size_t elem = a.red.elem_size;
  return for_each_chunk(a, [&](size_t off, size_t n, uint64_t e) {
    const Range mine = block(n, static_cast<size_t>(ch.size()), static_cast<size_t>(ch.rank()));
    if (mine.len > 0) {
      reduce_in_rank_order(a, ch.result(e) + mine.begin * elem, e, mine.begin * elem, mine.len);
    }
    publish(ch, &ShmRankFlags::reduced, e);
    COLLX_TRY(wait_all(a, &ShmRankFlags::reduced, e, "reduce its slice"));
    std::memcpy(a.recv + off * elem, ch.result(e), n * elem);
    return Status();
  });
}

}  // namespace collx
