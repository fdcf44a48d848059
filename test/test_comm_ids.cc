// Communicator ids (core/comm_ids.h) and how the members of a creation agree on one
// (core/bootstrap.h): the host-side logic behind concurrent communicator creation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
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
                               1, 1000 + i, 0, static_cast<uint64_t>(5 + i), 0, 0,
                               collx::shared_settings(collx::Config{})};
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

TEST_CASE("bootstrap: a member whose creation failed before round 1 stops every rank, with its "
          "code") {
  std::vector<collx::BootHeader> all = headers(3);
  // What a rank with a malformed COLLX_* variable sends: no address, no id, its status.
  all[2] = collx::BootHeader{};
  all[2].magic = collx::kBootMagic;
  all[2].rank = 2;
  all[2].size = 3;
  all[2].failed = COLLX_ERR_CONFIG;
  collx::BootAgreement a;
  for (int rank : {0, 1}) {
    const collx::Status st = collx::decode_boot_headers(all.data(), rank, 3, &a);
    CHECK(st.code() == COLLX_ERR_CONFIG);
    CHECK(st.message().find("rank 2's collx_comm_create failed before it could take part") !=
          std::string::npos);
  }
  all[2].failed = 12345;  // not a status: malformed
  CHECK(collx::decode_boot_headers(all.data(), 0, 3, &a).code() == COLLX_ERR_MISMATCH);
}

TEST_CASE("bootstrap: settings that every rank must share are compared with rank 0's") {
  collx::BootAgreement a;
  const auto decode_all = [&](const std::vector<collx::BootHeader>& all) {
    // Every rank decides alike on the same headers: all go on or all stop, with one message
    // (but for the rank that reports it).
    const collx::Status first = collx::decode_boot_headers(all.data(), 0, 3, &a);
    for (int rank : {1, 2}) {
      const collx::Status st = collx::decode_boot_headers(all.data(), rank, 3, &a);
      CHECK(st.code() == first.code());
      const auto tail = [](const std::string& m) {
        return m.substr(std::min(m.find(':'), m.size()));
      };
      CHECK(tail(st.message()) == tail(first.message()));
    }
    return first;
  };
  collx::Config local;  // settings each rank may have its own of
  local.timeout_s = 5;
  local.spin = 0;
  local.node = "elsewhere";
  local.shm_stores = "cached";
  local.async_min = 0;
  local.profile_file = "/tmp/p.json";
  local.mpi_verbose = true;
  std::vector<collx::BootHeader> all = headers(3);
  all[1].settings = collx::shared_settings(local);
  CHECK(decode_all(all).ok());

  collx::Config tuned;
  tuned.tune = "0-inf:ring";
  all[2].settings = collx::shared_settings(tuned);
  collx::Status st = decode_all(all);
  CHECK(st.code() == COLLX_ERR_CONFIG);
  CHECK(st.message() ==
        "rank 0: COLLX_TUNE differs between rank 0 and rank 2: set it alike on all ranks");
  // With its own settings, a rank shows its value of a string (only hashes travel).
  st = collx::decode_boot_headers(all.data(), 2, 3, &a, &tuned);
  CHECK(st.message() == "rank 2: COLLX_TUNE differs between rank 0 and rank 2 (this rank's: "
                        "\"0-inf:ring\"): set it alike on all ranks");
  const collx::Config defaults;
  st = collx::decode_boot_headers(all.data(), 0, 3, &a, &defaults);
  CHECK(st.message() == "rank 0: COLLX_TUNE differs between rank 0 and rank 2 (this rank's: "
                        "\"\"): set it alike on all ranks");

  collx::Config chunk;
  chunk.shm_chunk = 64 << 10;
  all[2].settings = collx::shared_settings(chunk);
  st = decode_all(all);
  CHECK(st.code() == COLLX_ERR_CONFIG);
  CHECK(st.message() == "rank 0: COLLX_SHM_CHUNK differs between rank 0 (262144) and rank 2 "
                        "(65536): set it alike on all ranks");

  // Every shared setting is compared: each one changed alone is found, by its name.
  const std::vector<std::pair<const char*, void (*)(collx::Config&)>> changes = {
      {"COLLX_ALLREDUCE_ALGO", [](collx::Config& c) { c.algo = "ring"; }},
      {"COLLX_TUNE_ACROSS", [](collx::Config& c) { c.tune_across = "0-inf:ring"; }},
      {"COLLX_RING_SEGMENT", [](collx::Config& c) { c.ring_segment = 4096; }},
      {"COLLX_CHECK", [](collx::Config& c) { c.check = true; }},
      {"COLLX_CMA_MIN", [](collx::Config& c) { c.cma_min = 0; }},
      {"COLLX_SHM_AREAS", [](collx::Config& c) { c.shm_areas = 2; }},
      {"COLLX_STAGING_CHUNK", [](collx::Config& c) { c.staging_chunk = 4096; }},
      {"COLLX_CUDA", [](collx::Config& c) { c.cuda_ipc = false; }},
      {"COLLX_CUDA_TWO_SHOT", [](collx::Config& c) { c.cuda_two_shot = 0; }},
      {"COLLX_CUDA_IPC_MIN", [](collx::Config& c) { c.cuda_ipc_min = 0; }},
      {"COLLX_CUDA_IPC_MIN_TIMESLICED", [](collx::Config& c) { c.cuda_ipc_min_timesliced = 0; }},
      {"COLLX_CUDA_FLAGS_MAX", [](collx::Config& c) { c.cuda_flags_max = 0; }},
      {"COLLX_CUDA_STAGED_GPU_MIN", [](collx::Config& c) { c.cuda_staged_gpu_min = 0; }},
      {"COLLX_PROFILE", [](collx::Config& c) { c.profile = true; }},
  };
  REQUIRE(changes.size() + 2 == collx::kSharedSettings);  // with COLLX_TUNE, COLLX_SHM_CHUNK
  for (const auto& [name, change] : changes) {
    collx::Config c;
    change(c);
    all[2].settings = collx::shared_settings(c);
    st = decode_all(all);
    CHECK(st.code() == COLLX_ERR_CONFIG);
    CHECK(st.message().find(std::string(": ") + name + " differs") != std::string::npos);
  }
}
