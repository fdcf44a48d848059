// The shared-memory segment's lifecycle and its checks (the algorithms over it are in
// test_algorithms.cc, over real processes in the MPI tests and the fault test).
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "transport/shm.h"

using namespace collx;

// The number of libcollx segments among /dev/shm's names.
int named_segments() {
  int n = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, "collx", 5) == 0;
    closedir(d);
  }
  return n;
}

TEST_CASE("shared memory: private, nameless, attachable while the creator's name is open",
          "[shm]") {
  const int named = named_segments();
  ShmSegment* a = nullptr;
  ShmSegment* b = nullptr;
  REQUIRE(ShmSegment::create(1 << 16, &a).ok());
  REQUIRE(ShmSegment::create(1 << 16, &b).ok());
  std::unique_ptr<ShmSegment> sa(a), sb(b);
  CHECK(a->name() != b->name());
  CHECK(a->name().rfind("/proc/" + std::to_string(getpid()) + "/fd/", 0) == 0);
  CHECK(ShmSegment::valid_name(a->name()));
  CHECK(named_segments() == named);  // nothing in /dev/shm, ever
  struct stat st {};
  REQUIRE(stat(a->name().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_uid == geteuid());

  ShmSegment* c = nullptr;
  REQUIRE(ShmSegment::attach(a->name(), 1 << 16, &c).ok());
  std::unique_ptr<ShmSegment> sc(c);
  static_cast<char*>(a->base())[100] = 42;  // one memory, two mappings
  CHECK(static_cast<char*>(c->base())[100] == 42);

  // A segment of another size, a malformed name or a missing one is refused.
  ShmSegment* d = nullptr;
  CHECK(ShmSegment::attach(a->name(), 1 << 17, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/etc/passwd", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/proc/self/fd/0", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/proc/1/fd/3/../../x", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/proc/01/fd/3", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/proc/12345678901/fd/3", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  CHECK(ShmSegment::attach("/proc/1/fd/", 1 << 16, &d).code() == COLLX_ERR_MISMATCH);
  // A descriptor that is not a segment (a temporary file: mode 0600, but empty), and one
  // that is not open.
  const std::string self = "/proc/" + std::to_string(getpid()) + "/fd/";
  FILE* other = std::tmpfile();
  REQUIRE(other != nullptr);
  CHECK(ShmSegment::attach(self + std::to_string(fileno(other)), 1 << 16, &d).code() ==
        COLLX_ERR_MISMATCH);
  std::fclose(other);
  CHECK(ShmSegment::attach(self + "999999", 1 << 16, &d).code() == COLLX_ERR_TRANSPORT);
  CHECK(d == nullptr);

  const std::string name = a->name();
  a->close_name();
  CHECK(ShmSegment::attach(name, 1 << 16, &d).code() != COLLX_SUCCESS);  // no longer opens ...
  CHECK(d == nullptr);
  CHECK(static_cast<char*>(c->base())[100] == 42);  // ... while the mappings live on
}

TEST_CASE("shared memory layout: flags on their own cache lines, areas apart", "[shm]") {
  constexpr int p = 3;
  constexpr size_t chunk = 4096;
  constexpr int areas = 3;
  std::unique_ptr<uint64_t[]> mem(new uint64_t[ShmChannel::bytes_for(p, chunk, areas) / 8 + 8]());
  void* base = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(mem.get()) + 63) & ~uintptr_t{63});
  ShmChannel ch(base, 1, p, chunk, areas, {});
  CHECK(reinterpret_cast<uintptr_t>(&ch.flags(0).ready) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(&ch.flags(0).reduced) -
            reinterpret_cast<uintptr_t>(&ch.flags(0).ready) == 64);
  // A one-shot's small message and its epoch share one line; one line per epoch parity.
  CHECK(sizeof(ShmInline) == 64);
  CHECK(reinterpret_cast<uintptr_t>(&ch.flags(2).small[0]) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(&ch.flags(2).small[1]) -
            reinterpret_cast<uintptr_t>(&ch.flags(2).small[0]) == 64);
  // Areas used in turn: epochs 1, 2 and 3 apart, epoch 4 back in epoch 1's.
  CHECK(ch.slot(1, 0) != ch.slot(2, 0));
  CHECK(ch.slot(1, 0) != ch.slot(3, 0));
  CHECK(ch.slot(2, 0) != ch.slot(3, 0));
  CHECK(ch.slot(1, 0) == ch.slot(4, 0));
  CHECK(ch.result(1) != ch.result(3));
  CHECK(ch.result(1) == ch.result(4));
  CHECK(ch.slot(1, 1) - ch.slot(1, 0) == static_cast<ptrdiff_t>(chunk));
  uint8_t* end = static_cast<uint8_t*>(base) + ShmChannel::bytes_for(p, chunk, areas);
  for (uint64_t e = 1; e <= areas; ++e) {
    CHECK(ch.result(e) + chunk <= end);
    CHECK(ch.result(e) >= ch.slot(e, p - 1) + chunk);  // results after every slot
    for (int r = 0; r < p; ++r) CHECK(ch.slot(e, r) + chunk <= ch.result(1));
  }
  CHECK(reinterpret_cast<uint8_t*>(&ch.started(0)) >= ch.result(areas) + chunk);
}
