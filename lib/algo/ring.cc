// Ring: reduce-scatter around the ring (p−1 steps; in step s rank r sends block r−s to r+1 and
// reduces block r−s−1 arriving from r−1), then allgather around the ring (p−1 steps).
// Cost: 2(p−1)α + 2n(p−1)/p·β + n(p−1)/p·γ — bandwidth-optimal for any p.
//
// Pipelined in segments: every block is cut into segments, each a message of its own. A
// reduced segment is sent on at once (into the next reduce-scatter step, or, in the last one,
// as the first allgather step) and a received allgather segment is forwarded at once, so sends,
// receives and reductions of different segments overlap. Reduce-scatter receives land in a
// window of kSlots scratch segments; allgather receives land in recv directly.
//
// The k-th message from r−1 to r carries step k: both ends enumerate the same sequence
// (reduce-scatter steps, then allgather steps, segments in order). Segments grow beyond
// a.segment_bytes where a block would need more than kMaxSteps / (2(p−1)) of them, so that
// steps stay below kMaxSteps: were they to wrap, the allgather receives posted up front could
// take a reduce-scatter message of the same tag. With one segment per block that still needs
// 2(p−1) ≤ kMaxSteps: the selection never gives the ring more than 30721 ranks (select.cc).
#include "algo/algo.h"
#include "algo/rank_math.h"

#include <algorithm>

