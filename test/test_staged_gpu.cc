// staged_gpu (algo/staged_gpu.cc) through the communicator, without a GPU: the ranks are
// threads sharing a heap "segment", the fake device (common/fake_device_ipc.h) runs its copies
// and kernels only when its stream is synchronized, and each rank poisons its buffers as soon
// as its call returns. A slot overwritten while a peer's kernel may still read it shows up as
// a wrong result (or, under ThreadSanitizer, as a race); a copy into host memory that was not
// registered is counted.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/device_matrix.h"
#include "common/fake_device_ipc.h"
#include "common/inproc.h"

using namespace collx;
using namespace collx::test;

namespace {

// Device buffers of at least `min` bytes take staged_gpu (CUDA IPC never runs: its sizes are
// out of reach), in chunks of 4K.
Config staged_gpu_config(size_t min = 0) {
  Config c = config_for("auto", 4096);
  c.cuda_ipc_min = c.cuda_ipc_min_timesliced = SIZE_MAX;
  c.cuda_staged_gpu_min = min;
  return c;
}

std::vector<int32_t> int_buffer(Fakes& f, int rank) {
  std::vector<int32_t> buf(3000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = rank + 1 + static_cast<int32_t>(i);
  f.devs.device_memory(buf.data(), buf.size() * 4, 0);
  return buf;
}

// The sum over p ranks of int_buffer's element i.
int32_t int_sum(int p, size_t i) { return p * (p + 1) / 2 + p * static_cast<int32_t>(i); }

}  // namespace

TEST_CASE("staged_gpu: over 2, 3 and 5 ranks, every dtype x op, in place, in chunks") {
  for (int p : {2, 3, 5}) {
    DeviceMatrix m(p);
    run_ranks(p, {staged_gpu_config()}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.attach(c);
      int calls = 0;
      const std::string first = run_device_matrix(m, c, f.devs, 0, rank, [&] {
        if (c.last_algo() == Algo::kStaged) return std::string();  // count 0: nothing to do
        ++calls;
        if (c.last_algo() != Algo::kStagedGpu) return std::string("not staged_gpu");
        if (!f.ipc->queued.empty()) return std::string("GPU work left queued");
        if (f.ipc->unmapped_copies != 0) return std::string("a copy to unregistered memory");
        return std::string();
      });
      TCHECK(first == "");
      TCHECK(calls > 0);
      TCHECK(f.copiers_made == 0);  // never staged through the host algorithms
      TCHECK(f.ipc_made == 1);      // one device object, kept across calls
      TCHECK(f.ipc->mapped.size() == 1);  // the slots, registered once
      // 5003 float64 elements are 10 chunks of 4K: more copies than calls.
      TCHECK(f.ipc->copies_to_host > calls);
    });
  }
}

TEST_CASE("staged_gpu: only from its size; where any rank cannot take part, all stage") {
  struct Case {
    const char* what;
    int spoiled;  // the rank that cannot take part, or -1
    bool no_device;  // its device object cannot be made (else its registration fails)
    bool no_memory = false;  // with no_device: its factory throws, as no memory does
  };
  for (const Case k : {Case{"every rank can", -1, false}, Case{"a registration fails", 2, false},
                       Case{"no device object", 0, true},
                       Case{"no memory for the device object", 1, true, true}}) {
    INFO(k.what);
    run_ranks(3, {staged_gpu_config(8192)}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.attach(c);
      if (rank == k.spoiled) {
        if (k.no_memory) {
          device_object_without_memory(c);
        } else if (k.no_device) {
          c.set_ipc_factory([](int, std::unique_ptr<DeviceIpc>*) {
            return error(COLLX_ERR_UNSUPPORTED, "no device object here");
          });
        } else {
          f.setup = [](FakeDeviceIpc& d) { d.fail_map = true; };
        }
      }
      std::vector<int32_t> buf = int_buffer(f, rank);
      // 2000 elements (8000 bytes) are below the size: staged; 3000 from it.
      for (size_t count : {size_t{2000}, size_t{3000}, size_t{3000}}) {
        std::vector<int32_t> out(count, -1);
        f.devs.device_memory(out.data(), out.size() * 4, 0);
        const Status st =
            c.allreduce(device_op(c, buf.data(), out.data(), count, COLLX_INT32, COLLX_SUM));
        TCHECK(st.message() == "");
        TCHECK(out[0] == int_sum(3, 0));
        TCHECK(out[count - 1] == int_sum(3, count - 1));
        const bool gpu = count == 3000 && k.spoiled < 0;
        TCHECK(c.last_algo() == (gpu ? Algo::kStagedGpu : Algo::kStaged));
      }
      TCHECK(f.copiers_made == 1);  // the host staging of 2000 elements (and of all, spoiled)
      // The device object is made once, on the first call from the size, even where it fails.
      TCHECK(f.ipc_made == (rank == k.spoiled && k.no_device ? 0 : 1));
    });
  }
}

