#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "select/select.h"

using namespace collx;

namespace {
Status load(std::vector<std::string> vars, Config* c) {
  std::vector<char*> env;
  for (std::string& v : vars) env.push_back(v.data());
  env.push_back(nullptr);
  return load_config(c, env.data());
}
}  // namespace

TEST_CASE("parse_bytes") {
  size_t v = 0;
  CHECK((parse_bytes("0", &v) && v == 0));
  CHECK((parse_bytes("4096", &v) && v == 4096));
  CHECK((parse_bytes("4K", &v) && v == 4096));
  CHECK((parse_bytes("512k", &v) && v == 512 * 1024));
  CHECK((parse_bytes("16M", &v) && v == 16u << 20));
  CHECK((parse_bytes("2G", &v) && v == 2ull << 30));
  for (const char* bad : {"", "K", "-1", "1.5K", "4KB", "12x", "99999999999999999999", "17179869184G"}) {
    INFO(bad);
    CHECK_FALSE(parse_bytes(bad, &v));
  }
}

TEST_CASE("configuration: defaults, values, and errors that name the variable") {
  Config c;
  REQUIRE(load({"PATH=/bin", "HOME=/root"}, &c).ok());
  CHECK(c.timeout_s == 300);
  CHECK(c.algo == "auto");
  CHECK(c.tune.empty());
  CHECK(c.ring_segment == 256 << 10);

  CHECK(c.cuda_two_shot == 2 << 20);
  CHECK(c.cuda_ipc_min == 16 << 10);
  CHECK(c.cuda_ipc_min_timesliced == 2 << 20);
  CHECK(c.cuda_flags_max == 2 << 20);
  CHECK(c.cuda_staged_gpu_min == SIZE_MAX);  // off
  REQUIRE(load({"COLLX_CUDA_STAGED_GPU_MIN=1M"}, &c).ok());
  CHECK(c.cuda_staged_gpu_min == 1 << 20);
  REQUIRE(load({"COLLX_CUDA_STAGED_GPU_MIN=off"}, &c).ok());
  CHECK(c.cuda_staged_gpu_min == SIZE_MAX);
  REQUIRE(load({"COLLX_CUDA_STAGED_GPU_MIN=0"}, &c).ok());
  CHECK(c.cuda_staged_gpu_min == 0);
  CHECK(c.shm_stores == "auto");
  CHECK(c.shm_areas == 4);
  REQUIRE(load({"COLLX_SHM_AREAS=2"}, &c).ok());
  CHECK(c.shm_areas == 2);
  REQUIRE(load({"COLLX_SHM_AREAS=16"}, &c).ok());
  CHECK(c.shm_areas == 16);

  REQUIRE(load({"COLLX_SHM_STORES=cached"}, &c).ok());
  CHECK(c.shm_stores == "cached");
  REQUIRE(load({"COLLX_SHM_STORES=streaming"}, &c).ok());
  CHECK(c.shm_stores == "streaming");
  REQUIRE(load({"COLLX_TIMEOUT=2.5", "COLLX_RING_SEGMENT=1M", "COLLX_SPIN=0"}, &c).ok());
  CHECK(c.timeout_s == 2.5);
  CHECK(c.ring_segment == 1 << 20);
  CHECK(c.spin == 0);
  REQUIRE(load({"COLLX_CUDA_IPC_MIN=0", "COLLX_CUDA_IPC_MIN_TIMESLICED=64K"}, &c).ok());
  CHECK(c.cuda_ipc_min == 0);
  CHECK(c.cuda_ipc_min_timesliced == 64 << 10);

  // The bounds themselves are accepted.
  REQUIRE(load({"COLLX_SHM_CHUNK=4K", "COLLX_STAGING_CHUNK=1G", "COLLX_CUDA_FLAGS_MAX=0",
                "COLLX_SPIN=1000000000"}, &c).ok());
  CHECK(c.shm_chunk == 4096);
  CHECK(c.staging_chunk == size_t{1} << 30);
  CHECK(c.cuda_flags_max == 0);
  CHECK(c.spin == 1000000000);
  REQUIRE(load({"COLLX_SHM_CHUNK=1G", "COLLX_STAGING_CHUNK=4K", "COLLX_CUDA_FLAGS_MAX=1G"}, &c).ok());
  CHECK(c.shm_chunk == size_t{1} << 30);
  CHECK(c.staging_chunk == 4096);
  CHECK(c.cuda_flags_max == size_t{1} << 30);

  Status s = load({"COLLX_TIMEOUTT=3"}, &c);
  CHECK(s.code() == COLLX_ERR_CONFIG);
  CHECK(s.message().find("COLLX_TIMEOUTT") != std::string::npos);
  for (const char* bad : {"COLLX_TIMEOUT=abc", "COLLX_TIMEOUT=-1", "COLLX_TIMEOUT=0",
                          "COLLX_TIMEOUT=inf", "COLLX_TIMEOUT=1e8", "COLLX_TIMEOUT=nan", "COLLX_RING_SEGMENT=0", "COLLX_RING_SEGMENT=big",
                          "COLLX_SPIN=-3", "COLLX_CUDA_IPC_MIN=-1", "COLLX_CUDA_IPC_MIN_TIMESLICED=2Q",
                          "COLLX_SHM_STORES=", "COLLX_SHM_STORES=nt", "COLLX_SHM_AREAS=1",
                          "COLLX_SHM_AREAS=17", "COLLX_SHM_AREAS=4K", "COLLX_SHM_AREAS=two",
                          "COLLX_SHM_CHUNK=2K", "COLLX_SHM_CHUNK=4100", "COLLX_SHM_CHUNK=2G",
                          "COLLX_STAGING_CHUNK=1K", "COLLX_STAGING_CHUNK=2G",
                          "COLLX_CUDA_FLAGS_MAX=2G", "COLLX_CUDA_FLAGS_MAX=-1",
                          "COLLX_CUDA_STAGED_GPU_MIN=Off", "COLLX_CUDA_STAGED_GPU_MIN=",
                          "COLLX_CUDA_TWO_SHOT=1.5M", "COLLX_CMA_MIN=-1", "COLLX_ASYNC_MIN=x",
                          "COLLX_SPIN=1000000001", "COLLX_CHECK=2", "COLLX_MPI=yes",
                          "COLLX_PROFILE=true", "COLLX_CUDA=on", "COLLX_MPI_HOST_COPIES=",
                          "COLLX_MPI_VERBOSE=10"}) {
    INFO(bad);
    s = load({bad}, &c);
    CHECK(s.code() == COLLX_ERR_CONFIG);
    const std::string name(bad, std::string(bad).find('='));
    CHECK(s.message().find(name) != std::string::npos);
  }
}

