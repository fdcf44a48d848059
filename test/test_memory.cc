// The memory layer's host-side logic, with a fake CUDA driver and a fake IPC opener: the LRU
// map, the pointer cache (one driver description per allocation, hits validated by buffer id,
// reallocation at the same address, straddling ranges), the IPC registration cache (one open
// per buffer, stale handles closed and reopened, LRU bound) and the communicator's check of a
// call's buffers.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "common/fake_driver.h"
#include "common/inproc.h"
#include "memory/cuda_driver.h"
#include "memory/host_mirror.h"
#include "memory/ipc_cache.h"
#include "memory/lru_map.h"
#include "memory/pointer_cache.h"

using namespace collx;
using collx::test::FakeDriver;

namespace {

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

struct FakeOpener : IpcOpener {
  int opens = 0, closes = 0;
  bool fail = false;
  std::vector<void*> open_now;
  Status open(int peer, const IpcHandle& h, void** base) override {
    if (fail) return error(COLLX_ERR_TRANSPORT, "cannot open handle of rank %d", peer);
    ++opens;
    *base = reinterpret_cast<void*>(uintptr_t{0x10000} * (opens + 1) + h.bytes[0]);
    open_now.push_back(*base);
    return Status();
  }
  void close(void* base) override {
    ++closes;
    std::erase(open_now, base);
  }
};

IpcHandle handle(uint8_t tag) {
  IpcHandle h;
  h.bytes[0] = tag;
  h.bytes[63] = static_cast<uint8_t>(tag * 7);
  return h;
}

}  // namespace

TEST_CASE("LRU map: bounded, forgets the least recently used, finds ranges by floor") {
  LruMap<int, std::string> m(3);
  std::vector<int> dropped;
  auto drop = [&](int k, std::string&) { dropped.push_back(k); };
  m.put(10, "a", drop);
  m.put(20, "b", drop);
  m.put(30, "c", drop);
  REQUIRE(m.find(10) != nullptr);  // 10 is now the most recently used
  m.put(40, "d", drop);            // full: drops 20, the least recently used
  CHECK(dropped == std::vector<int>{20});
  CHECK(m.find(20) == nullptr);
  CHECK(m.size() == 3);
  int key = 0;
  REQUIRE(m.floor(35, &key) != nullptr);
  CHECK(key == 30);
  CHECK(*m.floor(40, &key) == "d");
  CHECK(m.floor(5, &key) == nullptr);
  m.put(30, "C", drop);  // replacing drops the old value first
  CHECK(dropped == std::vector<int>{20, 30});
  CHECK(*m.find(30) == "C");
  m.erase(99, drop);  // absent: nothing happens
  m.clear(drop);
  CHECK(m.size() == 0);
  CHECK(dropped.size() == 5);
}

namespace {

// A key whose copy throws once `copies_left` reaches 0 (< 0: never), as an allocation that
// finds no memory does.
struct ThrowingKey {
  int v;
  static inline int copies_left = -1;
  ThrowingKey(int x) : v(x) {}  // NOLINT: implicit, for brevity
  ThrowingKey(const ThrowingKey& o) : v(o.v) { count(); }
  ThrowingKey& operator=(const ThrowingKey& o) {
    count();
    v = o.v;
    return *this;
  }
  static void count() {
    if (copies_left == 0) throw std::bad_alloc();
    if (copies_left > 0) --copies_left;
  }
  bool operator<(const ThrowingKey& o) const { return v < o.v; }
};

}  // namespace

TEST_CASE("LRU map: a put that throws leaves no entry behind, and the bound holds after") {
  LruMap<ThrowingKey, int> m(2);
  int drops = 0;
  auto drop = [&](const ThrowingKey&, int&) { ++drops; };
  m.put(1, 10, drop);
  // put copies the key into the order of use, then into the map: the second copy throws.
  ThrowingKey::copies_left = 1;
  CHECK_THROWS_AS(m.put(2, 20, drop), std::bad_alloc);
  ThrowingKey::copies_left = -1;
  CHECK(m.size() == 1);
  CHECK(m.find(2) == nullptr);
  for (int k = 3; k < 10; ++k) m.put(k, k * 10, drop);  // each past the bound drops the oldest
  CHECK(m.size() == 2);
  CHECK(drops == 6);
  CHECK(*m.find(9) == 90);
}

