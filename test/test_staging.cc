// Host staging of device buffers (memory/staging.h, Comm's device path), without a GPU: the
// "device" memory is ordinary memory that a fake driver calls device memory, and the fake
// copier's copies take effect only when waited for, as asynchronous copies do. It reports any
// hazard a real GPU could turn into wrong data: a slot refilled while a copy out of it may be
// pending, a slot read by the host before its copy in was waited for, or a copy still queued
// when the call returns.
#include <catch2/catch.hpp>

#include <barrier>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "common/fake_copier.h"
#include "common/device_matrix.h"
#include "common/fake_driver.h"
#include "common/inproc.h"
#include "common/pattern.h"
#include "memory/cuda_driver.h"
#include "memory/staging.h"

using namespace collx;
using namespace collx::test;

namespace {

// `devs` as c's CUDA driver, and plain fake copiers.
void use_fakes(Comm& c, FakeDriver& devs) {
  c.set_memory_query(&devs);
  c.set_copier_factory([](int, std::unique_ptr<DeviceCopier>* out) {
    *out = std::make_unique<FakeCopier>();
    return Status();
  });
}

// An in-place sum of `count` elements of dtype d at buf, its memory classified by c.
AllreduceOp in_place_sum(Comm& c, void* buf, size_t count, collx_dtype_t d) {
  AllreduceOp o;
  TCHECK(make_reducer(d, COLLX_SUM, &o.red).ok());
  o.send = o.recv = buf;
  o.count = count;
  TCHECK(c.check_memory(buf, buf, count * o.red.elem_size, "test", &o).ok());
  return o;
}

}  // namespace

TEST_CASE("staging: chunk arithmetic") {
  CHECK(staging_chunk_count(1 << 20, 4) == 262144);
  CHECK(staging_chunk_count(4096, 8) == 512);
  CHECK(staging_chunk_count(3, 8) == 1);  // never zero elements
  CHECK(staging_chunks(0, 100) == 0);
  CHECK(staging_chunks(1, 100) == 1);
  CHECK(staging_chunks(100, 100) == 1);
  CHECK(staging_chunks(101, 100) == 2);
  CHECK(staging_chunks(700, 100) == 7);
}

TEST_CASE("staging pipeline: every chunk in order, overlapped, no hazard, nothing left queued") {
  const size_t chunk = 100;
  for (size_t count : {size_t{0}, size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 3 * chunk,
                       7 * chunk + 3}) {
    for (bool in_place : {false, true}) {
      FakeCopier fc;
      std::vector<int32_t> send(count), recv(count + 16, -7);
      for (size_t i = 0; i < count; ++i) (in_place ? recv : send)[i] = static_cast<int32_t>(i);
      std::vector<size_t> order;
      size_t pending_in_max = 0;
      const Status st = staged_allreduce(
          fc, in_place ? static_cast<const void*>(recv.data()) : send.data(), recv.data(), count,
          4, chunk, [&](void* host, size_t n, size_t i) {
            order.push_back(i);
            pending_in_max = std::max(pending_in_max, fc.in.size());
            auto* v = static_cast<int32_t*>(host);
            for (size_t k = 0; k < n; ++k) v[k] = v[k] * 2 + 1;  // "reduce" in place
            return Status();
          });
      INFO("count " << count << (in_place ? " in place" : ""));
      REQUIRE(st.ok());
      CHECK(fc.hazards.empty());
      CHECK(fc.in.empty());
      CHECK(fc.out.empty());
      CHECK(order.size() == staging_chunks(count, chunk));
      for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
      if (count > chunk) CHECK(pending_in_max == 1);  // the next chunk was on its way
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != static_cast<int32_t>(2 * i + 1)) FAIL("element " << i << " is " << recv[i]);
      }
      CHECK(recv[count] == -7);  // nothing written past the end
      CHECK(fc.reserves == (count > 0 ? 1 : 0));
      if (count > 0) CHECK(fc.slots[0].size() == std::min(count, chunk) * 4);
    }
  }
}

