// The fakes of the device-buffer tests that run without a GPU (test_cuda_ipc.cc,
// test_staged_gpu.cc): a DeviceIpc over ordinary memory whose "device work" takes effect only
// when its stream is synchronized, as asynchronous GPU work does; an IPC handle names an
// address in this process. Fakes holds one rank's driver, device objects and copiers.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "common/fake_copier.h"
#include "common/fake_driver.h"
#include "common/inproc.h"
#include "memory/device_ipc.h"

namespace collx::test {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct FakeDeviceIpc : DeviceIpc {
  DeviceUuid id;
  std::set<DeviceUuid> unreachable;
  bool fail_open = false;
  bool on_mps = true;
  bool fail_reduce = false, fail_copy = false;  // the device work fails
  bool flags_absent = false;                      // flag_area fails
  int flags_calls = 0;
  int exports = 0, opens = 0, closes = 0, syncs = 0;
  std::vector<void*> streams;  // wait_stream calls
  std::vector<std::function<void()>> queued;
  std::vector<uint8_t> scratch_mem;

  explicit FakeDeviceIpc(uint8_t device) { id.bytes[0] = device; }

  DeviceUuid uuid() const override { return id; }
  bool mps() const override { return on_mps; }
  bool can_reach(const DeviceUuid& peer) override { return unreachable.count(peer) == 0; }
  Status export_handle(const void* base, IpcHandle* out) override {
    ++exports;
    *out = IpcHandle{};
    std::memcpy(out->bytes.data(), &base, sizeof base);
    return Status();
  }
  Status open(int peer, const IpcHandle& h, void** base) override {
    if (fail_open) return error(COLLX_ERR_TRANSPORT, "fake open of rank %d failed", peer);
    ++opens;
    std::memcpy(base, h.bytes.data(), sizeof *base);
    return Status();
  }
  void close(void*) override { ++closes; }
  Status scratch(size_t bytes, void** out) override {
    if (scratch_mem.size() < bytes) scratch_mem.assign(bytes, 0xee);
    *out = scratch_mem.data();
    return Status();
  }
  Status wait_stream(void* stream) override {
    streams.push_back(stream);
    return Status();
  }
  Status reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
                collx_op_t op, int ranks) override {
    if (fail_reduce) return error(COLLX_ERR_TRANSPORT, "fake kernel launch failed");
    Reducer red;
    COLLX_TRY(make_reducer(dtype, op, &red));
    std::vector<const void*> inputs(in, in + n);
    // Like the kernels, every input is read before dst is written (dst may be an input).
    queued.push_back([=] {
      const size_t bytes = count * red.elem_size;
      std::vector<uint8_t> acc(static_cast<const uint8_t*>(inputs[0]),
                               static_cast<const uint8_t*>(inputs[0]) + bytes);
      for (size_t k = 1; k < inputs.size(); ++k) {
        red(acc.data(), acc.data(), static_cast<const uint8_t*>(inputs[k]), count);
      }
      if (red.finalize != nullptr) red.finalize(acc.data(), count, ranks);
      std::memcpy(dst, acc.data(), bytes);
    });
    return Status();
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (fail_copy) return error(COLLX_ERR_TRANSPORT, "fake copy failed");
    queued.push_back([=] { std::memcpy(dst, src, bytes); });
    return Status();
  }
  // staged_gpu: the registered ranges; a copy to host memory outside them is counted.
  std::vector<std::pair<const uint8_t*, size_t>> mapped;
  bool fail_map = false;
  int copies_to_host = 0, unmapped_copies = 0;
  int fail_host_copy_at = -1;  // the n-th copy_to_host fails (0-based); -1: none
  Status map_host(void* host, size_t bytes, void** device) override {
    if (fail_map) return error(COLLX_ERR_TRANSPORT, "fake registration failed");
    mapped.emplace_back(static_cast<const uint8_t*>(host), bytes);
    *device = host;
    return Status();
  }
  Status copy_to_host(void* host, const void* src, size_t bytes) override {
    if (fail_copy || copies_to_host == fail_host_copy_at) {
      return error(COLLX_ERR_TRANSPORT, "fake copy failed");
    }
    ++copies_to_host;
    const auto* h = static_cast<const uint8_t*>(host);
    const bool inside = std::any_of(mapped.begin(), mapped.end(), [&](const auto& m) {
      return h >= m.first && h + bytes <= m.first + m.second;
    });
    if (!inside) ++unmapped_copies;
    queued.push_back([=] { std::memcpy(host, src, bytes); });
    return Status();
  }
  Status synchronize() override {
    ++syncs;
    for (auto& f : queued) f();
    queued.clear();
    return Status();
  }

