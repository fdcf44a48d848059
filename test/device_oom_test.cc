// Memory that runs out on the device-buffer paths, without a GPU: the fakes of the device tests
// (common/fake_device_ipc.h; ranks are threads, "device" memory is ordinary memory), and one
// rank's k-th allocation inside its calls failing (common/failing_new.h), for k = 0, 1, ...
// until its calls make no k-th allocation. Each path's first call makes what later calls keep
// (the device object, the IPC registration cache, the exported handles, the pointer cache's
// entries, the scratch space), so its failures are the ones that matter: where the rank
// finds no memory for its own part, it votes no and every rank stages the call, so that no
// rank waits for it to its deadline. Every call must succeed with the exact result, or (on
// that rank) fail with COLLX_ERR_NO_MEMORY; no peer's call may fail; nothing leaks. The fakes
// stand for the CUDA driver, which does not allocate from the C++ heap: their allocations are
// never failed. Host staging runs once before the counted calls (its copier, its chunk
// collectives), so that a rank that votes no stages on memory it already holds.
#include <catch2/catch.hpp>

#include <atomic>
#include <barrier>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "common/failing_new.h"
#include "common/fake_device_ipc.h"
#include "common/inproc.h"

using namespace collx;
using namespace collx::test;

namespace {

// Allocations made in this scope are never failed.
struct Exempt {
  bool was = t_exempt;
  Exempt() { t_exempt = true; }
  ~Exempt() { t_exempt = was; }
};

// A call forwarded to the fake, its allocations exempt.
#define FORWARD(call) \
  {                   \
    Exempt e;         \
    return d->call;   \
  }

// A fake device object or copier whose own allocations are exempt.
template <typename Interface>
struct Wrapped : Interface {
  std::unique_ptr<Interface> d;
  explicit Wrapped(std::unique_ptr<Interface> fake) : d(std::move(fake)) {}
  ~Wrapped() override {
    Exempt e;
    d.reset();
  }
};

struct ExemptDevice : Wrapped<DeviceIpc> {
  using Wrapped::Wrapped;
  DeviceUuid uuid() const override FORWARD(uuid())
  bool can_reach(const DeviceUuid& q) override FORWARD(can_reach(q))
  bool mps() const override FORWARD(mps())
  Status export_handle(const void* b, IpcHandle* h) override FORWARD(export_handle(b, h))
  Status open(int q, const IpcHandle& h, void** b) override FORWARD(open(q, h, b))
  void close(void* b) override FORWARD(close(b))
  Status scratch(size_t n, void** out) override FORWARD(scratch(n, out))
  Status wait_stream(void* s) override FORWARD(wait_stream(s))
  Status reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t t,
                collx_op_t op, int ranks) override FORWARD(reduce(dst, in, n, count, t, op, ranks))
  Status copy(void* dst, const void* src, size_t n) override FORWARD(copy(dst, src, n))
  Status map_host(void* h, size_t n, void** dev) override FORWARD(map_host(h, n, dev))
  Status copy_to_host(void* h, const void* s, size_t n) override FORWARD(copy_to_host(h, s, n))
  Status synchronize() override FORWARD(synchronize())
  Status flag_area(size_t max, void** out) override FORWARD(flag_area(max, out))
  Status allreduce_flags(const FlagsCall& c, int* w) override FORWARD(allreduce_flags(c, w))
};

struct ExemptCopier : Wrapped<DeviceCopier> {
  using Wrapped::Wrapped;
  Status reserve(size_t n) override FORWARD(reserve(n))
  uint8_t* slot(int s) override FORWARD(slot(s))
  Status copy_in(int s, const void* src, size_t n) override FORWARD(copy_in(s, src, n))
  Status copy_out(void* dst, int s, size_t n) override FORWARD(copy_out(dst, s, n))
  Status wait_in(int s) override FORWARD(wait_in(s))
  Status wait_out(int s) override FORWARD(wait_out(s))
  Status after_stream(void* s) override FORWARD(after_stream(s))
};