TEST_CASE("staging pipeline: an error stops it, and no copy is left to touch the buffers") {
  FakeCopier fc;
  fc.fail_out_at = 2;
  std::vector<float> buf(1000, 1.0f);
  int reduced = 0;
  const Status st = staged_allreduce(fc, buf.data(), buf.data(), buf.size(), 4, 100,
                                     [&](void*, size_t, size_t) {
                                       ++reduced;
                                       return Status();
                                     });
  CHECK(st.code() == COLLX_ERR_TRANSPORT);
  CHECK(reduced == 3);
  CHECK(fc.in.empty());
  CHECK(fc.out.empty());

  FakeCopier fr;
  const Status st2 = staged_allreduce(fr, buf.data(), buf.data(), buf.size(), 4, 100,
                                      [&](void*, size_t, size_t i) {
                                        return i == 4 ? error(COLLX_ERR_TIMEOUT, "chunk 4")
                                                      : Status();
                                      });
  CHECK(st2.code() == COLLX_ERR_TIMEOUT);
  CHECK(fr.in.empty());
  CHECK(fr.out.empty());
  CHECK(fr.hazards.empty());
}

// Device buffers through the communicator: classified by the pointer cache, staged chunk by
// chunk through each chunk's own collective, exact and bitwise identical on every rank.
TEST_CASE("device buffers: staged allreduce over 1, 2, 3 and 5 ranks, every dtype x op") {
  for (int p : {1, 2, 3, 5}) {
    for (const char* algo : {"auto", "ring", "shm_two_shot"}) {
      Config cfg = config_for(algo, 4096);
      cfg.staging_chunk = 4096;
      cfg.cuda_ipc = false;  // within a node device buffers would go over CUDA IPC
      DeviceMatrix m(p);
      run_ranks(p, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
        Comm& c = *comms[0];
        FakeDriver devs;
        FakeCopier* copier = nullptr;
        c.set_memory_query(&devs);
        c.set_copier_factory([&](int device, std::unique_ptr<DeviceCopier>* out) {
          TCHECK(device == 1);
          auto fc = std::make_unique<FakeCopier>();
          copier = fc.get();
          *out = std::move(fc);
          return Status();
        });
        const std::string first = run_device_matrix(m, c, devs, 1, rank, [&] {
          return copier == nullptr || copier->hazards.empty() ? std::string()
                                                              : copier->hazards[0];
        });
        TCHECK(std::string(algo) + ": " + first == std::string(algo) + ": ");
        TCHECK(copier != nullptr);
      });
    }
  }
}

TEST_CASE("device buffers: one copier per device, kept across calls; stream ordering asked") {
  run_ranks(2, {config_for("auto")}, [&](int, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    FakeDriver devs;
    int made = 0;
    std::vector<FakeCopier*> copiers;
    c.set_memory_query(&devs);
    c.set_copier_factory([&](int, std::unique_ptr<DeviceCopier>* out) {
      ++made;
      auto fc = std::make_unique<FakeCopier>();
      copiers.push_back(fc.get());
      *out = std::move(fc);
      return Status();
    });
    std::vector<float> a(300, 1.0f), b(300, 2.0f);
    devs.device_memory(a.data(), a.size() * 4, 0);
    devs.device_memory(b.data(), b.size() * 4, 1);
    for (int call = 0; call < 3; ++call) {
      for (std::vector<float>* v : {&a, &a, &b}) {
        const Status st = c.allreduce(in_place_sum(c, v->data(), v->size(), COLLX_FLOAT32));
        TCHECK(st.message() == "");
      }
    }
    // a, a, b three times: the copier is remade when the device changes, not per call.
    TCHECK(made == 6);
    TCHECK(a[0] == 1.0f * 64);  // six sums over two ranks
    TCHECK(b[0] == 2.0f * 8);

    auto* stream = reinterpret_cast<void*>(uintptr_t{0x5150});
    AllreduceOp o = in_place_sum(c, b.data(), b.size(), COLLX_FLOAT32);
    o.on_stream = true;
    o.stream = stream;
    const Status st = c.allreduce(o);
    TCHECK(st.message() == "");
    TCHECK(copiers.back()->streams == std::vector<void*>{stream});
  });
}

