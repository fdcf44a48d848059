// libcollx_mpi.so preloaded into a program of another MPI (lib/pmpi/gate.cc): a stand-in for
// that MPI's library, built from this file with FOREIGN_MPI_LIBRARY defined
// (libforeign_mpi.so), defines every function libcollx_mpi.so exports, and PMPI_Init, each
// taking eight 64-bit arguments (pointer-sized handles, as Open MPI's; six in registers, two on
// the stack) and recording them. The program, linked with it and run under the preload
// (test/foreign_mpi.sh), checks that each name the process resolves is libcollx_mpi.so's, and
// that each call reaches the stand-in with every argument and the return value intact.
// Built with FOREIGN_MPI_DLOPEN defined (foreign_mpi_dlopen), the program is not linked with
// the stand-in but loads it through dlopen, as Python loads mpi4py's MPI: the preload's
// MPI_Init and MPI_Init_thread must then refuse, reaching neither MPI.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "pmpi/exports.h"

#define FOREIGN_ARGS uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t
#define FOREIGN_ALL(X) COLLX_MPI_C_EXPORTS(X) COLLX_MPI_F08_EXPORTS(X) X(PMPI_Init)

extern "C" {
#define FOREIGN_DECLARE(name) int name(FOREIGN_ARGS);
FOREIGN_ALL(FOREIGN_DECLARE)
#undef FOREIGN_DECLARE
// The last call the stand-in received: its function's name and arguments.
const char* foreign_last_name();
const uint64_t* foreign_last_args();
}

#ifdef FOREIGN_MPI_LIBRARY

namespace {
const char* g_name = nullptr;
uint64_t g_args[8];
}  // namespace

extern "C" {
const char* foreign_last_name() {
  return g_name;
}
const uint64_t* foreign_last_args() {
  return g_args;
}
// Each returns its name's length, so that the caller can tell the value came back.
#define FOREIGN_DEFINE(name)                                                             \
  __attribute__((visibility("default"))) int name(uint64_t a0, uint64_t a1, uint64_t a2, \
                                                  uint64_t a3, uint64_t a4, uint64_t a5, \
                                                  uint64_t a6, uint64_t a7) {            \
    const uint64_t args[8] = {a0, a1, a2, a3, a4, a5, a6, a7};                           \
    std::memcpy(g_args, args, sizeof args);                                              \
    g_name = #name;                                                                      \
    return static_cast<int>(std::strlen(#name));                                         \
  }
FOREIGN_ALL(FOREIGN_DEFINE)
#undef FOREIGN_DEFINE
}

#elif defined(FOREIGN_MPI_DLOPEN)

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* stand_in = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (stand_in == nullptr) {
    std::fprintf(stderr, "foreign_mpi_dlopen: %s\n", dlerror());
    return 1;
  }
  using Init = int (*)(int*, char***);
  using InitThread = int (*)(int*, char***, int, int*);
  using LastName = const char* (*)();
  // As the program's calls find them: the preload's (it stands first).
  const auto init = reinterpret_cast<Init>(dlsym(RTLD_DEFAULT, "MPI_Init"));
  const auto init_thread = reinterpret_cast<InitThread>(dlsym(RTLD_DEFAULT, "MPI_Init_thread"));
  const auto last = reinterpret_cast<LastName>(dlsym(stand_in, "foreign_last_name"));
  Dl_info info{};
  if (init == nullptr || init_thread == nullptr || last == nullptr ||
      dladdr(reinterpret_cast<void*>(init), &info) == 0 || info.dli_fname == nullptr ||
      std::strstr(info.dli_fname, "libcollx_mpi") == nullptr) {
    std::fprintf(stderr, "foreign_mpi_dlopen: MPI_Init is not libcollx_mpi.so's (preload it)\n");
    return 1;
  }
  int provided = -1;
  const int rc = init(nullptr, nullptr);
  const int rc_thread = init_thread(nullptr, nullptr, 0, &provided);
  std::printf("foreign_mpi_dlopen: MPI_Init %d, MPI_Init_thread %d, the stand-in called: %s\n",
              rc, rc_thread, last() != nullptr ? last() : "nothing");
  return rc != 0 && rc_thread != 0 && provided == -1 && last() == nullptr ? 0 : 1;
}

#else

namespace {

int g_failures = 0;

void expect(bool ok, const char* name, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "foreign_mpi_test: %s: %s\n", name, what);
  ++g_failures;
}

// Resolved as the program's calls are, `name` must be the preload's (its jump), and a call
// through it must reach the stand-in as it was made.
void check(const char* name, int (*fn)(FOREIGN_ARGS), uint64_t salt) {
  Dl_info info{};
  void* resolved = dlsym(RTLD_DEFAULT, name);
  expect(resolved != nullptr && dladdr(resolved, &info) != 0 && info.dli_fname != nullptr &&
             std::strstr(info.dli_fname, "libcollx_mpi") != nullptr,
         name, "not resolved to libcollx_mpi.so (run under its preload: test/foreign_mpi.sh)");
  uint64_t args[8];
  for (int i = 0; i < 8; ++i) args[i] = 0xa5c3000000000000u + (salt << 16) + (0x1111u * i);
  const int rc = fn(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]);
  expect(rc == static_cast<int>(std::strlen(name)), name, "the return value changed");
  expect(foreign_last_name() != nullptr && std::strcmp(foreign_last_name(), name) == 0, name,
         "the stand-in's function was not the one called");
  expect(std::memcmp(foreign_last_args(), args, sizeof args) == 0, name,
         "an argument changed on the way");
}

}  // namespace

int main() {
  uint64_t salt = 1;
#define FOREIGN_CHECK(name) check(#name, &name, salt++);
  COLLX_MPI_C_EXPORTS(FOREIGN_CHECK)
  COLLX_MPI_F08_EXPORTS(FOREIGN_CHECK)
#undef FOREIGN_CHECK
  std::printf("foreign_mpi_test: %llu functions, %d failures\n",
              static_cast<unsigned long long>(salt - 1), g_failures);
  return g_failures == 0 ? 0 : 1;
}

#endif