// A factory whose fake is made with its allocations exempt, and wrapped by the library's
// allocation (the real factories' new).
template <typename W, typename Interface>
auto exempt_factory(Fakes& f, Status (Fakes::*make)(std::unique_ptr<Interface>*)) {
  return [&f, make](int, std::unique_ptr<Interface>* out) {
    std::unique_ptr<Interface> fake;
    {
      Exempt e;
      COLLX_TRY((f.*make)(&fake));
    }
    *out = std::make_unique<W>(std::move(fake));
    return Status();
  };
}

constexpr int kRanks = 3;  // on one node

struct Path {
  const char* name;
  Algo algo;       // what the counted calls run where no rank votes no
  size_t count;    // int32 elements of the counted calls
  Config config;
};

// 3 ranks on one node, 4K chunks: 200 elements (800 bytes) are staged, the counted calls
// take the path.
std::vector<Path> paths() {
  Config base = config_for("auto", 4096);
  base.timeout_s = 1;  // a peer left waiting shows up as COLLX_ERR_TIMEOUT
  base.cuda_ipc_min = base.cuda_ipc_min_timesliced = 2000;
  Config one_shot = base, two_shot = base, flags = base, staged_gpu = base;
  one_shot.cuda_two_shot = SIZE_MAX;
  two_shot.cuda_two_shot = 0;
  flags.cuda_flags_max = 400;
  staged_gpu.cuda_ipc_min = staged_gpu.cuda_ipc_min_timesliced = SIZE_MAX;
  staged_gpu.cuda_staged_gpu_min = 2000;
  return {{"cuda_ipc_one_shot", Algo::kCudaIpcOneShot, 1000, one_shot},
          {"cuda_ipc_two_shot", Algo::kCudaIpcTwoShot, 3000, two_shot},
          {"cuda_ipc_flags", Algo::kCudaIpcFlags, 50, flags},
          {"staged_gpu", Algo::kStagedGpu, 3000, staged_gpu}};
}

// What went wrong in one run, in memory that needs no allocation (the failing rank writes it
// while its allocations may fail, and the leak check counts every live allocation).
struct Problems {
  std::mutex m;
  char text[16][300];
  int n = 0;
  void add(int rank, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    std::lock_guard<std::mutex> g(m);
    if (n == 16) return;
    const int at = std::snprintf(text[n], sizeof text[n], "rank %d: ", rank);
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text[n] + at, sizeof text[n] - static_cast<size_t>(at), fmt, args);
    va_end(args);
    ++n;
  }
};

