#include "transport/peer_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace collx {

Status peer_read(int64_t pid, uint64_t remote, void* local, size_t bytes) {
  if (pid == 0) {
    std::memcpy(local, reinterpret_cast<const void*>(remote), bytes);
    return Status();
  }
  size_t done = 0;
  while (done < bytes) {
    iovec here{static_cast<uint8_t*>(local) + done, bytes - done};
    iovec there{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &here, 1, &there, 1, 0);
    if (n <= 0) {
      const int e = n == 0 ? EIO : errno;
      return error(e == ESRCH ? COLLX_ERR_PEER_FAILED : COLLX_ERR_TRANSPORT,
                   "reading %zu bytes at 0x%llx of process %lld failed: %s", bytes - done,
                   static_cast<unsigned long long>(remote + done), static_cast<long long>(pid),
                   e == ESRCH ? "the process is gone" : strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  return Status();
}

}  // namespace collx
