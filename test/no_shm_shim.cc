// Test shim (LD_PRELOAD) that takes libcollx's shared-memory segments away from one process, as
// a memory limit or a locked-down /proc would. Only libcollx's segments (memfds named
// "collx") are affected; MPI's and UCX's own are not.
//   NO_SHM=full  reserving a new segment's pages fails with ENOSPC (posix_fallocate), as on a
//                full tmpfs: the node's first rank cannot create the segment.
//   NO_SHM=open  opening a peer's segment fails with EACCES (open of /proc/<pid>/fd/<fd>, as
//                for a peer that may not inspect the creator): the rank cannot attach.
//   NO_SHM=eintr every other reservation fails with EINTR (posix_fallocate), as older kernels
//                report a signal caught while reserving: no failure, the segment is had.
// Without NO_SHM the shim changes nothing.
#undef _FILE_OFFSET_BITS  // both posix_fallocate and posix_fallocate64 are defined below
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

// Whether `link` (a /proc/.../fd/N path) leads to a libcollx segment ("/memfd:collx (deleted)").
bool collx_link(const char* link) {
  char path[256];
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return std::strncmp(path, "/memfd:collx ", 13) == 0;
}

bool collx_fd(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  return collx_link(link);
}

// open/open64 of a peer's segment, for NO_SHM=open.
bool refused(const char* path) {
  return mode_is("open") && std::strncmp(path, "/proc/", 6) == 0 && collx_link(path);
}

}  // namespace

extern "C" {

// libcollx opens a peer's segment with open (open64 where _FILE_OFFSET_BITS is 64).
int open64(const char* path, int flags, ...) {
  using Fn = int (*)(const char*, int, ...);
  static const auto real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "open64"));
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  if (refused(path)) {
    errno = EACCES;
    return -1;
  }
  return real(path, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return open64(path, flags, mode);
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