TEST_CASE("staged_gpu: not where ranks share a GPU without MPS (kernels would wait for slices)") {
  struct Case {
    const char* what;
    bool mps;
    bool one_gpu;
    bool gpu_path;
  };
  for (const Case k : {Case{"one GPU, no MPS", false, true, false},
                       Case{"one GPU, MPS", true, true, true},
                       Case{"a GPU each, no MPS", false, false, true}}) {
    INFO(k.what);
    run_ranks(3, {staged_gpu_config()}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.attach(c, k.one_gpu ? 7 : static_cast<uint8_t>(rank));
      f.setup = [&](FakeDeviceIpc& d) { d.on_mps = k.mps; };
      std::vector<int32_t> buf = int_buffer(f, rank);
      const Status st =
          c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM));
      TCHECK(st.message() == "");
      TCHECK(buf[2999] == int_sum(3, 2999));
      TCHECK(c.last_algo() == (k.gpu_path ? Algo::kStagedGpu : Algo::kStaged));
    });
  }
}

TEST_CASE("staged_gpu: only on one node: ranks on two nodes stage through the host algorithms") {
  run_ranks(
      4, {staged_gpu_config()},
      [&](int rank, std::vector<Comm*>& comms) {
        Comm& c = *comms[0];
        Fakes f;
        f.attach(c);
        std::vector<int32_t> buf = int_buffer(f, rank);
        const Status st =
            c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM));
        TCHECK(st.message() == "");
        TCHECK(buf[0] == int_sum(4, 0));
        TCHECK(buf[2999] == int_sum(4, 2999));
        TCHECK(c.last_algo() == Algo::kStaged);
        TCHECK(f.ipc_made == 0);
      },
      true, {0, 0, 1, 1});
}

TEST_CASE("staged_gpu: COLLX_CUDA=0 stages through the host algorithms; the stream is waited for") {
  Config off = staged_gpu_config();
  off.cuda_ipc = false;
  run_ranks(2, {off, staged_gpu_config()}, [&](int rank, std::vector<Comm*>& comms) {
    Fakes f[2];
    for (int k = 0; k < 2; ++k) {
      Comm& c = *comms[k];
      f[k].attach(c);
      std::vector<int32_t> buf = int_buffer(f[k], rank);
      AllreduceOp o = device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM);
      o.on_stream = true;
      o.stream = reinterpret_cast<void*>(uintptr_t{0x5150} + rank);
      const Status st = c.allreduce(o);  // not inside TCHECK: that holds a lock the peers need
      TCHECK(st.message() == "");
      TCHECK(buf[2999] == int_sum(2, 2999));
      TCHECK(c.last_algo() == (k == 1 ? Algo::kStagedGpu : Algo::kStaged));
      TCHECK(f[k].copiers_made == (k == 1 ? 0 : 1));
      if (k == 1) TCHECK(f[k].ipc->streams == std::vector<void*>{o.stream});
    }
  });
}

TEST_CASE("staged_gpu: ranks that disagree on the count all stop with a mismatch") {
  run_ranks(3, {staged_gpu_config()}, [&](int rank, std::vector<Comm*>& comms) {
    Comm& c = *comms[0];
    Fakes f;
    f.attach(c);
    std::vector<int32_t> buf = int_buffer(f, rank);
    const size_t count = rank == 1 ? 2999 : 3000;
    const Status st =
        c.allreduce(device_op(c, buf.data(), buf.data(), count, COLLX_INT32, COLLX_SUM));
    TCHECK(st.code() == COLLX_ERR_MISMATCH);
  });
}

TEST_CASE("staged_gpu: a rank whose GPU work fails ends the call on every rank at once") {
  for (bool in_copy : {false, true}) {
    Config cfg = staged_gpu_config();
    cfg.timeout_s = 60;  // a peer that waited for the deadline would take this long
    run_ranks(3, {cfg}, [&](int rank, std::vector<Comm*>& comms) {
      Comm& c = *comms[0];
      Fakes f;
      f.attach(c);
      if (rank == 1) {
        // The kernel of the first chunk, or the copy of the second (the first copy's failure
        // is a vote: every rank would stage instead).
        f.setup = [in_copy](FakeDeviceIpc& d) {
          in_copy ? d.fail_host_copy_at = 1 : d.fail_reduce = true;
        };
      }
      std::vector<int32_t> buf = int_buffer(f, rank);
      const double t0 = now_seconds();
      const Status st =
          c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM));
      TCHECK(now_seconds() - t0 < 10);
      if (rank == 1) {
        TCHECK(st.message() == (in_copy ? "fake copy failed" : "fake kernel launch failed"));
      } else {
        TCHECK(st.code() == COLLX_ERR_PEER_FAILED);
        TCHECK(st.message().find("rank 1's GPU work failed") != std::string::npos);
      }
      TCHECK(f.ipc->queued.empty());  // nothing left to touch the buffers
      const Status next =
          c.allreduce(device_op(c, buf.data(), buf.data(), buf.size(), COLLX_INT32, COLLX_SUM));
      TCHECK(next.code() == COLLX_ERR_COMM_FAILED);
    });
  }
}

TEST_CASE("staged_gpu is named in profiles but cannot be forced for host memory") {
  CHECK(std::string(algo_name(Algo::kStagedGpu)) == "staged_gpu");
  Algo a;
  CHECK(!algo_from_name("staged_gpu", &a));
}
