set -uo pipefail; cd /tmp/x; status=0; dir=build-test; asan=build-asan
check() { local name=$1 start=$SECONDS; shift; echo "== $name"; if "$@"; then echo "== $name: ok in $((SECONDS - start)) s"; else echo "== $name FAILED"; status=1; fi; }
  check "the PMPI preload under ASan + UBSan, 3 ranks (leak checking on)" env \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 \
    LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" bash -c \
    'test/run_preloaded.sh "$0" 3 "$1" && test/run_preloaded.sh "$0" 3 "$1" --thread-multiple &&
     test/run_preloaded.sh "$0" 2 "$1" --nonblocking &&
     COLLX_MPI_HOST_COPIES=1 EXPECT_HOST_COPIES=160 test/run_preloaded.sh "$0" 2 "$1" --nonblocking &&
     test/run_preloaded.sh "$0" 2 "$1" --large-count &&
     test/run_preloaded.sh "$0" 2 "$1" --request-free &&
     COLLX_MPI_HOST_COPIES=1 EXPECT_HOST_COPIES=196 EXPECT_MPI_STARTS=8 \
       test/run_preloaded.sh "$0" 2 "$1" --persistent &&
     COLLX_MPI_HOST_COPIES=1 test/run_preloaded.sh "$0" 3 "$1" --persistent-edges &&
     test/run_preloaded.sh "$0" 2 "$1" --self-callback &&
     test/run_preloaded.sh "$0" 2 "$1" --fork &&
     COLLX_TIMEOUT=5 EXPECT_FAILED=9 test/run_preloaded.sh "$0" 3 "$1" --unusable &&
     COLLX_TIMEOUT=10 test/run_preloaded.sh "$0" 3 "$1" --free-pending &&
     COLLX_TIMEOUT=20 EXPECT_FAILED=4 test/run_preloaded.sh "$0" 2 "$1" --busy &&
     COLLX_TIMEOUT=20 test/run_preloaded.sh "$0" 3 "$3" 26 200 &&
     COLLX_TIMEOUT=20 test/run_preloaded.sh "$0" 2 "$3" 19 200 --threads &&
     COLLX_TIMEOUT=20 test/run_preloaded.sh "$0" 2 "$3" 12 300 --threads &&
     EXPECT_WAIT_ENDED=6 test/run_preloaded.sh "$0" 3 "$2"' \
    "$(gcc -print-file-name=libasan.so):$asan/lib/pmpi/libcollx_mpi.so" \
    "$dir/test/pmpi_conformance" "$dir/test/pmpi_fortran_f08" "$dir/test/pmpi_random"
  check "out-of-memory runs under ASan + UBSan (leak checking on)" env \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=stdout \
    ASAN_OPTIONS=detect_leaks=1:log_path=stdout \
    LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" bash -c \
    '"$0" && OOM_RUN=1 "$0" --ranks && LD_PRELOAD="$1" "$2" 2>/dev/null &&
     mpiexec -n 2 env LD_PRELOAD="$1" "$2" --ranks' "$asan/test/oom_test" \
    "$(gcc -print-file-name=libasan.so):$asan/lib/pmpi/libcollx_mpi.so" \
    "$dir/test/pmpi_oom_test"
  check "valgrind memcheck, 2 processes" bash -c \
    'for algo in "" shm_one_shot shm_two_shot shm_cma; do
       env ${algo:+COLLX_ALLREDUCE_ALGO=$algo COLLX_SHM_CHUNK=4K COLLX_SHM_AREAS=2} \
         mpiexec -n 2 valgrind -q --error-exitcode=9 --leak-check=full \
         --errors-for-leak-kinds=definite "$0" || exit 1
     done' "$dir/test/mpi_allreduce_test"
exit $status