TEST_CASE("pointer cache: one driver description per allocation, hits validated by id") {
  FakeDriver drv;
  drv.alloc(0x100000, 0x10000);
  PointerCache cache(&drv);
  bool straddles = false;
  for (int i = 0; i < 100; ++i) {
    const MemRange r = cache.classify(at(0x100000 + 64 * i), 64, &straddles);
    REQUIRE(r.kind == MemKind::kDevice);
    REQUIRE_FALSE(straddles);
    CHECK(r.base == 0x100000);
  }
  CHECK(drv.describes == 1);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 99);
  CHECK(drv.id_queries == 99);  // every hit is checked against the allocation there now

  SECTION("freed and allocated again at the same address: not the old allocation") {
    drv.allocs.clear();
    drv.alloc(0x100000, 0x20000, MemKind::kManaged, 1);
    const MemRange r = cache.classify(at(0x118000), 16, &straddles);
    CHECK(r.kind == MemKind::kManaged);
    CHECK(r.device == 1);
    CHECK(cache.stats().stale == 0);  // 0x118000 is past the old range: a plain miss
    drv.allocs.clear();
    drv.alloc(0x100000, 0x10000);  // device again, new id, same start and size
    const MemRange again = cache.classify(at(0x100000), 16, &straddles);
    CHECK(again.kind == MemKind::kDevice);
    CHECK(again.buffer_id == drv.allocs[0x100000].buffer_id);
    CHECK(cache.stats().stale == 1);
  }
  SECTION("freed and the address is host memory now") {
    drv.allocs.clear();
    CHECK(cache.classify(at(0x100000), 16, &straddles).kind == MemKind::kHost);
    CHECK_FALSE(straddles);
    CHECK(cache.stats().stale == 1);
  }
  SECTION("host memory is not cached: the driver is asked each time") {
    const int before = drv.describes;
    CHECK(cache.classify(at(0x900000), 16, &straddles).kind == MemKind::kHost);
    CHECK(cache.classify(at(0x900000), 16, &straddles).kind == MemKind::kHost);
    CHECK(drv.describes == before + 4);  // the first and the last byte, twice
    CHECK(cache.size() == 1);
  }
  SECTION("a range that runs past its allocation, or into one, straddles") {
    cache.classify(at(0x10fff0), 32, &straddles);
    CHECK(straddles);
    cache.classify(at(0x0ffff0), 32, &straddles);
    CHECK(straddles);
    cache.classify(at(0x10fff0), 16, &straddles);
    CHECK_FALSE(straddles);
  }
}

TEST_CASE("pointer cache: without a driver everything is host, and the cache is bounded") {
  bool straddles = true;
  PointerCache none(nullptr);
  CHECK(none.classify(at(0x1234), 8, &straddles).kind == MemKind::kHost);
  CHECK_FALSE(straddles);
  CHECK(none.stats().misses == 0);

  FakeDriver drv;
  for (uintptr_t i = 0; i < 10; ++i) drv.alloc(0x1000000 * (i + 1), 0x1000);
  PointerCache small(&drv, 4);
  for (uintptr_t i = 0; i < 10; ++i) small.classify(at(0x1000000 * (i + 1)), 8, &straddles);
  CHECK(small.size() == 4);
  small.classify(at(0x1000000 * 10), 8, &straddles);  // still cached
  CHECK(small.stats().hits == 1);
  small.classify(at(0x1000000), 8, &straddles);  // evicted long ago
  CHECK(small.stats().misses == 11);
}

// An allocation of a peer, as the peer exports it.
IpcExport exported(uint8_t tag, uint64_t base, uint64_t size, uint64_t id) {
  return IpcExport{handle(tag), base, size, 0, id};
}

