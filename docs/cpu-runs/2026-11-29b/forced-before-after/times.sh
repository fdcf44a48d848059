#!/usr/bin/env bash
# The eleven meson specs of the shared-memory tests (test/meson.build at 403d3e3), each run
# with the test as it was (BEFORE, a build of 403d3e3) and as it is (AFTER), one after the
# other: seconds and the test's last line.  times.sh BEFORE_BUILD AFTER_BUILD
for spec in shm_one_shot:2:128K:4 shm_one_shot:3:4K:3 shm_two_shot:2:4K:2 \
            shm_two_shot:4:128K:4 shm_two_shot:5:4K:3 shm_two_shot:8:128K:4 shm_cma:2:4K:4 \
            shm_cma:3:128K:4 shm_cma:4:4K:4 shm_cma:5:128K:4 shm_cma:8:4K:4; do
  IFS=: read -r algo n chunk areas <<< "$spec"
  for b in "$1" "$2"; do
    start=$(date +%s.%N)
    last=$(COLLX_ALLREDUCE_ALGO=$algo COLLX_SHM_CHUNK=$chunk COLLX_SHM_AREAS=$areas \
           mpiexec -n "$n" "$b/test/mpi_allreduce_test" 2>&1 | grep -a "passed,")
    echo "$algo n=$n $chunk areas=$areas $b: $(echo "$(date +%s.%N) - $start" | bc) s, $last"
  done
done
