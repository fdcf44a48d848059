// Some of a transport's ranks as a transport of their own, for an algorithm that runs among
// them only: the hierarchical allreduce's step between nodes, where the ranks with one local
// rank (one per node) allreduce their block. The algorithm sees ranks 0 .. n-1, positions in
// `members`; each request goes through the parent with the peer's rank there, so its tags,
// its errors and the peer-failure checks are the parent's. Operations on the group run inside
// one of the parent's (same sequence number), between the parent's begin_op and end_op.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "transport/transport.h"

namespace collx {

class GroupTransport final : public Transport {
 public:
  // `position`: this rank's index in `members` (members[position] == parent.rank()).
  // `lanes[i]`: which of member i's groups this one is (Request::lane_self), each below
  // parent.max_lanes().
  GroupTransport(Transport& parent, std::vector<int> members, std::vector<uint32_t> lanes,
                 int position)
      : Transport(position, static_cast<int>(members.size())),
        parent_(parent),
        members_(std::move(members)),
        lanes_(std::move(lanes)) {
    set_named(parent.rank());
  }

 protected:
  Status post(Request& r, uint32_t seq) override {
    r.lane_self = lanes_[static_cast<size_t>(rank())];
    r.lane_peer = lanes_[static_cast<size_t>(r.peer)];
    r.peer = members_[static_cast<size_t>(r.peer)];  // from here on, the parent's rank
    return parent_.post(r, seq);
  }
  Status test(Request& r) override { return parent_.test(r); }
  void progress() override { parent_.progress(); }
  void cancel(std::vector<Request>& reqs, collx_status_t why) override {
    parent_.cancel(reqs, why);
  }
  Status peer_failure(const Request& r) const override { return parent_.peer_failure(r); }
  int dead_peer(int prefer, std::string* why) const override {
    const bool member = prefer >= 0 && prefer < size();
    return parent_.dead_peer(member ? members_[static_cast<size_t>(prefer)] : -1, why);
  }

 private:
  Transport& parent_;
  std::vector<int> members_;
  std::vector<uint32_t> lanes_;
};

}  // namespace collx
