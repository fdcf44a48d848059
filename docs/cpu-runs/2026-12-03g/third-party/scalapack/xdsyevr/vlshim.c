// Preloaded with xdsyevr: prints RANGE, N and the bits of VL and VU as each pdsyevr_ call
// starts (the test then checks that the call left IL, IU, VL and VU unchanged), then calls it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
typedef void Fn(char*, char*, char*, int*, double*, int*, int*, int*, double*, double*, int*,
                int*, int*, int*, double*, double*, int*, int*, int*, double*, int*, int*, int*,
                int*, size_t, size_t, size_t);
void pdsyevr_(char* jobz, char* range, char* uplo, int* n, double* a, int* ia, int* ja,
              int* desca, double* vl, double* vu, int* il, int* iu, int* m, int* nz, double* w,
              double* z, int* iz, int* jz, int* descz, double* work, int* lwork, int* iwork,
              int* liwork, int* info, size_t l1, size_t l2, size_t l3) {
  static Fn* real;
  if (!real) real = (Fn*)dlsym(RTLD_NEXT, "pdsyevr_");
  if (*lwork != -1) {
    unsigned long long bl, bu;
    memcpy(&bl, vl, 8);
    memcpy(&bu, vu, 8);
    fprintf(stderr, "pid %d: pdsyevr_ RANGE=%c N=%d VL=%016llx (%g) VU=%016llx (%g)\n",
            (int)getpid(), *range, *n, bl, *vl, bu, *vu);
  }
  real(jobz, range, uplo, n, a, ia, ja, desca, vl, vu, il, iu, m, nz, w, z, iz, jz, descz, work,
       lwork, iwork, liwork, info, l1, l2, l3);
}