TEST_CASE("IPC cache: opens once per peer buffer, reopens stale handles, closes what it drops") {
  FakeOpener op;
  {
    IpcCache cache(&op, 3);
    void* a = nullptr;
    void* b = nullptr;
    for (int i = 0; i < 50; ++i) {
      REQUIRE(cache.map(1, exported(1, 0x100000, 0x1000, 100), &a).ok());
      REQUIRE(cache.map(2, exported(1, 0x100000, 0x1000, 200), &b).ok());  // other peer
    }
    CHECK(op.opens == 2);
    CHECK(cache.stats().hits == 98);
    CHECK(a != b);

    // The peer freed its buffer and made a new one at the same address, with the same handle
    // bytes or new ones: the old mapping is closed before the new one is opened.
    void* a2 = nullptr;
    REQUIRE(cache.map(1, exported(1, 0x100000, 0x1000, 101), &a2).ok());
    CHECK(op.opens == 3);
    CHECK(op.closes == 1);
    CHECK(a2 != a);
    REQUIRE(cache.map(1, exported(2, 0x100000, 0x1000, 102), &a2).ok());
    CHECK(op.opens == 4);
    CHECK(op.closes == 2);
    CHECK(op.open_now.size() == 2);

    // Bounded: a fourth mapping closes the least recently used one.
    void* x = nullptr;
    REQUIRE(cache.map(3, exported(7, 0x200000, 0x1000, 300), &x).ok());
    REQUIRE(cache.map(3, exported(8, 0x300000, 0x1000, 301), &x).ok());
    CHECK(cache.size() == 3);
    CHECK(op.closes == 3);

    // A failed open leaves nothing behind.
    op.fail = true;
    CHECK(cache.map(4, exported(9, 0x100000, 0x1000, 400), &x).code() == COLLX_ERR_TRANSPORT);
    CHECK(cache.size() == 3);
    op.fail = false;
  }
  CHECK(op.open_now.empty());  // destruction closed the rest
  CHECK(op.opens == op.closes);
}

TEST_CASE("IPC cache: a new allocation of a peer closes the peer's mappings it overlaps") {
  FakeOpener op;
  IpcCache cache(&op, 16);
  void* x = nullptr;
  // Peer 1 has four allocations of 0x1000 at 0x10000, 0x11000, 0x12000, 0x14000; peer 2 one
  // at the same addresses as the middle ones.
  for (uint64_t base : {0x10000, 0x11000, 0x12000, 0x14000}) {
    REQUIRE(cache.map(1, exported(1, base, 0x1000, base), &x).ok());
  }
  REQUIRE(cache.map(2, exported(1, 0x11000, 0x2000, 7), &x).ok());
  CHECK(op.opens == 5);
  // Peer 1 freed the second and third and made one allocation across them and a new page.
  REQUIRE(cache.map(1, exported(2, 0x11800, 0x2000, 99), &x).ok());
  CHECK(op.closes == 2);
  CHECK(cache.size() == 4);
  // Its neighbours and the other peer's mapping are still open: hits, no opens.
  const auto opens = op.opens;
  REQUIRE(cache.map(1, exported(1, 0x10000, 0x1000, 0x10000), &x).ok());
  REQUIRE(cache.map(1, exported(1, 0x14000, 0x1000, 0x14000), &x).ok());
  REQUIRE(cache.map(2, exported(1, 0x11000, 0x2000, 7), &x).ok());
  CHECK(op.opens == opens);
  // An allocation that ends where a mapping starts does not overlap it.
  REQUIRE(cache.map(1, exported(3, 0xf000, 0x1000, 5), &x).ok());
  CHECK(op.closes == 2);
  CHECK(cache.size() == 5);
}