TEST_CASE("device buffers: a copier that cannot be made fails the call, naming the cause") {
  run_ranks(1, {config_for("auto")}, [&](int, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    FakeDriver devs;
    c.set_memory_query(&devs);
    std::vector<float> a(16, 1.0f);
    devs.device_memory(a.data(), a.size() * 4, 0);
    // The default factory is the CUDA driver's: on a machine without one it says so.
    std::string why;
    if (cuda_memory_query(&why) == nullptr) {
      const Status st = c.allreduce(in_place_sum(c, a.data(), a.size(), COLLX_FLOAT32));
      TCHECK(st.code() == COLLX_ERR_UNSUPPORTED);
      TCHECK(st.message().find("CUDA driver") != std::string::npos);
    }
  });
  // Any machine: the factory's error is the call's, and the communicator is unusable after
  // it (its peers went on with the chunks).
  run_ranks(2, {config_for("auto")}, [&](int, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    FakeDriver devs;
    c.set_memory_query(&devs);
    c.set_copier_factory([](int device, std::unique_ptr<DeviceCopier>*) {
      return error(COLLX_ERR_TRANSPORT, "no pinned memory for device %d", device);
    });
    std::vector<float> a(16, 1.0f);
    devs.device_memory(a.data(), a.size() * 4, 2);
    const Status st = c.allreduce(in_place_sum(c, a.data(), a.size(), COLLX_FLOAT32));
    TCHECK(st.code() == COLLX_ERR_TRANSPORT);
    TCHECK(st.message() == "no pinned memory for device 2");
    TCHECK(a[0] == 1.0f);
    const Status next = c.allreduce(in_place_sum(c, a.data(), a.size(), COLLX_FLOAT32));
    TCHECK(next.code() == COLLX_ERR_COMM_FAILED);
  });
}

TEST_CASE("host buffers with a stream: without a driver only the null stream is accepted") {
  std::string why;
  if (cuda_memory_query(&why) != nullptr) return;  // a GPU machine: run_gpu checks cover it
  CHECK(cuda_stream_synchronize(nullptr).ok());
  const Status st = cuda_stream_synchronize(reinterpret_cast<void*>(uintptr_t{0x10}));
  CHECK(st.code() == COLLX_ERR_UNSUPPORTED);
  CHECK(st.message().find("stream") != std::string::npos);
}

TEST_CASE("device buffers under COLLX_CHECK: disagreeing counts are a mismatch on every rank") {
  Config cfg = config_for("auto");
  cfg.check = true;
  cfg.staging_chunk = 4096;
  run_ranks(2, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    FakeDriver devs;
    use_fakes(c, devs);
    std::vector<float> buf(5000, 1.0f);
    devs.device_memory(buf.data(), buf.size() * 4, 0);
    auto call = [&](size_t count) {
      return c.allreduce(in_place_sum(c, buf.data(), count, COLLX_FLOAT32));
    };
    // 5000 and 4000 floats: the first three 1024-element chunks alone would agree.
    const Status st = call(rank == 0 ? 5000 : 4000);
    TCHECK(st.code() == COLLX_ERR_MISMATCH);
    TCHECK(buf[0] == 1.0f);  // nothing reduced
    const Status again = call(5000);  // the ranks are still in step
    TCHECK(again.ok());
    TCHECK(buf[4999] == 2.0f);

    // Device buffers on one rank, host buffers on the other: the staged chunks would not
    // line up with the host call's collective, so this is a disagreement too.
    if (rank == 1) devs.allocs.clear();
    const Status mixed = call(5000);
    TCHECK(mixed.code() == COLLX_ERR_MISMATCH);
    TCHECK(mixed.message().find("CUDA device memory") != std::string::npos);
    TCHECK(mixed.message().find("host memory") != std::string::npos);
    TCHECK(buf[4999] == 2.0f);
    if (rank == 1) devs.device_memory(buf.data(), buf.size() * 4, 0);
    const Status after = call(5000);
    TCHECK(after.ok());
    TCHECK(buf[4999] == 4.0f);
  });
}