  // The one-kernel allreduce as the kernel does it (cuda/flags.h), with one block: this
  // rank's input into its slot, its flag, the peers' flags, the slots in rank order.
  std::vector<uint64_t> area;  // a flag, then two slots
  Status flag_area(size_t max_bytes, void** out) override {
    if (flags_absent) return error(COLLX_ERR_UNSUPPORTED, "no flag area here");
    if (area.empty()) area.assign(1 + 2 * ((max_bytes + 7) / 8), 0);
    *out = area.data();
    return Status();
  }
  static uint8_t* slot_of(void* area, const FlagsCall& c) {
    return reinterpret_cast<uint8_t*>(static_cast<uint64_t*>(area) + 1 +
                                      (c.seq % 2) * ((c.max_bytes + 7) / 8));
  }
  Status allreduce_flags(const FlagsCall& c, int* waited_for) override {
    ++flags_calls;
    streams.push_back(c.on_stream ? c.stream : nullptr);
    *waited_for = -1;
    Reducer red;
    COLLX_TRY(make_reducer(c.dtype, c.op, &red));
    const size_t bytes = c.count * red.elem_size;
    std::memcpy(slot_of(c.areas[c.rank], c), c.send, bytes);
    std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(c.areas[c.rank]))
        .store(c.seq, std::memory_order_release);
    const double deadline = now_seconds() + c.timeout_s;
    double progress_at = now_seconds() + 1e-3;  // the caller's progress, as the real wait runs it
    for (int q = 0; q < c.ranks; ++q) {
      std::atomic_ref<uint64_t> flag(*static_cast<uint64_t*>(c.areas[q]));
      while (flag.load(std::memory_order_acquire) < c.seq) {
        const double now = now_seconds();
        if (now > deadline) {
          *waited_for = q;
          return Status();
        }
        if (now >= progress_at && c.progress != nullptr) {
          c.progress();
          progress_at = now + 1e-3;
        }
        std::this_thread::yield();
      }
    }
    std::vector<uint8_t> acc(slot_of(c.areas[0], c), slot_of(c.areas[0], c) + bytes);
    for (int q = 1; q < c.ranks; ++q) red(acc.data(), acc.data(), slot_of(c.areas[q], c), c.count);
    if (red.finalize != nullptr) red.finalize(acc.data(), c.count, c.ranks);
    std::memcpy(c.recv, acc.data(), bytes);
    return Status();
  }
};

// One rank's fakes: its driver, its IPC device (made on first use) and its copiers.
struct Fakes {
  FakeDriver devs;
  FakeDeviceIpc* ipc = nullptr;
  int ipc_made = 0, copiers_made = 0;
  std::function<void(FakeDeviceIpc&)> setup = [](FakeDeviceIpc&) {};

  uint8_t device_uuid = 7;

  void attach(Comm& c, uint8_t uuid = 7) {
    device_uuid = uuid;
    c.set_memory_query(&devs);
    c.set_ipc_factory([this](int, std::unique_ptr<DeviceIpc>* out) { return make_ipc(out); });
    c.set_copier_factory([this](int, std::unique_ptr<DeviceCopier>* out) {
      return make_copier(out);
    });
  }
  Status make_ipc(std::unique_ptr<DeviceIpc>* out) {
    auto d = std::make_unique<FakeDeviceIpc>(device_uuid);
    setup(*d);
    ipc = d.get();
    ++ipc_made;
    *out = std::move(d);
    return Status();
  }
  Status make_copier(std::unique_ptr<DeviceCopier>* out) {
    ++copiers_made;
    *out = std::make_unique<FakeCopier>();
    return Status();
  }
};

// Makes c's device objects fail as making one that finds no memory does: the factory throws.
inline void device_object_without_memory(Comm& c) {
  c.set_ipc_factory([](int, std::unique_ptr<DeviceIpc>*) -> Status { throw std::bad_alloc(); });
}

// The operation as collx_allreduce makes it: its reducer, and its buffers classified through
// c's pointer cache (which makes the cache's entries).
inline Status make_device_op(Comm& c, const void* send, void* recv, size_t count,
                             collx_dtype_t d, collx_op_t op, AllreduceOp* o) {
  COLLX_TRY(make_reducer(d, op, &o->red));
  o->dtype = d;
  o->op = op;
  o->send = send;
  o->recv = recv;
  o->count = count;
  return c.check_memory(send, recv, count * o->red.elem_size, "collx_allreduce", o);
}

inline AllreduceOp device_op(Comm& c, const void* send, void* recv, size_t count, collx_dtype_t d,
                      collx_op_t op) {
  AllreduceOp o;
  TCHECK(make_device_op(c, send, recv, count, d, op, &o).ok());
  return o;
}

}  // namespace collx::test