TEST_CASE("a call's buffers: same kind of memory, one device, inside one allocation") {
  FakeDriver drv;
  drv.alloc(0x7000000, 0x100000, MemKind::kDevice, 3);
  drv.alloc(0x8000000, 0x100000, MemKind::kDevice, 4);
  drv.alloc(0x9000000, 0x100000, MemKind::kManaged, 0);
  test::run_ranks(1, {test::config_for("auto")}, [&](int, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    c.set_memory_query(&drv);
    std::vector<float> host(16);
    AllreduceOp op;
    REQUIRE(make_reducer(COLLX_FLOAT32, COLLX_SUM, &op.red).ok());  // (as validate() sets it)
    CHECK(c.check_memory(host.data(), host.data(), 64, "f", &op).ok());
    CHECK(op.mem == MemKind::kHost);
    // Managed memory is host-reachable: the host path.
    CHECK(c.check_memory(at(0x9000000), at(0x9000100), 64, "f", &op).ok());
    CHECK(op.mem == MemKind::kHost);

    CHECK(c.check_memory(at(0x7000000), at(0x7000100), 64, "collx_allreduce", &op).ok());
    CHECK(op.mem == MemKind::kDevice);
    CHECK(op.device == 3);

    Status two = c.check_memory(at(0x7000000), at(0x8000000), 64, "collx_allreduce", &op);
    CHECK(two.code() == COLLX_ERR_INVALID_ARG);
    CHECK(two.message().find("device 3 and recvbuf of device 4") != std::string::npos);

    Status mixed = c.check_memory(host.data(), at(0x7000000), 64, "collx_allreduce", &op);
    CHECK(mixed.code() == COLLX_ERR_INVALID_ARG);
    CHECK(mixed.message().find("host memory and recvbuf CUDA device memory") != std::string::npos);

    Status past = c.check_memory(at(0x70ffff0), at(0x70ffff0), 64, "collx_allreduce", &op);
    CHECK(past.code() == COLLX_ERR_INVALID_ARG);
    CHECK(past.message().find("sendbuf") != std::string::npos);

    // The GPU kernels take whole elements: a device buffer off its element's alignment is
    // refused (a misaligned access would be a fault that ends the CUDA context); host memory,
    // managed memory included, may lie at any offset.
    REQUIRE(make_reducer(COLLX_FLOAT64, COLLX_SUM, &op.red).ok());
    CHECK(c.check_memory(at(0x7000008), at(0x7000100), 64, "collx_allreduce", &op).ok());
    Status odd = c.check_memory(at(0x7000008), at(0x7000104), 64, "collx_allreduce", &op);
    CHECK(odd.code() == COLLX_ERR_INVALID_ARG);
    CHECK(odd.message() == "collx_allreduce: recvbuf is CUDA device memory 4 bytes past a "
                           "multiple of its element size (8): device buffers must be aligned "
                           "to their elements");
    CHECK(c.check_memory(at(0x7000001), at(0x7000001), 64, "f", &op).code() ==
          COLLX_ERR_INVALID_ARG);
    CHECK(c.check_memory(at(0x9000003), at(0x9000101), 64, "f", &op).ok());
    char* odd_host = reinterpret_cast<char*>(host.data()) + 3;
    CHECK(c.check_memory(odd_host, odd_host, 56, "f", &op).ok());
    REQUIRE(make_reducer(COLLX_INT8, COLLX_SUM, &op.red).ok());
    CHECK(c.check_memory(at(0x7000001), at(0x7000103), 64, "f", &op).ok());

    CHECK(c.pointers().stats().hits > 0);
  });
}

TEST_CASE("the CUDA driver is optional: without one, the query says why and is null") {
  std::string why;
  MemoryQuery* q = cuda_memory_query(&why);
  CHECK_FALSE(why.empty());
  if (q == nullptr) {
    CHECK(why.find("CUDA") != std::string::npos);
  } else {
    std::vector<char> host(64);  // a GPU machine: host memory is still host memory
    MemRange r;
    CHECK_FALSE(q->describe(host.data(), &r));
  }
}

