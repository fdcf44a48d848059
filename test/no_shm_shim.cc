// Test shim (LD_PRELOAD) that takes libcollx's shared-memory segments away from one process, as
// a full or locked-down /dev/shm would (a container's 64 MiB /dev/shm holds few segments of
// (p + 1) MiB each). Only names that start with "/collx-" are affected; MPI's and UCX's own
// segments are not.
//   NO_SHM=full  reserving a new segment's pages fails with ENOSPC (posix_fallocate), as on a
//                full tmpfs: the node's first rank cannot create the segment.
//   NO_SHM=open  opening a peer's segment fails with EACCES (shm_open): the rank cannot attach.
//   NO_SHM=eintr every other reservation fails with EINTR (posix_fallocate), as older kernels
//                report a signal caught while reserving: no failure, the segment is had.
// Without NO_SHM the shim changes nothing.
#undef _FILE_OFFSET_BITS  // both posix_fallocate and posix_fallocate64 are defined below
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool mode_is(const char* m) {
  const char* v = std::getenv("NO_SHM");
  return v != nullptr && std::strcmp(v, m) == 0;
}

bool collx_name(const char* name) { return std::strncmp(name, "/collx-", 7) == 0; }

// Whether fd is a libcollx segment (/dev/shm/collx-...).
bool collx_fd(int fd) {
  char link[64], path[256];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return std::strncmp(path, "/dev/shm/collx-", 15) == 0;
}

}  // namespace

extern "C" {

int shm_open(const char* name, int oflag, mode_t mode) {
  using Fn = int (*)(const char*, int, mode_t);
  static const auto real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "shm_open"));
  if (mode_is("open") && (oflag & O_CREAT) == 0 && collx_name(name)) {
    errno = EACCES;
    return -1;
  }
  return real(name, oflag, mode);
}

// libcollx calls posix_fallocate64 (it is built with _FILE_OFFSET_BITS=64).
int posix_fallocate64(int fd, off64_t offset, off64_t len) {
  using Fn = int (*)(int, off64_t, off64_t);
  static const auto real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "posix_fallocate64"));
  if (mode_is("full") && collx_fd(fd)) return ENOSPC;
  static int calls = 0;  // (libcollx creates its segments one at a time)
  if (mode_is("eintr") && collx_fd(fd) && calls++ % 2 == 0) return EINTR;
  return real(fd, offset, len);
}

int posix_fallocate(int fd, off_t offset, off_t len) { return posix_fallocate64(fd, offset, len); }

}  // extern "C"
