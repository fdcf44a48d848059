// What the two CPUs that the 2-rank benchmark runs on share, measured from inside the machine
// (a VM's lscpu shows its virtual topology, not where the host put the vCPUs):
//
//   round trip  one cache line passed from CPU a to CPU b and back (ns, median of batches):
//               tens of ns between the two hardware threads of one core, more between cores;
//   copy        memcpy bandwidth of one thread alone, then of both threads copying at the same
//               time (what the two-shot's ranks do): about the same when each CPU has a core of
//               its own, about half each when the two share one core;
//   handover    a buffer passed back and forth (GB/s, medians of rounds): CPU b copies out
//               what CPU a has just written (read, what a two-shot rank does with a slice its
//               peer reduced), then CPU a copies new data over what b has just read (rewrite,
//               what a rank does when it reuses a slot or result area its peer read). A
//               rewrite must first take the lines from the peer's cache; in the VM's slow
//               phases that costs far more than the read.
//
// One line on stdout, starting with '#', so that a benchmark output that includes it still
// parses (tools/median-table skips it). Usage: cpu_pair_probe [cpu_a cpu_b] (default 0 1).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median over batches of one cache line's round trip between the two threads.
double round_trip_ns(int cpu_a, int cpu_b) {
  constexpr int kBatches = 9;
  constexpr uint64_t kTrips = 100000;
  alignas(64) static std::atomic<uint64_t> line{0};
  std::thread b([&] {
    pin(cpu_b);
    for (uint64_t i = 1; i <= kBatches * kTrips; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i - 1) {
      }
      line.store(2 * i, std::memory_order_release);
    }
  });
  pin(cpu_a);
  std::vector<double> ns;
  uint64_t i = 1;
  for (int batch = 0; batch < kBatches; ++batch) {
    const auto t0 = Clock::now();
    for (uint64_t k = 0; k < kTrips; ++k, ++i) {
      line.store(2 * i - 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * i) {
      }
    }
    ns.push_back(seconds_since(t0) * 1e9 / kTrips);
  }
  b.join();
  return median(ns);
}

// GB/s (bytes copied per second) of `bytes`-sized memcpy between two private buffers, copied
// over and over for a fixed time: by one thread alone, then by two threads over the same time
// window (each counts what it copied until the window closes, so both ran all of it).
struct CopyResult {
  double alone, both_a, both_b;
};

constexpr auto kWindow = std::chrono::milliseconds(100);

// Both buffers page-aligned: glibc's memcpy is many times slower on some CPUs where the
// destination lies a few bytes past the source modulo a page (lib/memory/host_copy.h).
struct Copier {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  size_t bytes;
  std::unique_ptr<char, Free> src, dst;
  explicit Copier(size_t n)
      : bytes(n),
        src(static_cast<char*>(std::aligned_alloc(4096, n))),
        dst(static_cast<char*>(std::aligned_alloc(4096, n))) {
    std::memset(src.get(), 1, n);
    std::memset(dst.get(), 2, n);
  }
  // Copies from when `go` turns true until `stop` does; returns GB/s.
  double run(const std::atomic<bool>& go, const std::atomic<bool>& stop) {
    while (!go.load(std::memory_order_acquire)) {
    }
    const auto t0 = Clock::now();
    size_t copies = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      std::memcpy(dst.get(), src.get(), bytes);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      ++copies;
    }
    return static_cast<double>(bytes) * copies / seconds_since(t0) / 1e9;
  }
};

