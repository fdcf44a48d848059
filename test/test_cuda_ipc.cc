// The CUDA IPC allreduce (algo/cuda_ipc.cc) through the communicator, without a GPU: "device"
// memory is ordinary memory that a fake driver calls device memory, the ranks are threads, an
// IPC handle names an address in this process, and the fake device's kernels and copies take
// effect only when its stream is synchronized, as asynchronous GPU work does. A rank that
// published a flag before its work had finished, or that returned while a peer could still
// read its buffers, shows up as a wrong result (each rank poisons its buffers as soon as its
// call returns) or, under ThreadSanitizer, as a data race.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "common/device_matrix.h"
#include "common/fake_device_ipc.h"
#include "common/inproc.h"
#include "common/pattern.h"

using namespace collx;
using namespace collx::test;

TEST_CASE("CUDA IPC: one-shot and two-shot over 2, 3 and 5 ranks, every dtype x op, in place") {
  for (int p : {2, 3, 5}) {
    for (bool two_shot : {false, true}) {
      Config cfg = config_for("auto", 4096);
      cfg.cuda_two_shot = two_shot ? 0 : SIZE_MAX;
      DeviceMatrix m(p);
      run_ranks(p, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
        Comm& c = *comms[0];
        Fakes f;
        f.attach(c);
        const std::string first = run_device_matrix(m, c, f.devs, 0, rank, [&] {
          return f.ipc == nullptr || f.ipc->queued.empty() ? std::string()
                                                           : std::string("GPU work left queued");
        });
        TCHECK(std::string(two_shot ? "two-shot " : "one-shot ") + first ==
               (two_shot ? "two-shot " : "one-shot "));
        TCHECK(f.copiers_made == 0);  // never staged
        TCHECK(f.ipc_made == 1);
      });
    }
  }
}

// The one-kernel allreduce for messages of up to `max` bytes.
Config flags_config(size_t max) {
  Config c = config_for("auto", 4096);
  c.cuda_flags_max = max;
  return c;
}

TEST_CASE("CUDA flags: one kernel per call over 2, 3 and 5 ranks, every dtype x op, in place") {
  for (int p : {2, 3, 5}) {
    DeviceMatrix m(p);
    run_ranks(p, {flags_config(1 << 20)}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.attach(c);
      int calls = 0;
      const std::string first = run_device_matrix(m, c, f.devs, 0, rank, [&] {
        if (c.last_algo() == Algo::kStaged) return std::string();  // count 0: nothing to do
        ++calls;
        return c.last_algo() == Algo::kCudaIpcFlags ? std::string() : std::string("not flags");
      });
      TCHECK(first == "");
      TCHECK(f.ipc_made == 1);  // the flags' device object, made once
      TCHECK(f.ipc->flags_calls == calls);
      TCHECK(f.ipc->exports == 1);  // its area, exported once
      TCHECK(f.ipc->opens == p - 1);  // each peer's area, opened once
      TCHECK(c.ipc_cache() == nullptr);  // no buffer was described
      TCHECK(f.copiers_made == 0);
      const Status down = c.shutdown();  // no rank frees its area while a peer reads it
      TCHECK(down.ok());
    });
  }
}

TEST_CASE("CUDA flags: larger messages take the IPC kernels; the caller's stream is passed on") {
  run_ranks(3, {flags_config(4096)}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    std::vector<int32_t> buf(3000);
    f.devs.device_memory(buf.data(), buf.size() * 4, 0);
    for (size_t count : {size_t{1024}, size_t{1025}, size_t{1}, size_t{3000}, size_t{1024}}) {
      std::fill(buf.begin(), buf.end(), rank + 1);
      AllreduceOp o = device_op(c, buf.data(), buf.data(), count, COLLX_INT32, COLLX_SUM);
      o.on_stream = true;
      o.stream = reinterpret_cast<void*>(uintptr_t{0x5150} + count);
      const Status st = c.allreduce(o);
      TCHECK(st.ok());
      TCHECK(buf[count - 1] == 6);
      TCHECK(buf[2999] == (count == 3000 ? 6 : rank + 1));
      TCHECK(c.last_algo() == (count <= 1024 ? Algo::kCudaIpcFlags : Algo::kCudaIpcOneShot));
    }
    TCHECK(f.ipc_made == 2);  // the flags' own, and the IPC kernels'
    const Status down = c.shutdown();
    TCHECK(down.ok());
  });
}