TEST_CASE("host copies of device buffers for a host-only callee (the preload's pass-through)") {
  FakeDriver devs;
  int copies = 0;
  bool fail = false;
  const SyncCopy copy = [&](void* dst, const void* src, size_t n, int device) {
    CHECK(device == 3);
    ++copies;
    if (fail) return error(COLLX_ERR_TRANSPORT, "fake copy failed");
    std::memcpy(dst, src, n);
    return Status();
  };
  // 4 "elements" of a datatype whose bytes start 8 after the pointer: 10 used of every 16.
  std::vector<uint8_t> send(80, 0), recv(80, 0xee);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<uint8_t>(i);
  const Extent e{8, 3 * 16 + 10};
  const void* in_place = reinterpret_cast<const void*>(uintptr_t{1});
  // The callee adds 1 to the used bytes of each element of recv from send (or recv in place).
  auto callee = [&](const void* s, void* r) {
    CHECK(s != send.data());  // host copies, never the device buffers
    CHECK(r != recv.data());
    auto* out = static_cast<uint8_t*>(r);
    const auto* in = s == in_place ? out : static_cast<const uint8_t*>(s);
    for (size_t k = 0; k < 4; ++k) {
      for (size_t b = 8; b < 18; ++b) out[k * 16 + b] = static_cast<uint8_t>(in[k * 16 + b] + 1);
    }
  };
  HostCopies h;

  SECTION("host buffers are passed as they are, nothing copied") {
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e).ok());
    CHECK_FALSE(h.any());
    CHECK(h.send() == send.data());
    CHECK(h.recv() == recv.data());
    REQUIRE(h.copy_back().ok());
    CHECK(copies == 0);
  }
  devs.device_memory(send.data(), send.size(), 3);
  devs.device_memory(recv.data(), recv.size(), 3);
  SECTION("device buffers: the extent copied in, the callee's result copied back once") {
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e).ok());
    CHECK(h.any());
    CHECK(copies == 2);
    callee(h.send(), h.recv());
    CHECK(recv[8] == 0xee);  // nothing reaches the buffer before copy_back
    REQUIRE(h.copy_back().ok());
    CHECK(copies == 3);
    for (size_t i = 0; i < recv.size(); ++i) {
      const bool in_extent = i >= 8 && i < 8 + e.span;
      const bool used = in_extent && (i - 8) % 16 < 10;
      // Used bytes: the result; unused bytes of the extent and bytes outside it: untouched.
      const uint8_t want = used ? static_cast<uint8_t>(i + 1) : 0xee;
      if (recv[i] != want) FAIL("byte " << i << (in_extent ? " (in the extent)" : "") << " is " << int(recv[i]));
    }
    REQUIRE(h.copy_back().ok());  // a second copy_back copies nothing
    CHECK(copies == 3);
    CHECK(h.any());
  }
  SECTION("copied in again (a persistent request's next start): the same host copies, fresh") {
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e).ok());
    const void* first_send = h.send();
    void* first_recv = h.recv();
    callee(h.send(), h.recv());
    REQUIRE(h.copy_back().ok());
    for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<uint8_t>(100 + i);
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e).ok());
    CHECK(h.send() == first_send);  // the addresses MPI's persistent request was made on
    CHECK(h.recv() == first_recv);
    callee(h.send(), h.recv());
    REQUIRE(h.copy_back().ok());  // copied back again: once per copy_in
    CHECK(copies == 6);
    CHECK(recv[8] == 109);
    CHECK(recv[7] == 0xee);
  }
  SECTION("in place: the marker is passed through, recv staged") {
    for (size_t i = 0; i < recv.size(); ++i) recv[i] = static_cast<uint8_t>(2 * i);
    REQUIRE(h.copy_in(&devs, copy, in_place, recv.data(), in_place, e).ok());
    CHECK(h.send() == in_place);
    callee(h.send(), h.recv());
    REQUIRE(h.copy_back().ok());
    CHECK(copies == 2);
    CHECK(recv[8] == 17);
    CHECK(recv[7] == 14);
  }
  SECTION("only the receive buffer on the device: send passed as it is") {
    std::vector<uint8_t> host_send(send);
    REQUIRE(h.copy_in(&devs, copy, host_send.data(), recv.data(), in_place, e).ok());
    CHECK(h.send() == host_send.data());
    CHECK(h.recv() != recv.data());
    CHECK(copies == 1);
  }
  SECTION("a failed copy in: the buffers as they are, nothing copied back") {
    fail = true;
    const Status st = h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e);
    CHECK(st.message() == "fake copy failed");
    CHECK_FALSE(h.any());
    CHECK(h.send() == send.data());
    CHECK(h.recv() == recv.data());
    fail = false;
    REQUIRE(h.copy_back().ok());
    CHECK(copies == 1);
    CHECK(recv[8] == 0xee);
  }
  SECTION("a failed copy back is reported") {
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, e).ok());
    fail = true;
    CHECK(h.copy_back().message() == "fake copy failed");
  }
  SECTION("an empty extent: the buffers as they are, nothing copied") {
    REQUIRE(h.copy_in(&devs, copy, send.data(), recv.data(), in_place, Extent{0, 0}).ok());
    CHECK_FALSE(h.any());
    CHECK(h.send() == send.data());
    CHECK(h.recv() == recv.data());
    CHECK(copies == 0);
  }
}