TEST_CASE("every configuration row is documented") {
  int n = 0;
  for (const ConfigRow* r = config_rows(); r->name != nullptr; ++r, ++n) {
    CHECK(std::string(r->name).rfind("COLLX_", 0) == 0);
    CHECK(std::string(r->doc).size() > 20);
  }
  CHECK(n >= 5);
}

TEST_CASE("tune strings: good ones parse and print back") {
  Selection s;
  REQUIRE(parse_tune("0-4K:recursive_doubling,4K-512K:rabenseifner,512K-inf:ring", &s).ok());
  REQUIRE(s.ranges.size() == 3);
  CHECK(s.pick(0) == Algo::kRecursiveDoubling);
  CHECK(s.pick(4095) == Algo::kRecursiveDoubling);
  CHECK(s.pick(4096) == Algo::kRabenseifner);
  CHECK(s.pick(512 * 1024) == Algo::kRing);
  CHECK(s.pick(SIZE_MAX - 1) == Algo::kRing);
  CHECK(s.to_string() == "0-4K:recursive_doubling,4K-512K:rabenseifner,512K-inf:ring");
  // Order does not matter; a single range is fine.
  REQUIRE(parse_tune("100-inf:ring,0-100:rabenseifner", &s).ok());
  CHECK(s.pick(99) == Algo::kRabenseifner);
  CHECK(s.pick(100) == Algo::kRing);
  REQUIRE(parse_tune("0-inf:ring", &s).ok());
  CHECK(s.pick(7) == Algo::kRing);
}

TEST_CASE("tune strings: bad ones are errors naming the bad token") {
  struct Case {
    const char* tune;
    const char* names;
  };
  const Case cases[] = {
      {"", "empty"},
      {"0-4K:recursive_doubling,4K-inf:rign", "4K-inf:rign"},
      {"0-4K:recursive_doubling,4Q-inf:ring", "4Q-inf:ring"},
      {"0-4K:recursive_doubling,4K-:ring", "4K-:ring"},
      {"0-4Kring", "0-4Kring"},
      {"0-4K:ring,,4K-inf:ring", "''"},
      {"0-4K:ring,4K-inf:ring,", "''"},
      {"0-8K:ring,4K-inf:ring", "4K-inf:ring"},            // overlap
      {"0-4K:ring,8K-inf:ring", "missing range 4K-8K"},     // gap
      {"0-4K:ring,4K-1M:ring", "missing range 1M-inf"},     // open end
      {"1-inf:ring", "missing range 0-1"},                   // no start
      {"8K-4K:ring,0-8K:ring", "8K-4K:ring"},               // empty range
      {"0-4K:ring:ring", "0-4K:ring:ring"},
  };
  for (const Case& c : cases) {
    INFO(c.tune);
    Selection s;
    const Status st = parse_tune(c.tune, &s);
    CHECK(st.code() == COLLX_ERR_CONFIG);
    INFO(st.message());
    CHECK(st.message().find(c.names) != std::string::npos);
  }
}

