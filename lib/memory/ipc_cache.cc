#include "memory/ipc_cache.h"

namespace collx {

IpcCache::~IpcCache() {
  maps_.clear([this](const Key& k, Mapping& m) { close(k, m); });
}

void IpcCache::close(const Key&, Mapping& m) {
  opener_->close(m.base);
  ++stats_.closes;
}

Status IpcCache::map(int peer, const IpcExport& x, void** base) {
  const Key key{peer, x.base};
  auto on_drop = [this](const Key& k, Mapping& m) { close(k, m); };
  if (Mapping* m = maps_.find(key); m != nullptr) {
    if (m->buffer_id == x.buffer_id && m->handle == x.handle && m->size == x.size) {
      ++stats_.hits;
      *base = m->base;
      return Status();
    }
  }
  // The peer's live allocations do not overlap, so any mapping of it that overlaps this one
  // (the stale one at this address included) is of memory it has freed. Mappings of a peer do
  // not overlap each other either, so they end in the order they start: walking down from the
  // last one that starts before this allocation ends, the first that ends before it starts
  // is the last to look at.
  Key k;
  while (Mapping* m = maps_.floor(Key{peer, x.base + (x.size == 0 ? 0 : x.size - 1)}, &k)) {
    if (k.peer != peer || k.base + m->size <= x.base) break;
    maps_.erase(k, on_drop);
  }
  void* opened = nullptr;
  COLLX_TRY(opener_->open(peer, x.handle, &opened));
  ++stats_.opens;
  try {
    maps_.put(key, Mapping{opened, x.size, x.buffer_id, x.handle}, on_drop);
  } catch (...) {  // no memory for the entry: the mapping must not outlive the call unrecorded
    opener_->close(opened);
    ++stats_.closes;
    return exception_status("the IPC registration cache");  // a rank's vote: no
  }
  *base = opened;
  return Status();
}

}  // namespace collx
