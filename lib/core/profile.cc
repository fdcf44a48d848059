#include "core/profile.h"

#include "api/status.h"

namespace collx {

namespace {

std::string algo_list(int64_t mask, const char* sep) {
  std::string s;
  for (int i = 0; i < static_cast<int>(Algo::kCount); ++i) {
    if ((mask >> i & 1) == 0) continue;
    if (!s.empty()) s += sep;
    s += algo_name(static_cast<Algo>(i));
  }
  return s;
}

// Bus bandwidth as nccl-tests defines it: algbw * 2(p-1)/p, over the mean time per call.
double busbw_gbs(const ProfileBucket& b, int ranks) {
  if (b.total_ns == 0 || b.calls == 0) return 0;
  const double mean_s = static_cast<double>(b.total_ns) / ranks / static_cast<double>(b.calls) * 1e-9;
  const double bytes = static_cast<double>(b.bytes) / ranks / static_cast<double>(b.calls);
  return bytes / mean_s * 2.0 * (ranks - 1) / ranks / 1e9;
}

std::string range(int b) {
  if (b == 0) return "0";
  auto size = [](uint64_t v) {
    if (v >= (1ull << 30)) return std::to_string(v >> 30) + "G";
    if (v >= (1ull << 20)) return std::to_string(v >> 20) + "M";
    if (v >= (1ull << 10)) return std::to_string(v >> 10) + "K";
    return std::to_string(v);
  };
  return size(1ull << (b - 1)) + "-" + size(1ull << b);
}

}  // namespace

std::string Profile::table(int ranks) const {
  std::string s = format("# libcollx allreduce profile, %d ranks (times per rank and call)\n", ranks);
  s += format("# %-11s %10s %12s %10s %10s %10s %14s %9s  %s\n", "bytes", "calls", "total(ms)",
              "min(us)", "mean(us)", "max(us)", "bytes(total)", "busbw", "algorithms");
  for (int b = 0; b < kBuckets; ++b) {
    const ProfileBucket& k = buckets_[b];
    if (k.calls == 0) continue;
    const double per_rank_calls = static_cast<double>(k.calls) / ranks;
    const std::string across =
        k.across ? format(" (across nodes: %s)", algo_list(k.across, ",").c_str()) : "";
    s += format("  %-11s %10.0f %12.3f %10.2f %10.2f %10.2f %14lld %9.2f  %s%s\n", range(b).c_str(),
                per_rank_calls, static_cast<double>(k.total_ns) / ranks * 1e-6, k.min_ns * 1e-3,
                static_cast<double>(k.total_ns) / static_cast<double>(k.calls) * 1e-3,
                k.max_ns * 1e-3, static_cast<long long>(k.bytes / ranks), busbw_gbs(k, ranks),
                algo_list(k.algos, ",").c_str(), across.c_str());
  }
  const CacheCounts& c = caches;
  const int64_t lookups = c.pointer_hits + c.pointer_misses, maps = c.ipc_hits + c.ipc_opens;
  s += format("# caches (all ranks): pointer cache %lld hits, %lld misses (%.1f%% hits); IPC "
              "registration cache %lld hits, %lld opens, %lld closes (%.1f%% hits); %lld IPC "
              "handles exported\n",
              static_cast<long long>(c.pointer_hits), static_cast<long long>(c.pointer_misses),
              lookups ? 100.0 * static_cast<double>(c.pointer_hits) / static_cast<double>(lookups) : 0.0,
              static_cast<long long>(c.ipc_hits), static_cast<long long>(c.ipc_opens),
              static_cast<long long>(c.ipc_closes),
              maps ? 100.0 * static_cast<double>(c.ipc_hits) / static_cast<double>(maps) : 0.0,
              static_cast<long long>(c.ipc_exports));
  return s;
}

std::string Profile::json(int ranks) const {
  std::string s = format("{\"ranks\": %d, \"buckets\": [", ranks);
  bool first = true;
  for (int b = 0; b < kBuckets; ++b) {
    const ProfileBucket& k = buckets_[b];
    if (k.calls == 0) continue;
    const std::string across =
        k.across ? format("\"%s\"", algo_list(k.across, "\", \"").c_str()) : "";
    s += format(
        "%s\n  {\"bytes_lo\": %llu, \"bytes_hi\": %llu, \"calls\": %lld, \"total_ns\": %lld, "
        "\"min_ns\": %lld, \"mean_ns\": %.1f, \"max_ns\": %lld, \"bytes\": %lld, "
        "\"busbw_gbs\": %.4f, \"algorithms\": [\"%s\"], \"across\": [%s]}",
        first ? "" : ",", b == 0 ? 0ull : 1ull << (b - 1), b == 0 ? 1ull : 1ull << b,
        static_cast<long long>(k.calls / ranks), static_cast<long long>(k.total_ns / ranks),
        static_cast<long long>(k.min_ns),
        static_cast<double>(k.total_ns) / static_cast<double>(k.calls),
        static_cast<long long>(k.max_ns), static_cast<long long>(k.bytes / ranks),
        busbw_gbs(k, ranks), algo_list(k.algos, "\", \"").c_str(), across.c_str());
    first = false;
  }
  const CacheCounts& c = caches;
  s += format("\n], \"caches\": {\"pointer_hits\": %lld, \"pointer_misses\": %lld, "
              "\"ipc_hits\": %lld, \"ipc_opens\": %lld, \"ipc_closes\": %lld, "
              "\"ipc_exports\": %lld}}\n",
              static_cast<long long>(c.pointer_hits), static_cast<long long>(c.pointer_misses),
              static_cast<long long>(c.ipc_hits), static_cast<long long>(c.ipc_opens),
              static_cast<long long>(c.ipc_closes), static_cast<long long>(c.ipc_exports));
  return s;
}

}  // namespace collx
