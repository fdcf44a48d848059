#!/usr/bin/env bash
# test/cuda/reduce_test.cu built for the CPU against a stand-in for the CUDA runtime
# (cuda_runtime.h here: cudaMalloc is aligned_alloc(256), copies are memcpy) and for the kernel
# (fake_reduce.cc: cuda/reduce.h's split, each part reduced by the CPU kernels, aborting if the
# parts do not cover the message or a pack starts off a 16-byte boundary). It checks the test
# itself (offsets, guards, in place, the shared inputs), not the GPU kernel. FAKE_BUG=1 makes
# the stand-in flip the byte before the output where it ran a scalar head: the test must fail.
# Run from the repository root after `ninja -C build`.
set -euo pipefail
here=docs/cpu-runs/2026-11-28/fake-cuda
build() {
  g++ -std=c++20 "$@" -I"$here" -Itest -Ilib -Iinclude -I. -x c++ test/cuda/reduce_test.cu \
    -x none "$here/fake_reduce.cc" lib/reduce/*.cc lib/api/status.cc build/lib/libcollx.so \
    -Wl,-rpath,"$PWD/build/lib"
}
build -O2 -o /tmp/fake_reduce_test
/tmp/fake_reduce_test
{ FAKE_BUG=1 /tmp/fake_reduce_test 2>&1 | tail -2; } ||
  echo "FAKE_BUG=1: exit $? (a failure, as it must be)"
build -O1 -g -fsanitize=address,undefined -o /tmp/fake_reduce_test_asan
/tmp/fake_reduce_test_asan 1000
