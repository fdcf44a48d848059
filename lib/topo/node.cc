#include "topo/node.h"

#include <sys/uio.h>
#include <unistd.h>

#include <fstream>

namespace collx {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

uint64_t node_id(const std::string& override_name) {
  if (!override_name.empty()) return fnv1a("override:" + override_name);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return fnv1a(std::string(host) + "/" + boot);
}

bool cma_readable(int64_t pid, uint64_t address, uint64_t expect) {
  uint64_t value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(address), sizeof value};
  const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(sizeof value) && value == expect;
}

}  // namespace collx
