// The device-buffer matrix through a communicator, for the staging and the CUDA IPC tests:
// every dtype x op at counts around the rank count and the chunk sizes, out of place and in
// place, on memory that a fake driver calls device memory, bitwise against the exact
// reference. Each rank poisons its buffers as soon as its call returns, so that a peer still
// reading them gets a wrong result (or, under TSan, a race).
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/fake_driver.h"
#include "common/inproc.h"
#include "common/pattern.h"

namespace collx::test {

// Shared by the ranks of one run_ranks.
struct DeviceMatrix {
  explicit DeviceMatrix(int p) : p(p), sync(p) {}
  int p;
  std::barrier<> sync;
  std::vector<uint8_t> expected;  // written by rank 0 between barriers
};

// One rank's part, inside run_ranks; c classifies memory through `devs`, which calls the
// buffers memory of CUDA device `device`. `hazard()` after each call: "" or what went wrong
// behind the scenes. Returns the first failure ("" if none).
inline std::string run_device_matrix(DeviceMatrix& m, Comm& c, FakeDriver& devs, int device,
                                     int rank, const std::function<std::string()>& hazard) {
  std::string first;
  const size_t p = static_cast<size_t>(m.p);
  for (size_t count : {size_t{0}, size_t{1}, p - 1, p + 1, size_t{1000}, size_t{5003}}) {
    for (collx_dtype_t d : all_dtypes()) {
      for (collx_op_t op : all_ops()) {
        if (!op_valid(d, op)) continue;
        const size_t bytes = count * collx_dtype_size(d);
        if (rank == 0) {
          m.expected.resize(bytes);
          fill_expected(d, op, m.p, count, m.expected.data());
        }
        m.sync.arrive_and_wait();
        for (bool in_place : {false, true}) {
          std::vector<uint8_t> send(bytes + 1), recv(bytes + 64, 0xab);
          devs.allocs.clear();
          devs.device_memory(send.data(), send.size(), device);
          devs.device_memory(recv.data(), recv.size(), device);
          uint8_t* in = in_place ? recv.data() : send.data();
          fill_input(d, op, rank, count, in);
          AllreduceOp o;
          Status st = make_reducer(d, op, &o.red);
          o.dtype = d;
          o.op = op;
          o.send = in;
          o.recv = recv.data();
          o.count = count;
          if (st.ok()) st = c.check_memory(o.send, o.recv, bytes, "test", &o);
          if (st.ok() && o.mem != MemKind::kDevice) {
            st = error(COLLX_ERR_INTERNAL, "not classified as device memory");
          }
          if (st.ok()) st = c.allreduce(o);
          const std::string behind = hazard();
          const bool ok = st.ok() &&
                          (bytes == 0 || std::memcmp(recv.data(), m.expected.data(), bytes) == 0) &&
                          recv[bytes] == 0xab && recv[bytes + 63] == 0xab && behind.empty();
          // The caller owns its buffers again: a peer still reading them reads garbage.
          std::memset(send.data(), 0xcd, send.size());
          std::memset(recv.data(), 0xcd, recv.size());
          if (!ok && first.empty()) {
            first = "p=" + std::to_string(m.p) + " count " + std::to_string(count) + " " +
                    collx_dtype_name(d) + " " + collx_op_name(op) +
                    (in_place ? " in place" : "") + ": " +
                    (st.ok() ? (behind.empty() ? "wrong result" : behind) : st.message());
          }
          m.sync.arrive_and_wait();  // the buffers go out of scope next
        }
      }
    }
  }
  return first;
}

}  // namespace collx::test
