// Announcements over UCX (Transport::announce): a rank that starts operation n sends (token, n)
// to every peer, 16 bytes on a tag of their own; each rank keeps one receive posted per peer
// and keeps the largest number heard. A test polls them: it progresses the worker and takes
// what has arrived. Cost: p - 1 eager sends per operation started, so Comm uses them only on
// small communicators (kAnnounceMaxRanks).
#include <algorithm>

#include "transport/ucx.h"

namespace collx {

namespace {
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
}  // namespace

// The acknowledgement bit with sequence 0xfff and step 0xffff: no transfer uses that step
// (the algorithms' steps lie below kMaxSteps = 0xf000, the call check's start there and use
// a few hundred).
ucp_tag_t UcxTransport::announce_tag(int src) const { return tag(source(src, 0), 0xfff, 0xffff, true); }

bool UcxTransport::start_announcing(uint64_t token) {
  LockGuard g(worker_);
  said_[0] = token;
  heard_.assign(static_cast<size_t>(size()), Heard{});
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    Heard& h = heard_[peer];
    h.req = recv_ctrl(h.msg, sizeof h.msg, announce_tag(peer));
    if (UCS_PTR_IS_ERR(h.req)) h.req = nullptr;  // nothing will be heard from it
  }
  return true;
}

void UcxTransport::announce(uint64_t number) {
  if (heard_.empty() || number <= said_[1]) return;
  LockGuard g(worker_);
  said_[1] = number;  // a send still in flight may carry it too: it is no less true
  send_announcements();
}

uint64_t UcxTransport::announced(bool progress, uint64_t* most) {
  uint64_t least = UINT64_MAX, greatest = 0;
  if (!heard_.empty()) {
    LockGuard g(worker_);
    if (progress) ucp_worker_progress(worker_.worker());
    send_announcements();
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      hear(peer);
      least = std::min(least, heard_[peer].number);
      greatest = std::max(greatest, heard_[peer].number);
    }
  } else {
    least = 0;
  }
  if (most != nullptr) *most = greatest;
  return least;
}

void UcxTransport::hear(int peer) {
  Heard& h = heard_[peer];
  while (h.req != nullptr) {
    ucp_tag_recv_info_t info{};
    const ucs_status_t s = ucp_tag_recv_request_test(h.req, &info);
    if (s == UCS_INPROGRESS) return;
    ucp_request_free(h.req);
    h.req = nullptr;
    if (s != UCS_OK) return;  // the peer failed: its operations report it
    if (info.length == sizeof h.msg && h.msg[0] == said_[0]) {
      h.number = std::max(h.number, h.msg[1]);
    }  // else one for an earlier communicator with this id: dropped
    h.req = recv_ctrl(h.msg, sizeof h.msg, announce_tag(peer));
    if (UCS_PTR_IS_ERR(h.req)) h.req = nullptr;
  }
}

void UcxTransport::send_announcements() {
  unsent_ = false;
  for (int peer = 0; peer < size(); ++peer) {
    Heard& h = heard_[peer];
    if (peer == rank() || h.sent >= said_[1]) continue;
    if (h.sending != nullptr) {
      if (ucp_request_check_status(h.sending) == UCS_INPROGRESS) {
        unsent_ = true;
        continue;
      }
      ucp_request_free(h.sending);
      h.sending = nullptr;
    }
    void* req = send_ctrl(peer, said_, sizeof said_, announce_tag(rank()));
    h.sent = UCS_PTR_IS_ERR(req) ? UINT64_MAX : said_[1];  // a failed peer is told no more
    if (UCS_PTR_IS_PTR(req)) h.sending = req;
  }
}

void UcxTransport::stop_announcing() {
  if (heard_.empty()) return;
  // Called by the destructor, which must not throw: the one allocation comes first, and
  // without memory for it the requests are cancelled and freed without waiting.
  std::vector<void*> reqs;
  try {
    reqs.reserve(2 * heard_.size());
  } catch (...) {
    LockGuard g(worker_);
    for (Heard& h : heard_) {
      if (h.req != nullptr) {
        ucp_request_cancel(worker_.worker(), h.req);
        ucp_request_free(h.req);
      }
      if (h.sending != nullptr) ucp_request_free(h.sending);
      h.req = h.sending = nullptr;
    }
    unsent_ = false;
    return;
  }
  {
    LockGuard g(worker_);
    for (Heard& h : heard_) {
      if (h.req != nullptr) ucp_request_cancel(worker_.worker(), h.req);
      reqs.push_back(h.req);
      reqs.push_back(h.sending);
      h.req = h.sending = nullptr;  // complete_all frees them
    }
    unsent_ = false;  // nothing more goes out
  }
  ucs_status_t ignored;
  worker_.complete_all(reqs, close_timeout_s_, &ignored);
  // Announcements that arrived after the last receive would stay queued in the worker for
  // good: take them out (later ones carry a token no other communicator accepts).
  uint64_t sink[2];
  // In batches of the capacity reserved above (completed outside the worker's lock).
  for (bool full = true; full;) {
    full = false;
    reqs.clear();
    {
      LockGuard g(worker_);
      for (int peer = 0; peer < size() && !full; ++peer) {
        if (peer == rank()) continue;
        ucp_tag_recv_info_t info{};
        while (ucp_tag_message_h m =
                   ucp_tag_probe_nb(worker_.worker(), announce_tag(peer), kFullMask, 1, &info)) {
          ucp_request_param_t p{};
          void* req = ucp_tag_msg_recv_nbx(worker_.worker(), sink, sizeof sink, m, &p);
          if (!UCS_PTR_IS_PTR(req)) continue;
          reqs.push_back(req);
          full = reqs.size() == reqs.capacity();
          if (full) break;
        }
      }
    }
    worker_.complete_all(reqs, close_timeout_s_, &ignored);
  }
}

}  // namespace collx
