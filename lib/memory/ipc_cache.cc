#include "memory/ipc_cache.h"

namespace collx {

IpcCache::~IpcCache() {
  maps_.clear([this](const Key& k, Mapping& m) { close(k, m); });
}

void IpcCache::close(const Key&, Mapping& m) {
  opener_->close(m.base);
  ++stats_.closes;
}

Status IpcCache::map(int peer, const IpcHandle& h, uint64_t buffer_id, void** base) {
  const Key key{peer, h};
  auto on_drop = [this](const Key& k, Mapping& m) { close(k, m); };
  if (Mapping* m = maps_.find(key); m != nullptr) {
    if (m->buffer_id == buffer_id) {
      ++stats_.hits;
      *base = m->base;
      return Status();
    }
    maps_.erase(key, on_drop);  // the peer's allocation changed under the same handle
  }
  void* opened = nullptr;
  COLLX_TRY(opener_->open(peer, h, &opened));
  ++stats_.opens;
  maps_.put(key, Mapping{opened, buffer_id}, on_drop);
  *base = opened;
  return Status();
}

}  // namespace collx
