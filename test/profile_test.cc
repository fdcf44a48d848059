// COLLX_PROFILE: makes a known number of allreduces per size bucket (bucket b, b = 0..20:
// b + 1 calls of 2^b - 1 bytes, i.e. of the bucket [2^(b-1), 2^b)), non-blocking ones
// included, then destroys the communicator, which makes rank 0 write the profile.
// test/check_profile.py runs it and compares the JSON with these counts.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  collx_comm_t c = nullptr;
  if (collx_init() != COLLX_SUCCESS || collx_comm_create_mpi(MPI_COMM_WORLD, &c) != COLLX_SUCCESS) {
    std::fprintf(stderr, "profile_test: setup: %s\n", collx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<uint8_t> buf(1 << 20);
  for (int b = 0; b <= 20; ++b) {
    const size_t bytes = (size_t{1} << b) - 1;
    for (int k = 0; k <= b; ++k) {
      collx_status_t st;
      if (k % 2 == 0) {
        st = collx_allreduce(COLLX_IN_PLACE, buf.data(), bytes, COLLX_UINT8, COLLX_MAX, c);
      } else {
        collx_request_t r = nullptr;
        st = collx_iallreduce(COLLX_IN_PLACE, buf.data(), bytes, COLLX_UINT8, COLLX_MAX, c, &r);
        if (st == COLLX_SUCCESS) st = collx_wait(&r);
      }
      if (st != COLLX_SUCCESS) {
        std::fprintf(stderr, "profile_test: %s\n", collx_last_error());
        rc = 1;
      }
    }
  }
  if (collx_comm_destroy(c) != COLLX_SUCCESS) {
    std::fprintf(stderr, "profile_test: destroy: %s\n", collx_last_error());
    rc = 1;
  }
  if (collx_finalize() != COLLX_SUCCESS) {  // a destroy that failed still freed everything
    std::fprintf(stderr, "profile_test: finalize: %s\n", collx_last_error());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