TEST_CASE("CUDA flags: off where ranks share a GPU without MPS, a rank has no area, or p > 8") {
  struct Case {
    const char* what;
    int p;
    bool mps;
    int no_area;  // this rank's flag_area fails
    Algo small;   // what a small call runs then
    int no_memory = -1;  // this rank's device object finds no memory (its factory throws)
  };
  const Case cases[] = {
      {"one GPU without MPS", 2, false, -1, Algo::kStaged},
      {"a rank without an area", 3, true, 2, Algo::kCudaIpcOneShot},
      {"nine ranks", 9, true, -1, Algo::kCudaIpcOneShot},
      {"a rank whose device object finds no memory", 3, true, -1, Algo::kStaged, 1},
  };
  for (const Case& k : cases) {
    INFO(k.what);
    Config cfg = flags_config(64 << 10);
    cfg.cuda_ipc_min_timesliced = 1 << 20;
    run_ranks(k.p, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.setup = [&](FakeDeviceIpc& d) {
        d.on_mps = k.mps;
        d.flags_absent = rank == k.no_area;
      };
      f.attach(c);
      if (rank == k.no_memory) device_object_without_memory(c);
      std::vector<float> buf(100);
      f.devs.device_memory(buf.data(), buf.size() * 4, 0);
      for (int i = 0; i < 2; ++i) {
        std::fill(buf.begin(), buf.end(), 0.5f);
        const Status st =
            c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_FLOAT32, COLLX_SUM));
        TCHECK(st.ok());
        TCHECK(buf[99] == 0.5f * static_cast<float>(k.p));
        TCHECK(c.last_algo() == k.small);
      }
      TCHECK(f.ipc_made >= (rank == k.no_memory ? 0 : 1));
      const Status down = c.shutdown();
      TCHECK(down.ok());
    });
  }
}

// One rank's 100 floats of fake device memory (all 1), reduced in place through its
// communicator's one-kernel path.
struct FlagsRank {
  explicit FlagsRank(Comm& comm) : c(comm) {
    f.attach(c);
    f.devs.device_memory(buf.data(), buf.size() * 4, 0);
  }
  Status call() {
    return c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_FLOAT32, COLLX_SUM));
  }
  Comm& c;
  Fakes f;
  std::vector<float> buf = std::vector<float>(100, 1.0f);
};

TEST_CASE("CUDA flags: a rank that never calls times its peers out, naming it") {
  Config cfg = flags_config(64 << 10);
  cfg.timeout_s = 0.5;
  std::barrier<> done(3);  // rank 2 keeps its area until the others have given up on it
  run_ranks(3, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
    FlagsRank me(*comms[0]);
    const Status st = me.call();  // sets up, then reduces
    TCHECK(st.ok());
    if (rank == 2) {  // leaves the others waiting in their next call
      done.arrive_and_wait();
      return;
    }
    const Status late = me.call();
    TCHECK(late.code() == COLLX_ERR_TIMEOUT);
    TCHECK(late.message().find("waited 0.5 s for rank 2's kernel") != std::string::npos);
    const Status next = me.call();
    TCHECK(next.code() == COLLX_ERR_COMM_FAILED);
    done.arrive_and_wait();
  });
}

thread_local int t_progress_runs = 0;
void count_progress() { ++t_progress_runs; }

