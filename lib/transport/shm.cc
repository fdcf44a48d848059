#include "transport/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace collx {

namespace {
constexpr size_t kHeader = 64;
constexpr const char* kProc = "/proc/";  // a segment's name: /proc/<pid>/fd/<fd>
constexpr const char* kFd = "/fd/";
constexpr size_t round_up64(size_t n) { return (n + 63) & ~size_t{63}; }
// A child the process forks does not inherit the mapping: it has no business in the node's
// collectives (api/collx.cc refuses its calls on the parent's communicators), and a
// long-lived one (a data loader's worker) would otherwise hold the segment's memory after the
// communicator is destroyed. (Without MADV_DONTFORK, which every kernel since 2.6.16 has, the
// child would merely keep the mapping.)
void keep_from_children(void* p, size_t bytes) { madvise(p, bytes, MADV_DONTFORK); }

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
  // /proc/<pid>/fd/<fd>: digits only (nothing else to follow), no leading zero, bounded.
  auto number = [&](size_t at, size_t* past) {
    size_t i = at;
    while (i < name.size() && i - at < 10 && name[i] >= '0' && name[i] <= '9') ++i;
    *past = i;
    return i > at && !(name[at] == '0' && i - at > 1);
  };
  size_t pid_end = 0, fd_end = 0;
  return name.rfind(kProc, 0) == 0 && number(std::strlen(kProc), &pid_end) &&
         name.compare(pid_end, std::strlen(kFd), kFd) == 0 &&
         number(pid_end + std::strlen(kFd), &fd_end) && fd_end == name.size();
}

Status ShmSegment::create(size_t bytes, ShmSegment** out) {
  const int fd = memfd_create("collx", MFD_CLOEXEC);
  if (fd < 0) {
    return error(COLLX_ERR_TRANSPORT, "shared memory: memfd_create failed: %s", strerror(errno));
  }
  std::unique_ptr<ShmSegment> s;
  try {
    s.reset(new ShmSegment());
  } catch (...) {  // (std::bad_alloc: nothing left open)
    close(fd);
    throw;
  }
  s->fd_ = fd;  // (closed by s from here)
  s->bytes_ = bytes;
  s->name_ = std::string(kProc) + std::to_string(getpid()) + kFd + std::to_string(fd);
  Status st;
  int rc = 0;
  // A memfd is made with mode 0777; the /proc path lets only processes that may inspect the
  // creator open it, and 0600 keeps it to its owner all the same.
  if (fchmod(fd, 0600) != 0) {
    st = error(COLLX_ERR_TRANSPORT, "shared memory: fchmod failed: %s", strerror(errno));
  } else {
    // Reserve the pages now (zero-filled): no memory is an error here, not a SIGBUS on first
    // touch in the middle of a collective. A signal caught meanwhile (EINTR: older kernels
    // stop a tmpfs reservation for any signal, as a profiler's timer sends) is no failure.
    do {
      rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    } while (rc == EINTR);
  }
  if (rc != 0) {
    st = error(COLLX_ERR_NO_MEMORY, "shared memory: reserving %zu bytes failed: %s", bytes,
               strerror(rc));
  }
  if (st.ok()) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      st = error(COLLX_ERR_NO_MEMORY, "shared memory: mapping %zu bytes failed: %s", bytes,
                 strerror(errno));
    } else {
      s->base_ = p;
      keep_from_children(p, bytes);
    }
  }
  if (!st.ok()) return st;
  *out = s.release();
  return Status();
}

Status ShmSegment::attach(const std::string& name, size_t bytes, ShmSegment** out) {
  if (!valid_name(name)) {
    return error(COLLX_ERR_MISMATCH, "shared memory: peer sent an invalid segment name");
  }
  const int fd = open(name.c_str(), O_RDWR | O_CLOEXEC);
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
  keep_from_children(p, bytes);
  std::unique_ptr<ShmSegment> s;
  try {
    s.reset(new ShmSegment());
  } catch (...) {  // (std::bad_alloc: nothing left mapped)
    munmap(p, bytes);
    throw;
  }
  s->base_ = p;  // (unmapped by s from here)
  s->bytes_ = bytes;
  s->name_ = name;
  *out = s.release();
  return Status();
}

void ShmSegment::close_name() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

ShmSegment::~ShmSegment() {
  close_name();
  if (base_ != nullptr) munmap(base_, bytes_);
}

}  // namespace collx
