// An ordered map bounded in size that drops its least recently used entry when full: the
// storage of the pointer cache and of the IPC registration cache. Ordered, so that the pointer
// cache can find the range that holds an address (floor()). A hit allocates nothing.
#pragma once

#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <utility>

namespace collx {

template <typename Key, typename Value>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }

  // The entry of `key`, marked most recently used; null if absent.
  Value* find(const Key& key) { return touch(map_.find(key)); }

  // The entry with the largest key not above `key` (its key in *found), marked most recently
  // used; null if there is none.
  Value* floor(const Key& key, Key* found) {
    auto it = map_.upper_bound(key);
    if (it == map_.begin()) return nullptr;
    --it;
    *found = it->first;
    return touch(it);
  }

  // Inserts or replaces the entry of `key` (on_drop(key, old value) first when replacing);
  // when the map is full, the least recently used entry is dropped through on_drop. Where it
  // throws (no memory), the new entry is in neither the map nor the order of use.
  template <typename OnDrop>
  Value& put(const Key& key, Value value, OnDrop&& on_drop) {
    erase(key, on_drop);
    if (map_.size() >= capacity_) {
      const Key victim = uses_.back();  // a copy: erase() frees the list node
      erase(victim, on_drop);
    }
    uses_.push_front(key);
    try {
      auto [it, inserted] = map_.emplace(key, Node{std::move(value), uses_.begin()});
      (void)inserted;
      return it->second.value;
    } catch (...) {
      uses_.pop_front();  // else the eviction would pick a key with no entry, and stop
      throw;
    }
  }

  // Drops the entry of `key`, if any, through on_drop(key, value).
  template <typename OnDrop>
  void erase(const Key& key, OnDrop&& on_drop) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    on_drop(it->first, it->second.value);
    uses_.erase(it->second.use);
    map_.erase(it);
  }

  // Drops every entry through on_drop(key, value).
  template <typename OnDrop>
  void clear(OnDrop&& on_drop) {
    for (auto& [key, node] : map_) on_drop(key, node.value);
    map_.clear();
    uses_.clear();
  }

 private:
  struct Node {
    Value value;
    typename std::list<Key>::iterator use;  // its place in uses_
  };
  using Iter = typename std::map<Key, Node>::iterator;

  Value* touch(Iter it) {
    if (it == map_.end()) return nullptr;
    uses_.splice(uses_.begin(), uses_, it->second.use);  // no allocation
    return &it->second.value;
  }

  size_t capacity_;
  std::map<Key, Node> map_;
  std::list<Key> uses_;  // front: most recently used
};

}  // namespace collx
