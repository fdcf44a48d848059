// The exported MPI functions of libcollx_mpi.so: each is a jump, through a pointer, to
// libcollx_mpi's own function (collx_<name>) or, in a process whose MPI is not the library
// libcollx_mpi.so was built with, to that MPI's function of the same name.
//
// libcollx_mpi.so is built against MPICH's mpi.h: its handles are ints. Preloaded into a
// program of another MPI (Open MPI's handles are pointers), its functions would pass MPICH's
// constants to that MPI and cut the program's handles to 32 bits: Open MPI 4.1 aborted in the
// preload's first call to it (MPI_Comm_create_keyval, "invalid argument"). So before the
// program starts, a constructor compares the PMPI_Init that the process's calls reach with the
// one libcollx_mpi.so was linked with; if they differ, every jump goes to the process's MPI
// (the next definition after this library), registers and stack untouched, and stderr says
// so. libcollx_mpi then never runs: the program runs as without the preload.
//
// An MPI loaded later, through dlopen (Python's mpi4py does so), cannot be sent its calls: the
// MPI libcollx_mpi.so was built with came in with it, and stands first for every MPI name the
// program looks up (a Debian mpi4py of Open MPI aborted in MPICH's MPI_Comm_set_errhandler).
// MPI_Init and MPI_Init_thread (the program's first calls) look for one (late_foreign_mpi) and
// refuse, saying why, rather than start an MPI the program does not use.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>

#include "pmpi/preload.h"

// The jumps' targets: libcollx_mpi's functions, until the constructor below decides.
extern "C" {
#define COLLX_MPI_TARGET(name)                                                            \
  __attribute__((visibility("hidden"), used)) decltype(&collx_##name) collx_jump_##name = \
      &collx_##name;
COLLX_MPI_C_EXPORTS(COLLX_MPI_TARGET)
COLLX_MPI_F08_EXPORTS(COLLX_MPI_TARGET)
#undef COLLX_MPI_TARGET
}

// The jumps (an indirect jump through the target: one instruction on x86-64, three on arm64),
// with the landing pad that indirect-branch tracking wants where it is on.
// clang-format off
#if defined(__x86_64__)
#if defined(__CET__)
#define COLLX_MPI_LANDING "endbr64\n"
#else
#define COLLX_MPI_LANDING ""
#endif
#define COLLX_MPI_JUMP(name) "jmp *collx_jump_" #name "(%rip)\n"
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define COLLX_MPI_LANDING "bti c\n"
#else
#define COLLX_MPI_LANDING ""
#endif
#define COLLX_MPI_JUMP(name)                       \
  "adrp x16, collx_jump_" #name "\n"               \
  "ldr x16, [x16, :lo12:collx_jump_" #name "]\n"   \
  "br x16\n"
#else
#error "lib/pmpi/gate.cc: the exported MPI functions' jumps are written for x86-64 and arm64"
#endif

#define COLLX_MPI_EXPORT(name)                     \
  asm(".pushsection .text\n"                       \
      ".p2align 4\n"                               \
      ".globl " #name "\n"                         \
      ".type " #name ", %function\n"               \
      #name ":\n"                                  \
      COLLX_MPI_LANDING                            \
      COLLX_MPI_JUMP(name)                         \
      ".size " #name ", . - " #name "\n"           \
      ".popsection\n");
// clang-format on
COLLX_MPI_C_EXPORTS(COLLX_MPI_EXPORT)
COLLX_MPI_F08_EXPORTS(COLLX_MPI_EXPORT)
#undef COLLX_MPI_EXPORT

namespace {

void* g_built_with = nullptr;  // the PMPI_Init of the MPI libcollx_mpi.so was built with

// The file of the object that holds `address` ("the program" for the executable).
const char* file_of(void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) return "(none)";
  return info.dli_fname != nullptr && info.dli_fname[0] != '\0' ? info.dli_fname : "the program";
}

__attribute__((constructor)) void choose_targets() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&choose_targets), &self) == 0) return;
  // This library's handle looks a symbol up in it and its dependencies: the MPI it was built
  // with. RTLD_DEFAULT looks it up as the program's calls do.
  void* own = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (own == nullptr) return;
  void* built_with = dlsym(own, "PMPI_Init");
  dlclose(own);
  g_built_with = built_with;
  void* in_process = dlsym(RTLD_DEFAULT, "PMPI_Init");
  if (built_with == nullptr || in_process == built_with) return;
  // The next definition is the process's MPI's, or, for a name it lacks (MPI 4.0's in Open MPI
  // 4.1), the MPI this library was built with: a program of that MPI cannot call it anyway.
#define COLLX_MPI_NEXT(name)                                                 \
  if (void* next = dlsym(RTLD_NEXT, #name)) {                                \
    collx_jump_##name = reinterpret_cast<decltype(collx_jump_##name)>(next); \
  }
  COLLX_MPI_C_EXPORTS(COLLX_MPI_NEXT)
  COLLX_MPI_F08_EXPORTS(COLLX_MPI_NEXT)
#undef COLLX_MPI_NEXT
  std::fprintf(stderr,
               "libcollx_mpi: interception off: this process's MPI is %s, not %s, which "
               "libcollx_mpi.so was built with (their ABIs may differ): every MPI call goes "
               "to the process's MPI unchanged\n",
               file_of(in_process), file_of(built_with));
}

}  // namespace

namespace collx_mpi {

bool late_foreign_mpi() {
  if (g_built_with == nullptr) return false;
  // The loaded objects' names first: dlopen is not for dl_iterate_phdr's callback, which holds
  // the loader's lock.
  struct Names {
    const char* name[512];
    int n = 0;
  } names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* names = static_cast<Names*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
        names->name[names->n++] = info->dlpi_name;
        return names->n == 512 ? 1 : 0;
      },
      &names);
  for (int i = 0; i < names.n; ++i) {
    void* object = dlopen(names.name[i], RTLD_LAZY | RTLD_NOLOAD);
    if (object == nullptr) continue;
    void* init = dlsym(object, "PMPI_Init");  // (in it or its dependencies)
    dlclose(object);
    if (init == nullptr || init == g_built_with) continue;
    std::fprintf(stderr,
                 "libcollx_mpi: MPI_Init refused: this process loaded another MPI, %s, after "
                 "it started (through dlopen, as Python's mpi4py does): the program's MPI calls "
                 "would reach %s, which libcollx_mpi.so was built with and loaded first; "
                 "remove libcollx_mpi.so from LD_PRELOAD for this program\n",
                 file_of(init), file_of(g_built_with));
    return true;
  }
  return false;
}

}  // namespace collx_mpi