double copy_window(Copier& a, Copier* b, int cpu_a, int cpu_b, double* rate_b) {
  std::atomic<bool> go{false}, stop{false};
  double ra = 0;
  std::thread ta([&] {
    pin(cpu_a);
    ra = a.run(go, stop);
  });
  std::thread tb;
  if (b) {
    tb = std::thread([&] {
      pin(cpu_b);
      *rate_b = b->run(go, stop);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // both pinned and waiting
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(kWindow);
  stop.store(true);
  ta.join();
  if (b) tb.join();
  return ra;
}

// Medians over alternating windows: a alone, then a and b at once.
CopyResult copy_rates(int cpu_a, int cpu_b, size_t bytes) {
  constexpr int kWindows = 5;
  Copier a(bytes), b(bytes);
  std::vector<double> alone, both_a, both_b;
  for (int w = 0; w < kWindows; ++w) {
    double rb = 0;
    alone.push_back(copy_window(a, nullptr, cpu_a, cpu_b, nullptr));
    both_a.push_back(copy_window(a, &b, cpu_a, cpu_b, &rb));
    both_b.push_back(rb);
  }
  return {median(alone), median(both_a), median(both_b)};
}

// GB/s of CPU b's memcpy of `bytes` that CPU a wrote just before (read), and of CPU a's
// memcpy over the bytes that b read just before (rewrite): a copies in from a private
// buffer, then b copies out to its own, kRounds times.
struct Handover {
  double read, rewrite;
};

Handover handover_rates(int cpu_a, int cpu_b, size_t bytes) {
  constexpr int kRounds = 201;
  Copier shared(bytes), a_src(bytes), b_dst(bytes);
  std::atomic<int> turn{0};  // 2k: a writes round k; 2k+1: b reads it
  std::vector<double> reads, rewrites;
  std::thread b([&] {
    pin(cpu_b);
    for (int k = 0; k < kRounds; ++k) {
      while (turn.load(std::memory_order_acquire) != 2 * k + 1) {
      }
      const auto t0 = Clock::now();
      std::memcpy(b_dst.dst.get(), shared.dst.get(), bytes);
      reads.push_back(static_cast<double>(bytes) / seconds_since(t0) / 1e9);
      turn.store(2 * k + 2, std::memory_order_release);
    }
  });
  pin(cpu_a);
  for (int k = 0; k < kRounds; ++k) {
    while (turn.load(std::memory_order_acquire) != 2 * k) {
    }
    const auto t0 = Clock::now();
    std::memcpy(shared.dst.get(), a_src.src.get(), bytes);
    if (k > 0) rewrites.push_back(static_cast<double>(bytes) / seconds_since(t0) / 1e9);
    turn.store(2 * k + 1, std::memory_order_release);
  }
  b.join();
  return {median(reads), median(rewrites)};
}

}  // namespace

int main(int argc, char** argv) {
  int cpu_a = 0, cpu_b = 1;
  if (argc == 3) {
    cpu_a = std::atoi(argv[1]);
    cpu_b = std::atoi(argv[2]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [cpu_a cpu_b]\n", argv[0]);
    return 2;
  }
  if (cpu_a == cpu_b || !pin(cpu_b) || !pin(cpu_a)) {
    std::printf("# cpu pair probe: CPUs %d and %d are not two CPUs this process may use\n", cpu_a,
                cpu_b);
    return 0;
  }
  const double rt = round_trip_ns(cpu_a, cpu_b);
  std::printf("# cpu pair probe, CPUs %d,%d: cache-line round trip %.0f ns; memcpy GB/s alone / "
              "both at once:", cpu_a, cpu_b, rt);
  const char* sep = "";
  const struct {
    const char* name;
    size_t bytes;
  } sizes[] = {{"16 KiB", 16 << 10}, {"256 KiB", 256 << 10}, {"16 MiB", 16 << 20}};
  for (const auto& size : sizes) {
    const CopyResult r = copy_rates(cpu_a, cpu_b, size.bytes);
    std::printf("%s %s %.1f / %.1f + %.1f", sep, size.name, r.alone, r.both_a, r.both_b);
    sep = ",";
  }
  std::printf("; handover GB/s read / rewrite:");
  sep = "";
  for (const auto& size : {sizes[0], sizes[1]}) {
    const Handover h = handover_rates(cpu_a, cpu_b, size.bytes);
    std::printf("%s %s %.1f / %.1f", sep, size.name, h.read, h.rewrite);
    sep = ",";
  }
  std::printf("\n");
  return 0;
}
