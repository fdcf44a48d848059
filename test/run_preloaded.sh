#!/usr/bin/env bash
# run_preloaded.sh PRELOAD_LIB NRANKS PROGRAM [ARGS...]: runs an MPI program under the PMPI
# interposer with COLLX_MPI_VERBOSE=1 and fails if the program fails, or if the number of
# MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_c and MPI_Iallreduce_c calls libcollx served
# is not what EXPECT_SERVED says:
# "some" (the default, at least one), "none" (exactly zero: interception off or everything
# passed through) or "off" (interception refused at MPI_Init with a message that says why,
# e.g. a malformed COLLX_* variable: then no statistics, since the settings could not be
# read; with EXPECT_OFF_SAYS, that line must contain its text). Of the served
# calls, exactly EXPECT_FAILED (default 0) must have failed, as the statistics report them;
# no call may have passed through because libcollx could not create or use a communicator,
# and exactly EXPECT_UNFREED (default 0) libcollx communicators may have failed to be freed.
# With EXPECT_UNUSABLE_SAYS, calls must instead have passed through because a communicator was
# unusable, and the first line that says why must contain its text.
# If EXPECT_PASSED is set, exactly that many calls must have passed through (any reason).
# If EXPECT_WAIT_ENDED is set, exactly that many served MPI_Iallreduce operations ("some": at
# least one) must have ended in MPI_Wait (collx_wait in the intercepted C or mpi_f08 MPI_Wait,
# not polling). If EXPECT_HOST_COPIES is set, exactly that many passed-through calls must have
# gone through host copies of their buffers (device buffers, or COLLX_MPI_HOST_COPIES=1).
# If EXPECT_MPI_STARTS is set, served persistent requests must have been started by libcollx,
# and exactly that many by MPI (their communicator freed).
# If EXPECT_ALGO is set, the run profiles (COLLX_PROFILE=1) and some
# communicator's profile must name that algorithm.
# Where MPI_Init counted rank 0's machine's processes (every run on one machine), every
# libcollx communicator made must have been crowded (its threads waking every 10 ms) if they
# outnumber its CPUs, and none otherwise.
set -uo pipefail
lib=$1 n=$2
shift 2
log=$(mktemp)
# stderr through tee into the log, stdout straight through (fd 3). A pipeline, not a process
# substitution: bash 5.2 does not wait for a process substitution's end (not with `wait`
# either), and the log was once read before tee had written the statistics.
{
  mpiexec -n "$n" env LD_PRELOAD="$lib" COLLX_MPI_VERBOSE=1 ${EXPECT_ALGO:+COLLX_PROFILE=1} \
    "$@" 2>&1 1>&3 | tee "$log" >&2
  status=${PIPESTATUS[0]}
} 3>&1
# Each function's statistics (MPI_Allreduce's always, the others' if they were called), summed.
sum() { sed -n "$1" "$log" | awk '{ s += $1; n++ } END { if (n) print s }'; }
served=$(sum 's/.*MPI_[A-Za-z_]* calls (all ranks): \([0-9]*\) served.*/\1/p')
passed=$(sum 's/.*MPI_[A-Za-z_]* calls (all ranks): [0-9]* served, \([0-9]*\) passed through.*/\1/p')
failed=$(sum 's/.* \([0-9]*\) of the served calls failed.*/\1/p')
failed=${failed:-0}
unusable=$(sum 's/.* \([0-9]*\) passed through: communicator unusable.*/\1/p')
unfreed=$(grep -c '^libcollx_mpi: freeing a libcollx communicator failed' "$log")
wait_ended=$(sum 's/.* ended in: MPI_Wait \([0-9]*\),.*/\1/p')
starts=$(sum 's/.* persistent requests started (all ranks): \([0-9]*\) by libcollx.*/\1/p')
mpi_starts=$(sum 's/.* persistent requests started (all ranks): [0-9]* by libcollx, \([0-9]*\) by MPI.*/\1/p')
host_copies=$(sum 's/.* \([0-9]*\) of the passed-through calls on host copies.*/\1/p')
unusable_line=$(grep -m1 '^libcollx_mpi: calls on a communicator of ' "$log")
off=$(grep -c '^libcollx_mpi: interception off: ' "$log")
two='\([0-9]*\)[^0-9]*\([0-9]*\) .*'  # (the first two numbers)
machine=$(sed -n "s/^libcollx_mpi: rank 0's machine: $two/\1 \2/p" "$log")
made=$(sed -n "s/^libcollx_mpi: libcollx communicators made (all ranks): $two/\1 \2/p" "$log")
off_line=$(grep -m1 '^libcollx_mpi: interception off: ' "$log")
algo_seen=0  # profile rows end with their algorithms, separated by commas (then hierarchical's
# between nodes, in parentheses, which are not the row's)
[ -n "${EXPECT_ALGO:-}" ] &&
  algo_seen=$(sed 's/ (across nodes: [a-z_,]*)$//' "$log" | grep -cE "[ ,]${EXPECT_ALGO}(,|\$)")
