// A DeviceCopier over ordinary memory whose copies take effect only when waited for, as
// asynchronous copies do. It records every hazard a real GPU could turn into wrong data: a
// slot refilled while a copy out of it may be pending, a slot read by the host before its
// copy in was waited for.
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "memory/device_copy.h"

namespace collx::test {

struct FakeCopier : DeviceCopier {
  struct Copy {
    int slot;
    std::function<void()> run;
  };
  std::vector<std::vector<uint8_t>> slots = std::vector<std::vector<uint8_t>>(kSlots);
  std::deque<Copy> in, out;
  std::vector<std::string> hazards;
  std::vector<void*> streams;  // after_stream calls
  int fail_out_at = -1;        // the n-th copy_out fails (0-based); -1: none
  int outs = 0, reserves = 0;

  Status reserve(size_t bytes) override {
    ++reserves;
    for (auto& s : slots) {
      if (s.size() < bytes) s.assign(bytes, 0xee);
    }
    return Status();
  }
  uint8_t* slot(int s) override {
    for (const Copy& c : in) {
      if (c.slot == s) hazards.push_back("slot " + std::to_string(s) + " read before its copy in finished");
    }
    return slots[s].data();
  }
  Status copy_in(int s, const void* src, size_t n) override {
    for (const Copy& c : out) {
      if (c.slot == s) hazards.push_back("slot " + std::to_string(s) + " refilled while a copy out of it was pending");
    }
    if (n > slots[s].size()) hazards.push_back("copy in larger than the slot");
    in.push_back({s, [=, this] { std::memcpy(slots[s].data(), src, n); }});
    return Status();
  }
  Status copy_out(void* dst, int s, size_t n) override {
    if (outs++ == fail_out_at) return error(COLLX_ERR_TRANSPORT, "fake copy out failed");
    out.push_back({s, [=, this] { std::memcpy(dst, slots[s].data(), n); }});
    return Status();
  }
  // A queue runs in order: waiting for slot s runs every copy up to the last one of s.
  static Status wait(std::deque<Copy>& q, int s) {
    size_t last = q.size();
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i].slot == s) last = i;
    }
    if (last == q.size()) return Status();
    for (size_t i = 0; i <= last; ++i) {
      q.front().run();
      q.pop_front();
    }
    return Status();
  }
  Status wait_in(int s) override { return wait(in, s); }
  Status wait_out(int s) override { return wait(out, s); }
  Status after_stream(void* stream) override {
    streams.push_back(stream);
    return Status();
  }
};

}  // namespace collx::test
