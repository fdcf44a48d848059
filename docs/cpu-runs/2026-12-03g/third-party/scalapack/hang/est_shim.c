// Preloaded with ScaLAPACK: on the first pdlacon_ call of an estimate (KASE == 0) sets EST to
// zero, the fix of ScaLAPACK's pull request #122 (2.2.1, Debian 12's, reads EST, which its
// callers leave uninitialised, on later calls: processes that hold different values take
// different branches and wait in different calls). EST_SHIM=print prints EST there instead
// and changes nothing. Build: gcc -O2 -shared -fPIC -o est_shim.so est_shim.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
typedef void Fn(int*, double*, int*, int*, int*, double*, int*, int*, int*, int*, double*, int*);
void pdlacon_(int* n, double* v, int* iv, int* jv, int* descv, double* x, int* ix, int* jx,
              int* descx, int* isgn, double* est, int* kase) {
  static Fn* real;
  if (!real) real = (Fn*)dlsym(RTLD_NEXT, "pdlacon_");
  const char* mode = getenv("EST_SHIM");
  if (*kase == 0 && mode && *mode == 'p') {
    fprintf(stderr, "pid %d: pdlacon_ N=%d EST on entry %a\n", (int)getpid(), *n, *est);
  } else if (*kase == 0) {
    *est = 0.0;
  }
  real(n, v, iv, jv, descv, x, ix, jx, descx, isgn, est, kase);
}
