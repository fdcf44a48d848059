// In-process transport: every rank is a thread of one process; a send is copied into the
// matching posted receive (or queued until one is posted). Used by the unit tests so that
// every algorithm runs unchanged, fast and under sanitizers, without UCX or MPI.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/transport.h"

namespace collx {

// Shared by the ranks of one in-process communicator.
class InprocFabric {
 public:
  explicit InprocFabric(int size);
  ~InprocFabric();
  struct Message;
  struct Mailbox;

  // Bytes that rank src has sent to rank dst so far (tests count an algorithm's traffic).
  uint64_t bytes_sent(int src, int dst) const;

 private:
  friend class InprocTransport;
  std::vector<std::unique_ptr<Mailbox>> boxes_;  // one per destination rank
  std::unique_ptr<std::atomic<uint64_t>[]> announced_;  // per rank: its last announcement
  std::unique_ptr<std::atomic<uint64_t>[]> sent_;       // [src * size + dst]
};

class InprocTransport final : public Transport {
 public:
  InprocTransport(InprocFabric& fabric, int rank);
  ~InprocTransport() override;

 protected:
  Status post(Request& r, uint32_t seq) override;
  Status test(Request& r) override;
  void progress() override {}
  void cancel(std::vector<Request>& reqs, collx_status_t why) override;
  bool start_announcing(uint64_t) override { return true; }
  void announce(uint64_t number) override;
  uint64_t announced(bool progress, uint64_t* most) override;

 private:
  InprocFabric& fabric_;
};

}  // namespace collx
