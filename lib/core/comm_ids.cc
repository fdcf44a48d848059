#include "core/comm_ids.h"

namespace collx {

uint32_t CommIds::propose(uint32_t start) const {
  std::lock_guard<std::mutex> g(mu_);
  if (start >= kCount) start = next_;
  for (uint32_t i = 0; i < kCount; ++i) {
    const uint32_t id = (start + i) % kCount;
    if (taken_.count(static_cast<uint16_t>(id)) == 0) return id;
  }
  return kNone;
}

bool CommIds::reserve(uint16_t id, uint64_t owner) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = taken_.find(id);
  if (it != taken_.end()) {
    if (it->second.owner != owner) {
      ++refused_;
      return false;
    }
    ++it->second.refs;
    return true;
  }
  taken_.emplace(id, Holder{owner, 1});
  next_ = (uint32_t{id} + 1) % kCount;
  return true;
}

uint64_t CommIds::refused() const {
  std::lock_guard<std::mutex> g(mu_);
  return refused_;
}

void CommIds::release(uint16_t id, uint64_t owner) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = taken_.find(id);
  if (it == taken_.end() || it->second.owner != owner) return;
  if (--it->second.refs == 0) taken_.erase(it);
}

}  // namespace collx
