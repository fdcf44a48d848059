// Communicator ids (core/comm_ids.h) and how the members of a creation agree on one
// (core/bootstrap.h): the host-side logic behind concurrent communicator creation.
#include <catch2/catch.hpp>

#include <vector>

#include "core/bootstrap.h"
#include "core/comm_ids.h"

using collx::CommIds;

TEST_CASE("CommIds: proposals skip reserved ids and wrap around") {
  CommIds ids;
  CHECK(ids.propose() == 0);
  CHECK(ids.reserve(0, 7));
  CHECK(ids.propose() == 1);  // after the last reserved
  CHECK(ids.propose(0) == 1);  // 0 is taken
  CHECK(ids.reserve(5, 8));
  CHECK(ids.propose() == 6);
  CHECK(ids.propose(5) == 6);
  CHECK(ids.propose(3) == 3);
  CHECK(ids.reserve(65535, 9));
  CHECK(ids.propose() == 1);      // after 65535 comes 0 (taken), then 1
  CHECK(ids.propose(65535) == 1);
  ids.release(0, 7);
  CHECK(ids.propose(65535) == 0);  // free again
}

TEST_CASE("CommIds: a reservation is held by one owner, counted, and released by it") {
  CommIds ids;
  CHECK(ids.reserve(4, 100));
  CHECK(ids.reserve(4, 100));   // a second rank of the same creation in this process
  CHECK_FALSE(ids.reserve(4, 200));  // another creation
  CHECK(ids.refused() == 1);
  ids.release(4, 200);          // not its holder: no effect
  CHECK_FALSE(ids.reserve(4, 200));
  ids.release(4, 100);
  CHECK_FALSE(ids.reserve(4, 200));  // still held once
  ids.release(4, 100);
  CHECK(ids.reserve(4, 200));   // free: anyone may take it
  ids.release(4, 100);          // a stale release of the old holder does nothing
  CHECK_FALSE(ids.reserve(4, 100));
}

TEST_CASE("CommIds: with every id reserved there is nothing to propose") {
  CommIds ids;
  for (uint32_t id = 0; id < CommIds::kCount; ++id) REQUIRE(ids.reserve(static_cast<uint16_t>(id), 1));
  CHECK(ids.propose() == CommIds::kNone);
  CHECK(ids.propose(123) == CommIds::kNone);
  ids.release(40000, 1);
  CHECK(ids.propose(3) == 40000);
}

namespace {

std::vector<collx::BootHeader> headers(int size) {
  std::vector<collx::BootHeader> all(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) {
    all[i] = collx::BootHeader{collx::kBootMagic, i, size, static_cast<uint32_t>(10 + i), 64,
                               1, 1000 + i, 0, static_cast<uint64_t>(5 + i)};
  }
  return all;
}

}  // namespace

TEST_CASE("bootstrap: the largest proposal is agreed, and the owner names the creation") {
  std::vector<collx::BootHeader> all = headers(3);
  collx::BootAgreement a, b;
  REQUIRE(collx::decode_boot_headers(all.data(), 0, 3, &a).ok());
  CHECK(a.comm_id == 12);
  // Every member computes the same owner, whatever its rank and its proposal.
  all[0].comm_id = 40;
  REQUIRE(collx::decode_boot_headers(all.data(), 2, 3, &b).ok());
  CHECK(b.comm_id == 40);
  CHECK(b.owner == a.owner);
  // Another creation call of any member process: another owner.
  all[1].creation += 1;
  REQUIRE(collx::decode_boot_headers(all.data(), 0, 3, &b).ok());
  CHECK(b.owner != a.owner);
  all[1].creation -= 1;
  all[2].pid += 1;
  REQUIRE(collx::decode_boot_headers(all.data(), 0, 3, &b).ok());
  CHECK(b.owner != a.owner);
}

TEST_CASE("bootstrap: a member whose process has no free id makes creation fail, saying so") {
  std::vector<collx::BootHeader> all = headers(2);
  all[1].comm_id = CommIds::kNone;
  collx::BootAgreement a;
  const collx::Status st = collx::decode_boot_headers(all.data(), 0, 2, &a);
  CHECK(st.code() == COLLX_ERR_NO_MEMORY);
  CHECK(st.message().find("rank 1's process has no free communicator id") != std::string::npos);
  all[1].comm_id = CommIds::kNone + 1;  // beyond: malformed
  CHECK(collx::decode_boot_headers(all.data(), 0, 2, &a).code() == COLLX_ERR_MISMATCH);
}