// One rank's calls in one run: a staged warm-up, then three calls on the path (out of place
// twice, in place), its allocations counted if it is the failing rank.
void rank_calls(const Path& path, Comm& c, int rank, bool counted, long k, long in_a_row,
                Problems& found) {
  Fakes f;
  f.attach(c);
  c.set_ipc_factory(exempt_factory<ExemptDevice>(f, &Fakes::make_ipc));
  c.set_copier_factory(exempt_factory<ExemptCopier>(f, &Fakes::make_copier));
  std::vector<int32_t> warm(200, rank), in(path.count), out(path.count);
  auto input = [&] {
    for (size_t i = 0; i < in.size(); ++i) in[i] = rank + 1 + static_cast<int32_t>(i);
  };
  input();
  f.devs.device_memory(warm.data(), warm.size() * 4, 0);
  f.devs.device_memory(in.data(), in.size() * 4, 0);
  f.devs.device_memory(out.data(), out.size() * 4, 0);
  // As collx_allreduce: the operation made (its buffers classified: the pointer cache's
  // entries), an exception there its status, then the call.
  auto allreduce = [&](const void* send, void* recv, size_t count) {
    AllreduceOp op;
    try {
      COLLX_TRY(make_device_op(c, send, recv, count, COLLX_INT32, COLLX_SUM, &op));
    } catch (...) {
      return exception_status("collx_allreduce");
    }
    return c.allreduce(op);
  };
  Status st = allreduce(warm.data(), warm.data(), warm.size());
  if (!st.ok() || c.last_algo() != Algo::kStaged) {
    found.add(rank, "the staged warm-up: %s, %s", st.message().c_str(), algo_name(c.last_algo()));
  }

  if (counted) {
    t_exempt = false;
    fail_from(k, in_a_row);
    g_seen = 0;
    g_inside = true;
  }
  for (int call = 0; call < 3; ++call) {
    const bool in_place = call == 2;
    std::fill(out.begin(), out.end(), -1);
    int32_t* result = in_place ? in.data() : out.data();
    st = allreduce(in.data(), result, path.count);
    if (!st.ok()) {
      if (counted && st.code() != COLLX_ERR_NO_MEMORY) {
        found.add(rank, "call %d: its first error is not the allocation's: %s", call,
                  st.message().c_str());
      } else if (!counted) {
        found.add(rank, "call %d: a peer's failure reached this rank: %s", call,
                  st.message().c_str());
      }
      break;  // the communicator may be unusable now: the rank's calls end
    }
    if (k < 0 && c.last_algo() != path.algo) {
      found.add(rank, "call %d ran %s", call, algo_name(c.last_algo()));
    }
    for (size_t i = 0; i < path.count; ++i) {
      const int32_t want = kRanks * (kRanks + 1) / 2 + kRanks * static_cast<int32_t>(i);
      if (result[i] != want) {
        found.add(rank, "call %d: element %zu is %d, not %d", call, i, result[i], want);
        break;
      }
    }
    input();
  }
  if (counted) {
    g_inside = false;
    t_exempt = true;
    fail_none();
  }
}

// One run: 3 ranks; rank `failing`'s counted allocations from the k-th fail, `in_a_row` of
// them (k < 0: none). Returns whether rank `failing` reached a k-th allocation; adds what went
// wrong to *problems.
bool run(const Path& path, int failing, long k, long in_a_row,
         std::vector<std::string>* problems) {
  Problems found;
  std::barrier<> done(kRanks);
  const long live_before = g_live.load();
  run_ranks(kRanks, {path.config}, [&](int rank, std::vector<Comm*>& comms) {
    t_exempt = true;  // but for the failing rank's counted calls
    rank_calls(path, *comms[0], rank, rank == failing, k, in_a_row, found);
    done.arrive_and_wait();  // every rank's calls have ended before any communicator closes
  });
  const long leaked = g_live.load() - live_before;
  if (leaked != 0) found.add(failing, "%ld allocations not freed", leaked);
  for (int i = 0; i < found.n; ++i) {
    problems->push_back(std::string(path.name) + ", rank " + std::to_string(failing) +
                        " failing, k=" + std::to_string(k) + " (" + std::to_string(in_a_row) +
                        " in a row): " + found.text[i]);
  }
  return g_seen.load() > k;
}

}  // namespace

TEST_CASE("device paths, out of memory: a rank without memory votes no, none waits for it") {
  for (const Path& path : paths()) {
    std::vector<std::string> problems;
    std::vector<std::string> first;
    run(path, -1, -1, 1, &first);  // the statics the calls make (their first use), not leaks
    run(path, -1, -1, 1, &problems);  // without failures: the path runs
    for (int failing = 0; failing < kRanks; ++failing) {
      for (long in_a_row : {1, 4}) {
        long k = 0;
        while (run(path, failing, k, in_a_row, &problems) && k < 10000) ++k;
        INFO(path.name << ", rank " << failing << " failing: " << k << " allocations counted");
        CHECK(k > 0);
        if (in_a_row == 1) std::printf("%s, rank %d: %ld allocations\n", path.name, failing, k);
      }
    }
    for (const std::string& s : problems) UNSCOPED_INFO(s);
    CHECK(problems.empty());
  }
}