TEST_CASE("selection: the ring only where its 2(p-1) steps fit below kMaxSteps") {
  // 30721 ranks: 61440 steps, the most; one more rank and the ring would run out of tags.
  Config c;
  Selection s;
  for (int p : {30721, 30722, 100000}) {
    const bool fits = p == 30721;
    INFO(p << " ranks");
    const Selection d = default_selection(p, Locality{});
    CHECK(d.uses(Algo::kRing) == fits);
    CHECK(d.pick(size_t{1} << 30) == (fits ? Algo::kRing : Algo::kRabenseifner));
    c.algo = "ring";
    const Status st = make_selection(c, p, Locality{}, &s);
    CHECK(st.ok() == fits);
    if (!fits) {
      CHECK(st.code() == COLLX_ERR_CONFIG);
      CHECK(st.message().find("at most 30721 ranks") != std::string::npos);
    }
    c.algo = "auto";
    c.tune = "0-1K:recursive_doubling,1K-inf:ring";
    CHECK(make_selection(c, p, Locality{}, &s).ok() == fits);
    c.tune = "";
    // Between nodes (hierarchical's step): the same bound on the number of nodes.
    c.tune_across = "0-inf:ring";
    CHECK(make_across_selection(c, p, &s).ok() == fits);
    c.tune_across = "";
    REQUIRE(make_across_selection(c, p, &s).ok());
    CHECK(s.uses(Algo::kRing) == fits);
  }
}

TEST_CASE("selection: within a node the defaults follow the CPU's maker") {
  // Measured on 2 ranks of an AMD EPYC (also for other makers) and of an Intel Xeon.
  const auto table = [](int p, Locality where) { return default_selection(p, where).to_string(); };
  const std::string shm = "0-16K:shm_one_shot,16K-inf:shm_two_shot";
  for (CpuMaker cpu : {CpuMaker::kOther, CpuMaker::kAmd}) {
    for (int p : {2, 3, 8}) CHECK(table(p, Locality{true, true, false, cpu}) == shm);
  }
  CHECK(table(2, Locality{true, true, false, CpuMaker::kIntel}) ==
        "0-8K:shm_one_shot,8K-16K:recursive_doubling,16K-2M:shm_two_shot,2M-inf:shm_cma");
  // Intel's table only where it was measured (2 ranks) and can run (cross-memory attach).
  CHECK(table(3, Locality{true, true, false, CpuMaker::kIntel}) == shm);
  CHECK(table(2, Locality{true, false, false, CpuMaker::kIntel}) == shm);
  // Across nodes the CPU does not matter.
  for (int p : {2, 5}) {
    CHECK(table(p, Locality{false, false, false, CpuMaker::kIntel}) == table(p, Locality{}));
    CHECK(table(p, Locality{false, false, true, CpuMaker::kIntel}) == "0-inf:hierarchical");
  }
  CHECK(std::string(cpu_maker_name(CpuMaker::kIntel)) == "Intel");
  CHECK(std::string(cpu_maker_name(CpuMaker::kAmd)) == "AMD");
  // cpu_maker agrees with the kernel's view of the CPU (x86: vendor_id in /proc/cpuinfo), but
  // under valgrind, whose CPUID describes a CPU of its own (GenuineIntel, without AVX-512, on
  // the AMD EPYC of 2026-12-04); valgrind preloads its vgpreload libraries into the program.
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) {
    WARN("under valgrind: its CPUID is not the CPU's, cpu_maker not compared");
    return;
  }
  std::ifstream info("/proc/cpuinfo");
  std::string line, vendor;
  while (vendor.empty() && std::getline(info, line)) {
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 2);
  }
  INFO("vendor_id: " << vendor);
  const CpuMaker expect = vendor == "AuthenticAMD"   ? CpuMaker::kAmd
                          : vendor == "GenuineIntel" ? CpuMaker::kIntel
                                                     : CpuMaker::kOther;
  CHECK(cpu_maker() == expect);
}

