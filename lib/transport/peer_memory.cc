#include "transport/peer_memory.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "memory/host_copy.h"

namespace collx {
namespace {

// The bounce buffer's size: a few dozen pages per read, and within L2 for the copy after it.
constexpr size_t kBounce = 64 << 10;

// Whether the kernel's copy from `remote` to `local` is slow: it copies with `rep movsb`, which
// this AMD CPU runs at about a quarter of its speed when the destination lies 1 to 31 bytes
// past the source modulo 4096, as glibc's memcpy does (docs/PERFORMANCE.md, "The kernel's copy
// has the same slow distances").
bool unlucky(uint64_t remote, const void* local) {
  const uint64_t distance = (reinterpret_cast<uint64_t>(local) - remote) % 4096;
  return distance != 0 && distance < 32;
}

// Reads `bytes` at `remote` into `local` and, where `seal` is given, then the 8 bytes at `word`
// into it, in the same system calls (process_vm_readv reads its ranges in order).
Status read_all(int64_t pid, uint64_t remote, uint8_t* local, size_t bytes, uint64_t word,
                uint64_t* seal) {
  size_t done = 0;
  bool sealed = seal == nullptr;
  while (done < bytes || !sealed) {
    iovec here[2] = {{local + done, bytes - done}, {seal, sizeof(uint64_t)}};
    iovec there[2] = {{reinterpret_cast<void*>(remote + done), bytes - done},
                      {reinterpret_cast<void*>(word), sizeof(uint64_t)}};
    const ssize_t n =
        process_vm_readv(static_cast<pid_t>(pid), here, seal ? 2 : 1, there, seal ? 2 : 1, 0);
    if (n <= 0) {
      const int e = n == 0 ? EIO : errno;
      return error(e == ESRCH ? COLLX_ERR_PEER_FAILED : COLLX_ERR_TRANSPORT,
                   "reading %zu bytes at 0x%llx of process %lld failed: %s", bytes - done,
                   static_cast<unsigned long long>(remote + done), static_cast<long long>(pid),
                   e == ESRCH ? "the process is gone" : strerror(e));
    }
    sealed = sealed || static_cast<size_t>(n) == bytes - done + sizeof(uint64_t);
    done += std::min(static_cast<size_t>(n), bytes - done);
  }
  return Status();
}

}  // namespace

Status peer_read(int64_t pid, uint64_t remote, void* local, size_t bytes, uint64_t word,
                 uint64_t* seal) {
  auto* to = static_cast<uint8_t*>(local);
  if (pid == 0) {
    copy_cached(to, reinterpret_cast<const void*>(remote), bytes);
    if (seal != nullptr) {
      *seal = __atomic_load_n(reinterpret_cast<const uint64_t*>(word), __ATOMIC_ACQUIRE);
    }
    return Status();
  }
  if (bytes == 0 || !unlucky(remote, local)) return read_all(pid, remote, to, bytes, word, seal);
  // One buffer per thread, kept for the thread's life (threads may read at the same time);
  // without one, the slow direct copy.
  thread_local std::unique_ptr<uint8_t[]> area;
  if (!area) area.reset(new (std::nothrow) uint8_t[kBounce + 8192]);
  if (!area) return read_all(pid, remote, to, bytes, word, seal);
  // Through the bounce buffer at the source's page offset: the kernel's copy at distance 0,
  // then copy_cached at the unlucky distance, each much faster than the kernel's copy there.
  const auto page = (reinterpret_cast<uintptr_t>(area.get()) + 4095) & ~uintptr_t{4095};
  auto* bounce = reinterpret_cast<uint8_t*>(page + remote % 4096);
  for (size_t done = 0; done < bytes; done += kBounce) {
    const size_t n = std::min(kBounce, bytes - done);
    const bool last = done + n == bytes;
    COLLX_TRY(read_all(pid, remote + done, bounce, n, word, last ? seal : nullptr));
    copy_cached(to + done, bounce, n);
  }
  return Status();
}

}  // namespace collx