TEST_CASE("CUDA flags: a rank waiting for a late peer runs its thread's progress hook") {
  // MPI's progress rule under the preload: the peer may need this rank's MPI progress before
  // it can call. The fake kernel's wait runs FlagsCall::progress as the real one's does; this
  // checks that the communicator passes the thread's hook.
  std::barrier<> set_up(3);
  run_ranks(3, {flags_config(64 << 10)}, [&](int rank, std::vector<Comm*>& comms) {
    FlagsRank me(*comms[0]);
    Status st = me.call();  // sets up, then reduces (TCHECK's lock: not around a call)
    TCHECK(st.ok());
    TCHECK(me.f.ipc->flags_calls == 1);
    set_up.arrive_and_wait();
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const OuterProgress before = set_outer_progress(count_progress);
    t_progress_runs = 0;
    st = me.call();
    set_outer_progress(before);
    TCHECK(st.ok());
    TCHECK(me.f.ipc->flags_calls == 2);
    if (rank != 2) TCHECK(t_progress_runs >= 5);  // about 30 over the 30 ms
    const Status down = me.c.shutdown();  // no rank frees its area while a peer reads it
    TCHECK(down.ok());
    TCHECK(me.buf[0] == 9.0f);
  });
}

TEST_CASE("CUDA flags: a call on another device is refused, and the communicator fails") {
  // The peers' kernels would wait for this rank's flags on the first device: it cannot go on
  // in step with them (COLLX_CUDA_FLAGS_MAX=0 lets a communicator change devices).
  std::barrier<> done(2);  // no rank frees its flag area while a peer's first call may read it
  run_ranks(2, {flags_config(64 << 10)}, [&](int, std::vector<Comm*>& comms) {
    FlagsRank me(*comms[0]);
    Status st = me.call();  // sets up on device 0, then reduces
    TCHECK(st.ok());
    std::vector<float> other(100, 1.0f);
    me.f.devs.device_memory(other.data(), other.size() * 4, 1);
    st = me.c.allreduce(
        device_op(me.c, other.data(), other.data(), other.size(), COLLX_FLOAT32, COLLX_SUM));
    TCHECK(st.code() == COLLX_ERR_INVALID_ARG);
    TCHECK(st.message().find("400 bytes on device 1, but this communicator's one-kernel "
                             "allreduce runs on device 0") != std::string::npos);
    TCHECK(other[0] == 1.0f);
    TCHECK(other[99] == 1.0f);
    TCHECK(me.f.ipc->flags_calls == 1);
    st = me.call();
    TCHECK(st.code() == COLLX_ERR_COMM_FAILED);
    TCHECK(me.buf[0] == 2.0f);  // the first call's result, not touched since
    done.arrive_and_wait();  // a failed communicator cannot shut down in step
  });
}

TEST_CASE("CUDA IPC cache: opens on the first call, none after; a reallocation reopens") {
  run_ranks(3, {config_for("auto")}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    std::vector<float> a(1000), b(1000);
    f.devs.device_memory(a.data(), a.size() * 4, 0);
    f.devs.device_memory(b.data(), b.size() * 4, 0);
    auto call = [&] {
      std::fill(a.begin(), a.end(), 1.0f + static_cast<float>(rank));
      return c.allreduce(device_op(c, a.data(), b.data(), a.size(), COLLX_FLOAT32, COLLX_SUM));
    };
    Status st = call();
    TCHECK(st.ok());
    // Each peer's two allocations, opened once; this rank's two, exported once.
    TCHECK(c.ipc_cache()->stats().opens == 4);
    TCHECK(c.ipc_exports() == 2);
    for (int i = 0; i < 5; ++i) {
      st = call();
      TCHECK(st.ok());
    }
    TCHECK(c.ipc_cache()->stats().opens == 4);
    TCHECK(c.ipc_cache()->stats().hits == 5 * 4);
    TCHECK(c.ipc_exports() == 2);
    TCHECK(b[999] == 6.0f);

    // Every rank frees `a` and allocates again at the same address (the driver gives the new
    // allocation a new buffer id): the peers reopen it, and only it.
    f.devs.device_memory(a.data(), a.size() * 4, 0);
    st = call();
    TCHECK(st.ok());
    TCHECK(c.ipc_cache()->stats().opens == 6);
    TCHECK(c.ipc_cache()->stats().closes == 2);
    TCHECK(c.ipc_exports() == 3);
    TCHECK(b[0] == 6.0f);
    TCHECK(f.copiers_made == 0);
  });
}

