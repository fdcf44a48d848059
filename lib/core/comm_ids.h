// Communicator ids: the part of the UCX tag that keeps the messages of one process's
// communicators apart. An id is unique among the communicators of each member process and
// agreed by all members of a communicator.
//
// Creations may run at once in several threads of a process (MPI_THREAD_MULTIPLE programs
// create their communicators lazily, from whichever thread calls first), so an id is reserved,
// not merely counted: each member proposes the first id free in its process, all take the
// largest proposal, and each member reserves that id in its process for the creation (named by
// `owner`, a value every member of that creation computes alike). If any member could not
// reserve it (a concurrent creation in its process holds it), every member releases it and
// the creation tries again above it (comm_create.cc). Ranks of one communicator that are
// threads of one process share the reservation: it is counted, and released by each.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace collx {

class CommIds {
 public:
  static constexpr uint32_t kCount = 1u << 16;  // ids are 16 bits (the UCX tag's top bits)
  static constexpr uint32_t kNone = kCount;     // propose(): every id is taken

  // The first id at or after `start` (wrapping around) that is not reserved here; with
  // start == kNone, after the last id reserved (ids are not reused soon after release).
  uint32_t propose(uint32_t start = kNone) const;
  // Reserves `id` for `owner`: true if it was free or already held by `owner`.
  bool reserve(uint16_t id, uint64_t owner);
  // Undoes one reserve() of `owner`; the id is free again when every one is undone.
  void release(uint16_t id, uint64_t owner);
  // How many reserve() calls found the id held by another owner (tests).
  uint64_t refused() const;

 private:
  struct Holder {
    uint64_t owner;
    int refs;
  };
  mutable std::mutex mu_;
  std::unordered_map<uint16_t, Holder> taken_;
  uint32_t next_ = 0;  // after the last id reserved
  uint64_t refused_ = 0;
};

}  // namespace collx
