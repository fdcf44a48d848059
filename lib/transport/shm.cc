#include "transport/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace collx {

namespace {
constexpr size_t kHeader = 64;
constexpr const char* kPrefix = "/collx-";
constexpr size_t kHexDigits = 32;
constexpr size_t round_up64(size_t n) { return (n + 63) & ~size_t{63}; }
}  // namespace

size_t ShmChannel::bytes_for(int p, size_t chunk, int areas) {
  const size_t flags = static_cast<size_t>(p) * sizeof(ShmRankFlags);
  const size_t data = static_cast<size_t>(areas) * (static_cast<size_t>(p) + 1) * chunk;
  return round_up64(kHeader + flags + data) + static_cast<size_t>(p) * sizeof(ShmFlag);
}

ShmChannel::ShmChannel(void* base, int rank, int p, size_t chunk, int areas,
                       std::vector<int64_t> pids, std::vector<int> ranks)
    : rank_(rank),
      size_(p),
      chunk_(chunk),
      areas_(static_cast<size_t>(areas)),
      flags_(reinterpret_cast<ShmRankFlags*>(static_cast<uint8_t*>(base) + kHeader)),
      data_(static_cast<uint8_t*>(base) + kHeader + static_cast<size_t>(p) * sizeof(ShmRankFlags)),
      started_(reinterpret_cast<ShmFlag*>(static_cast<uint8_t*>(base) +
                                          bytes_for(p, chunk, areas)) -
               p),  // the last words of the segment
      pids_(std::move(pids)),
      ranks_(std::move(ranks)) {}

bool ShmSegment::valid_name(const std::string& name) {
  if (name.size() != std::strlen(kPrefix) + kHexDigits || name.rfind(kPrefix, 0) != 0) {
    return false;
  }
  for (size_t i = std::strlen(kPrefix); i < name.size(); ++i) {
    const char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status ShmSegment::create(size_t bytes, ShmSegment** out) {
  uint8_t random[kHexDigits / 2];
  if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    return error(COLLX_ERR_TRANSPORT, "shared memory: getrandom failed: %s", strerror(errno));
  }
  std::string name = kPrefix;
  for (uint8_t b : random) {
    name += "0123456789abcdef"[b >> 4];
    name += "0123456789abcdef"[b & 15];
  }
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    return error(COLLX_ERR_TRANSPORT, "shared memory: creating %s failed: %s", name.c_str(),
                 strerror(errno));
  }
  auto* s = new ShmSegment();
  s->name_ = name;
  s->linked_ = true;
  s->bytes_ = bytes;
  Status st;
  // Reserve the pages now (zero-filled): a full /dev/shm is an error here, not a SIGBUS on
  // first touch in the middle of a collective. A signal caught meanwhile (EINTR: older kernels
  // stop a tmpfs reservation for any signal, as a profiler's timer sends) is no failure.
  int rc = 0;
  do {
    rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (rc == EINTR);
  if (rc != 0) {
    st = error(COLLX_ERR_NO_MEMORY, "shared memory: reserving %zu bytes for %s failed: %s",
               bytes, name.c_str(), strerror(rc));
  } else {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      st = error(COLLX_ERR_NO_MEMORY, "shared memory: mapping %zu bytes failed: %s", bytes,
                 strerror(errno));
    } else {
      s->base_ = p;
    }
  }
  close(fd);
  if (!st.ok()) {
    delete s;
    return st;
  }
  *out = s;
  return Status();
}

Status ShmSegment::attach(const std::string& name, size_t bytes, ShmSegment** out) {
  if (!valid_name(name)) {
    return error(COLLX_ERR_MISMATCH, "shared memory: peer sent an invalid segment name");
  }
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return error(COLLX_ERR_TRANSPORT, "shared memory: opening %s failed: %s", name.c_str(),
                 strerror(errno));
  }
  struct stat st_buf {};
  Status st;
  void* p = MAP_FAILED;
  if (fstat(fd, &st_buf) != 0 || static_cast<size_t>(st_buf.st_size) != bytes ||
      st_buf.st_uid != geteuid() || (st_buf.st_mode & 0077) != 0) {
    st = error(COLLX_ERR_MISMATCH,
               "shared memory: %s is not this job's segment (size %lld, expected %zu)",
               name.c_str(), static_cast<long long>(st_buf.st_size), bytes);
  } else {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      st = error(COLLX_ERR_NO_MEMORY, "shared memory: mapping %zu bytes failed: %s", bytes,
                 strerror(errno));
    }
  }
  close(fd);
  if (!st.ok()) return st;
  auto* s = new ShmSegment();
  s->name_ = name;
  s->base_ = p;
  s->bytes_ = bytes;
  *out = s;
  return Status();
}

void ShmSegment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

ShmSegment::~ShmSegment() {
  unlink();
  if (base_ != nullptr) munmap(base_, bytes_);
}

}  // namespace collx