TEST_CASE("CUDA IPC: where any rank cannot take part, every rank stages instead") {
  struct Case {
    const char* what;
    std::function<void(int rank, Fakes&)> spoil;
  };
  const Case cases[] = {
      {"a peer's GPU out of reach",
       [](int rank, Fakes& f) {
         if (rank == 2) f.setup = [](FakeDeviceIpc& d) { d.unreachable.insert(DeviceUuid{}); };
       }},
      {"an open that fails",
       [](int rank, Fakes& f) {
         if (rank == 1) f.setup = [](FakeDeviceIpc& d) { d.fail_open = true; };
       }},
      {"no IPC device", [](int, Fakes&) {}},  // set below: the factory fails on rank 0
      // Set below: rank 0's factory throws, as making a device object that finds no memory
      // does (before, rank 0's call failed with it and its peers waited for its vote until
      // their deadline).
      {"no memory for the device object", [](int, Fakes&) {}},
  };
  for (const Case& k : cases) {
    INFO(k.what);
    run_ranks(3, {config_for("auto")}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      // Rank 1's GPU has another UUID: the "out of reach" case makes rank 2 unable to read it.
      f.attach(c, rank == 1 ? 0 : 7);
      k.spoil(rank, f);
      if (std::string(k.what) == "no IPC device" && rank == 0) {
        c.set_ipc_factory([](int, std::unique_ptr<DeviceIpc>*) {
          return error(COLLX_ERR_UNSUPPORTED, "no IPC here");
        });
      }
      if (std::string(k.what) == "no memory for the device object" && rank == 0) {
        device_object_without_memory(c);
      }
      std::vector<int32_t> buf(3000, rank + 1);
      f.devs.device_memory(buf.data(), buf.size() * 4, 0);
      for (int i = 0; i < 2; ++i) {
        const Status st =
            c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM));
        TCHECK(st.message() == "");
      }
      TCHECK(buf[0] == 18);  // 1 + 2 + 3, then 3 * 6
      TCHECK(buf[2999] == 18);
      TCHECK(f.copiers_made == 1);  // staged, the copier kept across calls
    });
  }
}

TEST_CASE("CUDA IPC: COLLX_CUDA=0 stages; the caller's stream is waited for") {
  Config off = config_for("auto");
  off.cuda_ipc = false;
  run_ranks(2, {off, config_for("auto")}, [&](int rank, std::vector<Comm*>& comms) {
    Fakes staged, ipc;
    staged.attach(*comms[0]);
    ipc.attach(*comms[1]);
    std::vector<double> a(500, 1.0), b(500, 1.0);
    staged.devs.device_memory(a.data(), a.size() * 8, 0);
    ipc.devs.device_memory(b.data(), b.size() * 8, 0);
    Status st = comms[0]->allreduce(
        device_op(*comms[0], a.data(), a.data(), a.size(), COLLX_FLOAT64, COLLX_SUM));
    TCHECK(st.ok());
    TCHECK(staged.ipc_made == 0);
    TCHECK(staged.copiers_made == 1);
    TCHECK(a[499] == 2.0);

    AllreduceOp o = device_op(*comms[1], b.data(), b.data(), b.size(), COLLX_FLOAT64, COLLX_MAX);
    st = comms[1]->allreduce(o);
    TCHECK(st.ok());
    o.on_stream = true;
    o.stream = reinterpret_cast<void*>(uintptr_t{0x5150} + rank);
    st = comms[1]->allreduce(o);
    TCHECK(st.ok());
    TCHECK(ipc.copiers_made == 0);
    TCHECK(ipc.ipc->streams == std::vector<void*>{nullptr, o.stream});
    TCHECK(b[0] == 1.0);
  });
}