namespace collx {

namespace {

constexpr size_t kSlots = 4;

struct Segments {
  size_t count, p, seg;  // elements
  size_t n(int b) const { return (block(count, p, b).len + seg - 1) / seg; }
  Range get(int b, size_t c) const {
    const Range blk = block(count, p, b);
    const size_t off = c * seg;
    return Range{blk.begin + off, std::min(seg, blk.len - off)};
  }
};

}  // namespace

Status allreduce_ring(const AllreduceArgs& a) {
  Transport& t = a.t;
  const int p = t.size(), r = t.rank();
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  const size_t es = a.red.elem_size;
  const size_t most_segments = std::max<size_t>(1, kMaxSteps / (2 * static_cast<size_t>(p - 1)));
  const size_t longest = block(a.count, static_cast<size_t>(p), 0).len;
  const Segments seg{a.count, static_cast<size_t>(p),
                     std::max({size_t{1}, a.segment_bytes / es,
                               (longest + most_segments - 1) / most_segments})};
  const size_t seg_bytes = seg.seg * es;
  // Scratch holds the kSlots segments, then the 2p step handles below (no allocation per call).
  const size_t handles_at = (kSlots * seg_bytes + alignof(Handle) - 1) & ~(alignof(Handle) - 1);
  uint8_t* slots = nullptr;
  COLLX_TRY(a.scratch.get(handles_at + 2 * static_cast<size_t>(p) * sizeof(Handle), &slots));

  uint32_t sent = 0;  // message counters: they are the step tags
  auto send_segment = [&](const uint8_t* base, int b, size_t c, Handle* h) {
    const Range g = seg.get(b, c);
    return t.isend(right, sent++, base + g.begin * es, g.len * es, h);
  };

  // Reduce-scatter receives, flattened over (step, segment), posted kSlots ahead.
  const int rs_steps = p - 1;
  size_t rs_total = 0;
  for (int s = 0; s < rs_steps; ++s) rs_total += seg.n(ring_rs_recv_block(r, s, p));
  uint32_t received = 0;
  int post_s = 0;
  size_t post_c = 0, posted = 0;
  Handle rs_recv[kSlots] = {};
  auto post_rs_recv = [&]() -> Status {
    while (post_s < rs_steps && post_c >= seg.n(ring_rs_recv_block(r, post_s, p))) {
      ++post_s;
      post_c = 0;
    }
    const Range g = seg.get(ring_rs_recv_block(r, post_s, p), post_c++);
    const size_t slot = posted++ % kSlots;
    return t.irecv(left, received++, slots + slot * seg_bytes, g.len * es, &rs_recv[slot]);
  };
  while (posted < std::min(rs_total, kSlots)) COLLX_TRY(post_rs_recv());

  // An allgather receive into block r−s must not start before the reduce-scatter send of that
  // same block (step s) has left it. Sends of step s are the requests posted between
  // send_first[s] and send_last[s]; anything else in that handle range is a reduce-scatter
  // receive, complete by the allgather, so waiting the whole range is exact and cheap.
  Handle* send_first = reinterpret_cast<Handle*>(slots + handles_at);
  Handle* send_last = send_first + p;

  // Allgather receives of step s, tagged after every reduce-scatter message.
  auto post_ag_recvs = [&](int s, Handle* first) -> Status {
    uint32_t tag = static_cast<uint32_t>(rs_total);
    for (int k = 0; k < s; ++k) tag += static_cast<uint32_t>(seg.n(ring_ag_recv_block(r, k, p)));
    const int b = ring_ag_recv_block(r, s, p);
    // Out-of-place, step 0's block was sent from the send buffer: nothing to wait for.
    if (s > 0 || a.send == a.recv) {
      for (Handle h = send_first[s]; h <= send_last[s]; ++h) COLLX_TRY(t.wait(h));
    }
    for (size_t c = 0, n = seg.n(b); c < n; ++c) {
      const Range g = seg.get(b, c);
      Handle h;
      COLLX_TRY(t.irecv(left, tag++, a.recv + g.begin * es, g.len * es, &h));
      if (c == 0) *first = h;
    }
    return Status();
  };
  // Out-of-place, the first allgather step's receives go up front, so the left neighbour's
  // reduced segments land in place as soon as they are ready.
  Handle ag0_first = 0;
  const bool ag0_posted = a.send != a.recv && seg.n(ring_ag_recv_block(r, 0, p)) > 0;
  if (ag0_posted) COLLX_TRY(post_ag_recvs(0, &ag0_first));

  for (size_t c = 0, n = seg.n(r); c < n; ++c) {
    Handle h;
    COLLX_TRY(send_segment(a.send, r, c, &h));
    if (c == 0) send_first[0] = h;
    send_last[0] = h;
  }
  size_t done = 0;
  for (int s = 0; s < rs_steps; ++s) {
    const int b = ring_rs_recv_block(r, s, p);
    for (size_t c = 0, n = seg.n(b); c < n; ++c, ++done) {
      const size_t slot = done % kSlots;
      COLLX_TRY(t.wait(rs_recv[slot]));
      const Range g = seg.get(b, c);
      a.red(a.recv + g.begin * es, slots + slot * seg_bytes, a.send + g.begin * es, g.len);
      if (s + 1 == rs_steps) finish(a, a.recv + g.begin * es, g.len);  // block b is this rank's
      if (posted < rs_total) COLLX_TRY(post_rs_recv());
      // The reduced segment goes on: next reduce-scatter step, or allgather step 0.
      Handle h;
      COLLX_TRY(send_segment(a.recv, b, c, &h));
      if (s + 1 < rs_steps) {
        if (c == 0) send_first[s + 1] = h;
        send_last[s + 1] = h;
      }
    }
  }

  // Allgather: receive block r−s into recv, forward each segment as it arrives.
  for (int s = 0; s < rs_steps; ++s) {
    const int b = ring_ag_recv_block(r, s, p);
    const size_t n = seg.n(b);
    if (n == 0) continue;
    Handle first = ag0_first;
    if (s > 0 || !ag0_posted) COLLX_TRY(post_ag_recvs(s, &first));
    for (size_t c = 0; c < n; ++c) {  // the receives of one step hold consecutive handles
      COLLX_TRY(t.wait(first + static_cast<Handle>(c)));
      if (s + 1 < rs_steps) COLLX_TRY(send_segment(a.recv, b, c, nullptr));
    }
  }
  return t.wait_all();
}

}  // namespace collx