rm -f "$log"
[ $status -eq 0 ] || exit $status
if [ -n "${EXPECT_ALGO:-}" ] && [ "$algo_seen" -eq 0 ]; then
  echo "no profile names $EXPECT_ALGO" >&2
  exit 1
fi
if [ "${EXPECT_SERVED:-some}" = off ]; then
  if [ -n "${EXPECT_OFF_SAYS:-}" ] && [[ "$off_line" != *"$EXPECT_OFF_SAYS"* ]]; then
    echo "the 'interception off' line does not say '$EXPECT_OFF_SAYS': $off_line" >&2
    exit 1
  fi
  [ "$off" -eq 1 ] && [ -z "$served" ] && { echo "interception off, as expected"; exit 0; }
  echo "expected one 'interception off' line and no statistics; got $off and '$served'" >&2
  exit 1
fi
if [ -z "$served" ]; then
  echo "the interposer printed no statistics (was it preloaded?)" >&2
  exit 1
fi
case "${EXPECT_SERVED:-some}" in
  some) [ "$served" -gt 0 ] || { echo "libcollx served no call" >&2; exit 1; } ;;
  none) [ "$served" -eq 0 ] || { echo "libcollx served $served calls; expected none" >&2; exit 1; } ;;
  *) echo "EXPECT_SERVED must be some or none" >&2; exit 2 ;;
esac
if [ "$unfreed" -ne "${EXPECT_UNFREED:-0}" ]; then
  echo "$unfreed libcollx communicators failed to be freed; expected ${EXPECT_UNFREED:-0}" >&2
  exit 1
fi
if [ -n "${EXPECT_UNUSABLE_SAYS:-}" ]; then
  if [ -z "$unusable" ] || [[ "$unusable_line" != *"$EXPECT_UNUSABLE_SAYS"* ]]; then
    echo "expected calls passed through on unusable communicators, said with" \
      "'$EXPECT_UNUSABLE_SAYS'; got ${unusable:-none} and '$unusable_line'" >&2
    exit 1
  fi
elif [ -n "$unusable" ]; then
  echo "$unusable calls passed through because a communicator was unusable" >&2
  exit 1
fi
if [ -n "$machine" ]; then
  read -r processes cpus <<< "$machine"
  read -r made crowded <<< "$made"
  want=0
  [ "$processes" -gt "$cpus" ] && want=$made
  if [ "$crowded" -ne "$want" ]; then
    echo "$crowded of $made libcollx communicators crowded; expected $want ($processes" \
      "processes on the machine, $cpus CPUs)" >&2
    exit 1
  fi
fi
if [ "$failed" -ne "${EXPECT_FAILED:-0}" ]; then
  echo "$failed served calls failed; expected ${EXPECT_FAILED:-0}" >&2
  exit 1
fi
if [ -n "${EXPECT_PASSED:-}" ] && [ "${passed:-0}" -ne "$EXPECT_PASSED" ]; then
  echo "${passed:-0} calls passed through; expected $EXPECT_PASSED" >&2
  exit 1
fi
if [ -n "${EXPECT_MPI_STARTS:-}" ] &&
   { [ "${starts:-0}" -eq 0 ] || [ "${mpi_starts:-0}" -ne "$EXPECT_MPI_STARTS" ]; }; then
  echo "persistent requests started: ${starts:-0} by libcollx, ${mpi_starts:-0} by MPI;" \
    "expected some and $EXPECT_MPI_STARTS" >&2
  exit 1
fi
if [ -n "${EXPECT_HOST_COPIES:-}" ] && [ "${host_copies:-0}" -ne "$EXPECT_HOST_COPIES" ]; then
  echo "${host_copies:-0} passed-through calls on host copies; expected $EXPECT_HOST_COPIES" >&2
  exit 1
fi
case "${EXPECT_WAIT_ENDED:-}" in
  '') ;;
  some) [ "${wait_ended:-0}" -gt 0 ] || { echo "no operation ended in MPI_Wait" >&2; exit 1; } ;;
  *)
    if [ "${wait_ended:-0}" -ne "$EXPECT_WAIT_ENDED" ]; then
      echo "${wait_ended:-0} operations ended in MPI_Wait; expected $EXPECT_WAIT_ENDED" >&2
      exit 1
    fi ;;
esac
echo "libcollx served $served calls of the allreduce functions ($failed failed)"