TEST_CASE("CUDA IPC: small messages are staged, larger ones where ranks share a GPU without MPS") {
  Config cfg = config_for("auto");
  cfg.cuda_ipc_min = 4096;
  cfg.cuda_ipc_min_timesliced = 65536;
  for (int layout = 0; layout < 3; ++layout) {
    // 0: one GPU, MPS; 1: one GPU, no MPS; 2: a GPU per rank (peer access), no MPS.
    run_ranks(2, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.setup = [&](FakeDeviceIpc& d) { d.on_mps = layout == 0; };
      f.attach(c, layout == 2 ? static_cast<uint8_t>(10 + rank) : 7);
      std::vector<float> buf(65536 / 4 + 1);
      f.devs.device_memory(buf.data(), buf.size() * 4, 0);
      for (size_t bytes : {size_t{4}, size_t{4092}, size_t{4096}, size_t{65532}, size_t{65536}}) {
        std::fill(buf.begin(), buf.end(), 1.5f);
        const size_t count = bytes / 4;
        const Status st =
            c.allreduce(device_op(c, buf.data(), buf.data(), count, COLLX_FLOAT32, COLLX_SUM));
        if (!st.ok()) std::fprintf(stderr, "%d %zu %s\n", layout, bytes, st.message().c_str());
        TCHECK(st.ok());
        TCHECK(buf[count - 1] == 3.0f);
        TCHECK(buf[count] == 1.5f);
        const size_t least = layout == 1 ? 65536 : 4096;
        TCHECK((c.last_algo() == Algo::kStaged) == (bytes < least));
      }
    });
  }
}

TEST_CASE("CUDA IPC under COLLX_CHECK: a disagreement is a mismatch, and the ranks stay in step") {
  Config cfg = config_for("auto");
  cfg.check = true;
  run_ranks(2, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    std::vector<float> buf(5000, 1.0f);
    f.devs.device_memory(buf.data(), buf.size() * 4, 0);
    auto call = [&](size_t count) {
      return c.allreduce(device_op(c, buf.data(), buf.data(), count, COLLX_FLOAT32, COLLX_SUM));
    };
    const Status st = call(rank == 0 ? 5000 : 4000);
    TCHECK(st.code() == COLLX_ERR_MISMATCH);
    TCHECK(buf[0] == 1.0f);
    const Status again = call(5000);
    TCHECK(again.ok());
    TCHECK(buf[4999] == 2.0f);
  });
}

TEST_CASE("CUDA IPC algorithms are named in profiles but cannot be forced for host memory") {
  CHECK(std::string(algo_name(Algo::kCudaIpcOneShot)) == "cuda_ipc_one_shot");
  CHECK(std::string(algo_name(Algo::kCudaIpcTwoShot)) == "cuda_ipc_two_shot");
  CHECK(std::string(algo_name(Algo::kCudaIpcFlags)) == "cuda_ipc_flags");
  CHECK(std::string(algo_name(Algo::kStaged)) == "staged");
  Algo a;
  CHECK(!algo_from_name("cuda_ipc_one_shot", &a));
  CHECK(!algo_from_name("staged", &a));
  CHECK(algo_from_name("shm_cma", &a));
  Config c = config_for("cuda_ipc_two_shot");
  Selection sel;
  CHECK(make_selection(c, 2, Locality{true, true}, &sel).code() == COLLX_ERR_CONFIG);
}

