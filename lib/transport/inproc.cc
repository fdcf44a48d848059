#include "transport/inproc.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace collx {

// A receive posted before its send arrives waits in `posted`; a send that arrives first waits,
// copied, in `unexpected`. Both are matched by (source, seq, step) in FIFO order, as UCX
// matches tags.
struct InprocFabric::Message {
  int src = 0;
  uint32_t seq = 0;
  uint32_t step = 0;
  std::vector<uint8_t> data;  // unexpected sends only
  void* buf = nullptr;        // posted receives only
  size_t bytes = 0;
  size_t received = 0;
  std::atomic<bool> done{false};
};

struct InprocFabric::Mailbox {
  std::mutex mu;
  std::deque<std::shared_ptr<Message>> posted;
  std::deque<std::shared_ptr<Message>> unexpected;
};

InprocFabric::InprocFabric(int size)
    : announced_(new std::atomic<uint64_t>[size]()),
      sent_(new std::atomic<uint64_t>[static_cast<size_t>(size) * size]()) {
  for (int i = 0; i < size; ++i) boxes_.push_back(std::make_unique<Mailbox>());
}

uint64_t InprocFabric::bytes_sent(int src, int dst) const {
  return sent_[static_cast<size_t>(src) * boxes_.size() + dst].load(std::memory_order_relaxed);
}

InprocFabric::~InprocFabric() = default;

InprocTransport::InprocTransport(InprocFabric& fabric, int rank)
    : Transport(rank, static_cast<int>(fabric.boxes_.size())), fabric_(fabric) {}

InprocTransport::~InprocTransport() = default;

namespace {
template <typename Q>
std::shared_ptr<InprocFabric::Message> take(Q& q, int src, uint32_t seq, uint32_t step) {
  for (auto it = q.begin(); it != q.end(); ++it) {
    if ((*it)->src == src && (*it)->seq == seq && (*it)->step == step) {
      auto m = *it;
      q.erase(it);
      return m;
    }
  }
  return nullptr;
}
}  // namespace

Status InprocTransport::post(Request& r, uint32_t seq) {
  // Matched on the bits a UCX tag carries (sequence mod 4096, step mod 65536): tags that
  // would alias over UCX alias here too.
  seq &= 0xfffu;
  const uint32_t step = r.step & 0xffffu;
  if (r.is_recv) {
    auto m = std::make_shared<InprocFabric::Message>();
    m->src = r.peer;
    m->seq = seq;
    m->step = step;
    m->buf = r.buf;
    m->bytes = r.bytes;
    InprocFabric::Mailbox& box = *fabric_.boxes_[rank()];
    std::lock_guard<std::mutex> g(box.mu);
    if (auto u = take(box.unexpected, r.peer, seq, step)) {
      r.done = true;
      if (u->data.size() != r.bytes) {
        return describe(r, COLLX_ERR_MISMATCH,
                        format("got %zu bytes instead of the expected in", u->data.size()).c_str());
      }
      if (r.bytes != 0) std::memcpy(r.buf, u->data.data(), r.bytes);
      return Status();
    }
    box.posted.push_back(m);
    r.impl = new std::shared_ptr<InprocFabric::Message>(std::move(m));
    return Status();
  }
  fabric_.sent_[static_cast<size_t>(rank()) * size() + r.peer].fetch_add(
      r.bytes, std::memory_order_relaxed);
  InprocFabric::Mailbox& box = *fabric_.boxes_[r.peer];
  std::lock_guard<std::mutex> g(box.mu);
  r.done = true;  // sends are buffered: complete at once
  if (auto m = take(box.posted, rank(), seq, step)) {
    if (m->bytes == r.bytes && r.bytes != 0) std::memcpy(m->buf, r.buf, r.bytes);
    m->received = r.bytes;
    m->done.store(true, std::memory_order_release);
    return Status();
  }
  auto m = std::make_shared<InprocFabric::Message>();
  m->src = rank();
  m->seq = seq;
  m->step = step;
  const auto* p = static_cast<const uint8_t*>(r.buf);
  m->data.assign(p, p + r.bytes);
  box.unexpected.push_back(std::move(m));
  return Status();
}

Status InprocTransport::test(Request& r) {
  auto* m = static_cast<std::shared_ptr<InprocFabric::Message>*>(r.impl);
  if (!(*m)->done.load(std::memory_order_acquire)) return Status();
  const size_t received = (*m)->received;
  delete m;
  r.impl = nullptr;
  r.done = true;
  if (received != r.bytes) {
    return describe(r, COLLX_ERR_MISMATCH,
                    format("got %zu bytes instead of the expected in", received).c_str());
  }
  return Status();
}

void InprocTransport::cancel(std::vector<Request>& reqs, collx_status_t) {
  InprocFabric::Mailbox& box = *fabric_.boxes_[rank()];
  for (Request& req : reqs) {
    if (req.done || req.impl == nullptr) continue;
    Request* r = &req;
    auto* m = static_cast<std::shared_ptr<InprocFabric::Message>*>(r->impl);
    {
      std::lock_guard<std::mutex> g(box.mu);
      for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
        if (it->get() == m->get()) {
          box.posted.erase(it);
          break;
        }
      }
    }
    delete m;
    r->impl = nullptr;
    r->done = true;
  }
}

// Ranks that are threads announce through memory they share: each writes its own slot.
void InprocTransport::announce(uint64_t number) {
  std::atomic<uint64_t>& mine = fabric_.announced_[rank()];
  if (mine.load(std::memory_order_relaxed) < number) mine.store(number, std::memory_order_release);
}

uint64_t InprocTransport::announced(bool, uint64_t* most) {
  uint64_t least = UINT64_MAX, greatest = 0;
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    const uint64_t n = fabric_.announced_[q].load(std::memory_order_acquire);
    least = std::min(least, n);
    greatest = std::max(greatest, n);
  }
  if (most != nullptr) *most = greatest;
  return least;  // (no peers: UINT64_MAX, every peer has)
}

}  // namespace collx