TEST_CASE("selection: defaults, COLLX_TUNE, COLLX_ALLREDUCE_ALGO") {
  for (int p : {1, 2, 3, 4, 9, 1000, 40000})
  for (CpuMaker cpu : {CpuMaker::kOther, CpuMaker::kAmd, CpuMaker::kIntel})
  for (Locality where : {Locality{true, true, false, cpu}, Locality{true, false, false, cpu},
                         Locality{false, false, false, cpu}, Locality{false, false, true, cpu}}) {
    const Selection s = default_selection(p, where);
    REQUIRE_FALSE(s.ranges.empty());
    CHECK(s.ranges.front().lo == 0);
    CHECK(s.ranges.back().hi == kInf);
    Selection again;
    REQUIRE(parse_tune(s.to_string(), &again).ok());  // defaults are valid tune strings
    CHECK(again.to_string() == s.to_string());
  }
  Config c;
  c.algo = "rabenseifner";
  Selection s;
  REQUIRE(make_selection(c, 4, Locality{}, &s).ok());
  CHECK(s.pick(1) == Algo::kRabenseifner);
  CHECK(s.pick(1 << 30) == Algo::kRabenseifner);
  c.algo = "auto";
  c.tune = "0-1M:ring,1M-inf:recursive_doubling";
  REQUIRE(make_selection(c, 4, Locality{}, &s).ok());
  CHECK(s.pick(10) == Algo::kRing);
  CHECK(s.pick(1 << 20) == Algo::kRecursiveDoubling);
  c.tune = "";
  c.algo = "fastest";
  const Status st = make_selection(c, 4, Locality{}, &s);
  CHECK(st.code() == COLLX_ERR_CONFIG);
  CHECK(st.message().find("fastest") != std::string::npos);
  // Shared-memory algorithms: the default within a node, an error across nodes.
  c.algo = "auto";
  REQUIRE(make_selection(c, 4, Locality{true, true}, &s).ok());
  CHECK(s.pick(8) == Algo::kShmOneShot);
  CHECK(s.pick(64 << 10) == Algo::kShmTwoShot);
  REQUIRE(make_selection(c, 2, Locality{true, true}, &s).ok());
  CHECK(s.pick(8) == Algo::kShmOneShot);
  REQUIRE(make_selection(c, 2, Locality{}, &s).ok());
  CHECK(s.pick(8) == Algo::kRecursiveDoubling);
  c.algo = "shm_two_shot";
  REQUIRE(make_selection(c, 4, Locality{true, true}, &s).ok());
  CHECK(s.pick(8) == Algo::kShmTwoShot);
  const Status across = make_selection(c, 4, Locality{}, &s);
  CHECK(across.code() == COLLX_ERR_CONFIG);
  CHECK(across.message().find("one node") != std::string::npos);
  CHECK(make_selection(c, 1, Locality{}, &s).ok());  // one rank: nothing to share
  // shm_cma also needs cross-memory attach between the ranks.
  c.algo = "shm_cma";
  REQUIRE(make_selection(c, 3, Locality{true, true}, &s).ok());
  CHECK(s.pick(1 << 20) == Algo::kShmCma);
  const Status no_cma = make_selection(c, 3, Locality{true, false}, &s);
  CHECK(no_cma.code() == COLLX_ERR_CONFIG);
  CHECK(no_cma.message().find("process_vm_readv") != std::string::npos);
  CHECK(make_selection(c, 3, Locality{}, &s).code() == COLLX_ERR_CONFIG);
  CHECK(make_selection(c, 1, Locality{}, &s).ok());
  // Without it the defaults never pick shm_cma.
  c.algo = "auto";
  for (int p : {2, 3, 8})
  for (CpuMaker cpu : {CpuMaker::kOther, CpuMaker::kAmd, CpuMaker::kIntel}) {
    REQUIRE(make_selection(c, p, Locality{true, false, false, cpu}, &s).ok());
    for (const SelectRange& r : s.ranges) CHECK(r.algo != Algo::kShmCma);
  }
  // Ranks on several nodes, two on one of them: hierarchical at every size by default; forced
  // anywhere else, an error (one node, or one rank on each).
  const Locality spread{false, false, true};
  REQUIRE(make_selection(c, 6, spread, &s).ok());
  CHECK(s.pick(8) == Algo::kHierarchical);
  CHECK(s.pick(1 << 30) == Algo::kHierarchical);
  c.tune = "0-4K:recursive_doubling,4K-inf:hierarchical";
  REQUIRE(make_selection(c, 6, spread, &s).ok());
  CHECK(s.pick(8) == Algo::kRecursiveDoubling);
  CHECK(s.pick(4 << 10) == Algo::kHierarchical);
  for (Locality where : {Locality{true, true}, Locality{}}) {
    const Status not_spread = make_selection(c, 6, where, &s);
    CHECK(not_spread.code() == COLLX_ERR_CONFIG);
    CHECK(not_spread.message().find("hierarchical needs the ranks on several nodes, at least 2") !=
          std::string::npos);
  }
  c.tune = "";
  c.algo = "hierarchical";
  CHECK(make_selection(c, 6, spread, &s).ok());
  CHECK(make_selection(c, 6, Locality{}, &s).code() == COLLX_ERR_CONFIG);
}