TEST_CASE("CUDA IPC: a rank whose GPU work fails ends the call on every rank at once") {
  for (bool two_shot : {false, true}) {
    for (bool in_copy : {false, true}) {
      if (in_copy && !two_shot) continue;  // the one-shot's only shared copy is its kernel
      Config cfg = config_for("auto");
      cfg.cuda_two_shot = two_shot ? 0 : SIZE_MAX;
      cfg.timeout_s = 60;  // a peer that waited for the deadline would take this long
      run_ranks(3, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
        Comm& c = *comms[0];
        Fakes f;
        f.attach(c);
        if (rank == 1) {
          f.setup = [in_copy](FakeDeviceIpc& d) { (in_copy ? d.fail_copy : d.fail_reduce) = true; };
        }
        std::vector<float> buf(3000, 1.0f);
        f.devs.device_memory(buf.data(), buf.size() * 4, 0);
        const double t0 = now_seconds();
        const Status st =
            c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_FLOAT32, COLLX_SUM));
        const double took = now_seconds() - t0;
        TCHECK(took < 10);
        if (rank == 1) {
          TCHECK(st.message() == (in_copy ? "fake copy failed" : "fake kernel launch failed"));
        } else {
          TCHECK(st.code() == COLLX_ERR_PEER_FAILED);
          TCHECK(st.message().find("rank 1's GPU work failed") != std::string::npos);
        }
        const Status next =
            c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_FLOAT32, COLLX_SUM));
        TCHECK(next.code() == COLLX_ERR_COMM_FAILED);
      });
    }
  }
}

TEST_CASE("CUDA IPC: the profile names the algorithms that ran and counts the caches") {
  const std::string path = "/tmp/collx_ipc_profile_" + std::to_string(getpid()) + ".json";
  Config cfg = config_for("auto");
  cfg.cuda_two_shot = 4096;
  cfg.profile = true;
  cfg.profile_file = path;
  run_ranks(3, {cfg}, [&](int, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    std::vector<float> buf(3000, 1.0f);
    f.devs.device_memory(buf.data(), buf.size() * 4, 0);
    for (size_t count : {size_t{100}, size_t{3000}, size_t{100}}) {
      const Status st =
          c.allreduce(device_op(c, buf.data(), buf.data(), count, COLLX_FLOAT32, COLLX_SUM));
      TCHECK(st.ok());
    }
    const Status st = c.shutdown();
    TCHECK(st.ok());
  });
  std::FILE* file = std::fopen(path.c_str(), "r");
  REQUIRE(file != nullptr);
  std::string json(1 << 16, '\0');
  json.resize(std::fread(json.data(), 1, json.size(), file));
  std::fclose(file);
  std::remove(path.c_str());
  CHECK(json.find("\"cuda_ipc_one_shot\"") != std::string::npos);
  CHECK(json.find("\"cuda_ipc_two_shot\"") != std::string::npos);
  // One allocation per rank, exported once and opened once by each of the two peers.
  CHECK(json.find("\"ipc_opens\": 6,") != std::string::npos);
  CHECK(json.find("\"ipc_exports\": 3}") != std::string::npos);
  CHECK(json.find("\"ipc_closes\": 0,") != std::string::npos);
}

TEST_CASE("CUDA IPC: non-blocking, on the communicator's thread, interleaved with host calls") {
  Config cfg = config_for("auto");
  cfg.cuda_two_shot = 8192;
  run_ranks(3, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    constexpr int kOps = 6;
    std::vector<std::vector<int64_t>> bufs(kOps);
    std::vector<Request*> reqs(kOps, nullptr);
    for (int k = 0; k < kOps; ++k) {
      const size_t count = 300u * (k + 1) * (k + 1);  // one-shot and two-shot sizes
      bufs[k].assign(count, 0);
      fill_input(COLLX_INT64, COLLX_SUM, rank, count, bufs[k].data());
      if (k % 2 == 0) f.devs.device_memory(bufs[k].data(), count * 8, 0);
      const AllreduceOp o = device_op(c, bufs[k].data(), bufs[k].data(), count, COLLX_INT64,
                                      COLLX_SUM);
      TCHECK((o.mem == MemKind::kDevice) == (k % 2 == 0));
      const Status st = c.iallreduce(o, &reqs[k]);
      TCHECK(st.ok());
    }
    c.drain();
    for (int k = 0; k < kOps; ++k) {
      TCHECK(reqs[k]->result.ok());
      std::vector<int64_t> want(bufs[k].size());
      fill_expected(COLLX_INT64, COLLX_SUM, 3, want.size(), want.data());
      TCHECK(bufs[k] == want);
      delete reqs[k];
    }
    TCHECK(f.copiers_made == 0);
    TCHECK(f.ipc != nullptr);
  });
}