TEST_CASE("device buffers: non-blocking, staged on the communicator's thread, in posting order") {
  Config cfg = config_for("auto");
  cfg.staging_chunk = 4096;
  run_ranks(3, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    FakeDriver devs;
    use_fakes(c, devs);
    // Device and host operations interleaved, of sizes from one chunk to many.
    constexpr int kOps = 6;
    std::vector<std::vector<int64_t>> bufs(kOps);
    std::vector<Request*> reqs(kOps, nullptr);
    for (int k = 0; k < kOps; ++k) {
      const size_t count = 700u * (k + 1) * (k + 1);
      bufs[k].assign(count, 0);
      fill_input(COLLX_INT64, COLLX_SUM, rank, count, bufs[k].data());
      if (k % 2 == 0) devs.device_memory(bufs[k].data(), count * 8, 0);
      const AllreduceOp o = in_place_sum(c, bufs[k].data(), count, COLLX_INT64);
      TCHECK((o.mem == MemKind::kDevice) == (k % 2 == 0));
      const Status st = c.iallreduce(o, &reqs[k]);
      TCHECK(st.ok());
    }
    c.drain();
    for (int k = kOps - 1; k >= 0; --k) {
      TCHECK(reqs[k]->done.load());
      TCHECK(reqs[k]->result.ok());
      std::vector<int64_t> want(bufs[k].size());
      fill_expected(COLLX_INT64, COLLX_SUM, 3, want.size(), want.data());
      TCHECK(bufs[k] == want);
      delete reqs[k];
    }
  });
}

namespace {

// One rank's transport whose cancel() let go of requests the network layer may still use
// (Transport::gave_up), as UCX's does towards a frozen peer; it keeps what it is handed
// (Transport::keep) in `kept`. One rank sends nothing: every post is an error.
class LetGoTransport final : public Transport {
 public:
  LetGoTransport(bool gave_up, std::vector<std::pair<void*, void (*)(void*)>>* kept)
      : Transport(0, 1), gave_up_(gave_up), kept_(kept) {}
  bool gave_up() const override { return gave_up_; }
  void keep(void* memory, void (*free_fn)(void*)) noexcept override {
    kept_->emplace_back(memory, free_fn);
  }

 protected:
  Status post(Request&, uint32_t) override { return error(COLLX_ERR_INTERNAL, "no peers"); }
  Status test(Request&) override { return error(COLLX_ERR_INTERNAL, "no peers"); }
  void progress() override {}
  void cancel(std::vector<Request>&, collx_status_t) override {}

 private:
  bool gave_up_;
  std::vector<std::pair<void*, void (*)(void*)>>* kept_;
};

struct CountedCopier : FakeCopier {
  explicit CountedCopier(int* live) : live_(live) { ++*live_; }
  ~CountedCopier() override { --*live_; }
  int* live_;
};

}  // namespace

TEST_CASE("device buffers: after a give-up, host staging's copier outlives the communicator") {
  const bool gave_up = GENERATE(true, false);
  std::vector<std::pair<void*, void (*)(void*)>> kept;
  Comm* c = nullptr;
  REQUIRE(Comm::create(std::make_unique<LetGoTransport>(gave_up, &kept), config_for("auto"), &c)
              .ok());
  FakeDriver devs;
  int live = 0;
  c->set_memory_query(&devs);
  c->set_copier_factory([&](int, std::unique_ptr<DeviceCopier>* out) {
    *out = std::make_unique<CountedCopier>(&live);
    return Status();
  });
  std::vector<float> a(300, 1.5f);
  devs.device_memory(a.data(), a.size() * 4, 0);
  const Status st = c->allreduce(in_place_sum(*c, a.data(), a.size(), COLLX_FLOAT32));
  CHECK(st.message() == "");
  CHECK(a[0] == 1.5f);
  CHECK(live == 1);
  delete c;
  // A send of a chunk let go may still read its pinned slot: the copier stays with the
  // transport's keeper (the UCX worker, until collx_finalize) and is freed by it.
  CHECK(live == (gave_up ? 1 : 0));
  CHECK(kept.size() == (gave_up ? 1u : 0u));
  for (auto& [memory, free_fn] : kept) free_fn(memory);
  CHECK(live == 0);
}
