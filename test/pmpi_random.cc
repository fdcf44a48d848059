// An ordinary MPI program (no libcollx calls) that does, in a random order drawn from one
// seed, what applications do with MPI_Allreduce and MPI_Iallreduce, for the PMPI interposer:
// run it plain (MPICH's own answers check the program) and with LD_PRELOAD=libcollx_mpi.so.
//   pmpi_random SEED STEPS [--threads]
// Each step is one of (the same on every rank, from SEED):
//  - post an MPI_Iallreduce (or MPI_Iallreduce_c: each rank picks its own; or, one in three,
//    a persistent MPI_Allreduce_init or MPI_Allreduce_init_c, started at once by MPI_Start;
//    or, one in six, MPI_Start again of one of the last four persistent requests made, on
//    every rank that holds it, after MPI_Wait where it is still active there, its buffers
//    refilled in place; each is freed when a fifth is made, or at the end) on one of up to
//    five live communicators: MPI_COMM_WORLD (or, with --threads, the thread's dup of it) and
//    those created from any live one (below; splits have colors and reordered keys, so
//    different groups run different collectives at once);
//  - a blocking MPI_Allreduce (or MPI_Allreduce_c) on one, with operations outstanding on it
//    and on others;
//  - complete outstanding operations: each rank its own random subset, in its own order, by
//    one of MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Testall,
//    MPI_Testany, MPI_Testsome and MPI_Request_get_status (then MPI_Wait) (so ranks wait for
//    different operations at the same time, which MPI's progress rule allows);
//  - create a communicator from a live one (MPI_Comm_dup or MPI_Comm_idup, MPI_Comm_split,
//    MPI_Intercomm_merge of an intercommunicator between its even and odd ranks,
//    MPI_Comm_split_type or MPI_Comm_create_group of some of its ranks), or free one, possibly
//    with operations on it outstanding.
// Every call is a random served type x op (integers, floating types, complex sums, MPI_BYTE, a
// Fortran type) or, one in eight, one the interposer passes to MPI (a user-defined op,
// MPI_MAXLOC on MPI_2INT, MPI_LAND), with counts around the algorithms' bounds or anywhere
// below 2^18, in place or not, each rank's buffers 0 - 7 bytes off malloc's alignment. Each
// result is compared bitwise with the exact one, with guard bytes before and after it; send
// buffers must be unchanged. At the end every operation is completed; the communicators left are
// freed, or left to MPI_Finalize (from the seed; those from MPI_Comm_idup are always freed).
// --threads: MPI_THREAD_MULTIPLE, and two threads per process, each running its own sequence
// (seeds SEED and SEED + 1) on its own dup of MPI_COMM_WORLD and what it creates from it.
// Prints "N passed, N failed"; exit status 1 on any failure. PMPI_RANDOM_TRACE=1: each rank
// also says on stderr, with the time (CLOCK_MONOTONIC, s), each call it makes before making
// it, and the world ranks of each communicator it creates (to find where a run stalls).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/mpi_finish.h"
#include "common/pattern.h"

using namespace collx::test;

namespace {

int g_rank = 0;
std::atomic<int> g_passed{0}, g_failed{0};

const bool g_trace = std::getenv("PMPI_RANDOM_TRACE") != nullptr;
void trace(const std::string& what) {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  std::fprintf(stderr, "trace %ld.%03ld rank %d: %s\n", static_cast<long>(t.tv_sec % 10000),
               t.tv_nsec / 1000000, g_rank, what.c_str());
}

void expect(bool ok, const std::string& what) {
  ok ? ++g_passed : ++g_failed;
  if (!ok && g_failed <= 20) std::fprintf(stderr, "rank %d: FAILED %s\n", g_rank, what.c_str());
}

// The MPI types served, with the libcollx dtype that has their layout (for the reference).
struct Type {
  MPI_Datatype type;
  collx_dtype_t d;
  const char* name;
};
const Type kTypes[] = {
    {MPI_INT8_T, COLLX_INT8, "MPI_INT8_T"},       {MPI_UINT8_T, COLLX_UINT8, "MPI_UINT8_T"},
    {MPI_INT16_T, COLLX_INT16, "MPI_INT16_T"},    {MPI_UINT16_T, COLLX_UINT16, "MPI_UINT16_T"},
    {MPI_INT32_T, COLLX_INT32, "MPI_INT32_T"},    {MPI_UINT32_T, COLLX_UINT32, "MPI_UINT32_T"},
    {MPI_INT64_T, COLLX_INT64, "MPI_INT64_T"},    {MPI_UINT64_T, COLLX_UINT64, "MPI_UINT64_T"},
    {MPI_FLOAT, COLLX_FLOAT32, "MPI_FLOAT"},      {MPI_DOUBLE, COLLX_FLOAT64, "MPI_DOUBLE"},
    {MPI_INT, COLLX_INT32, "MPI_INT"},            {MPI_LONG, COLLX_INT64, "MPI_LONG"},
    {MPI_CHAR, COLLX_INT8, "MPI_CHAR"},           {MPI_BYTE, COLLX_UINT8, "MPI_BYTE"},
    {MPI_UNSIGNED_SHORT, COLLX_UINT16, "MPI_UNSIGNED_SHORT"},
    {MPI_DOUBLE_PRECISION, COLLX_FLOAT64, "MPI_DOUBLE_PRECISION"},
    {MPI_INTEGER, COLLX_INT32, "MPI_INTEGER"}};

struct Op {
  MPI_Op op;
  collx_op_t o;
  const char* name;
};
const Op kOps[] = {{MPI_SUM, COLLX_SUM, "sum"},   {MPI_PROD, COLLX_PROD, "prod"},
                   {MPI_MIN, COLLX_MIN, "min"},   {MPI_MAX, COLLX_MAX, "max"},
                   {MPI_BAND, COLLX_BAND, "band"}, {MPI_BOR, COLLX_BOR, "bor"},
                   {MPI_BXOR, COLLX_BXOR, "bxor"}};

bool allowed(const Type& t, const Op& o) {
  const bool bitwise = o.o == COLLX_BAND || o.o == COLLX_BOR || o.o == COLLX_BXOR;
  if (t.type == MPI_BYTE) return bitwise;
  return op_valid(t.d, o.o);
}

void user_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) {  // (the buffers may be off int's alignment)
    int a = 0, b = 0;
    std::memcpy(&a, static_cast<char*>(in) + 4 * i, 4);
    std::memcpy(&b, static_cast<char*>(inout) + 4 * i, 4);
    b += a;
    std::memcpy(static_cast<char*>(inout) + 4 * i, &b, 4);
  }
}

// The complex type whose parts are of served type `t` (MPI_DATATYPE_NULL if none is drawn).
MPI_Datatype complex_of(MPI_Datatype t) {
  if (t == MPI_FLOAT) return MPI_C_FLOAT_COMPLEX;
  if (t == MPI_DOUBLE) return MPI_C_DOUBLE_COMPLEX;
  if (t == MPI_DOUBLE_PRECISION) return MPI_DOUBLE_COMPLEX;
  return MPI_DATATYPE_NULL;
}

// What one call reduces: a served type x op (or the complex type of a served floating type,
// with MPI_SUM: served as sums of the parts), or one of three the interposer passes to MPI.
enum Passed { kNone, kUserOp, kMaxloc, kLand };
struct Case {
  const Type* t = nullptr;
  const Op* o = nullptr;
  bool complex = false;  // complex_of(t->type) instead of t, each element two of t
  bool persistent = false;  // posted: through MPI_Allreduce_init and MPI_Start
  bool again = false;       // persistent: instead, MPI_Start of an earlier one (pick: which)
  unsigned pick = 0;
  Passed passed = kNone;
  size_t count = 0;
  bool in_place = false;
};

MPI_Op g_user_sum = MPI_OP_NULL;

MPI_Datatype type_of(const Case& c) {
  if (c.passed == kMaxloc) return MPI_2INT;
  if (c.passed != kNone) return MPI_INT;
  return c.complex ? complex_of(c.t->type) : c.t->type;
}
MPI_Op op_of(const Case& c) {
  if (c.passed == kUserOp) return g_user_sum;
  if (c.passed == kMaxloc) return MPI_MAXLOC;
  if (c.passed == kLand) return MPI_LAND;
  return c.o->op;
}

size_t element_size(const Case& c) {
  int size = 0;
  MPI_Type_size(type_of(c), &size);
  return static_cast<size_t>(size);
}

// A served case's count in elements of its layout type t->d.
size_t elements(const Case& c) { return c.count * (c.complex ? 2 : 1); }

std::string describe(const Case& c) {
  std::string s;
  switch (c.passed) {
    case kUserOp: s = "MPI_INT user-defined sum"; break;
    case kMaxloc: s = "MPI_2INT MPI_MAXLOC"; break;
    case kLand: s = "MPI_INT MPI_LAND"; break;
    default: s = std::string(c.complex ? "complex of " : "") + c.t->name + " " + c.o->name;
  }
  return s + " count " + std::to_string(c.count) + (c.in_place ? " in place" : "");
}

// Rank r's input (`buf`, at any alignment) and the exact result over p ranks.
void fill(const Case& c, int r, void* buf) {
  if (c.passed == kUserOp) return fill_input(COLLX_INT32, COLLX_SUM, r, c.count, buf);
  if (c.passed == kNone) return fill_input(c.t->d, c.o->o, r, elements(c), buf);
  auto* b = static_cast<uint8_t*>(buf);
  for (size_t i = 0; i < c.count; ++i) {
    if (c.passed == kMaxloc) {  // {value, index}: MPI's answer is the max, lowest index
      const int v[2] = {static_cast<int>(value(COLLX_MAX, true, r, i)), r};
      std::memcpy(b + 8 * i, v, 8);
    } else {
      const int v = (i + static_cast<size_t>(r)) % 7 != 0;  // (MPICH copies a lone rank's)
      std::memcpy(b + 4 * i, &v, 4);
    }
  }
}
void fill_result(const Case& c, int p, void* buf) {
  auto* b = static_cast<uint8_t*>(buf);
  if (c.passed == kUserOp) return fill_expected(COLLX_INT32, COLLX_SUM, p, c.count, buf);
  if (c.passed == kNone) return fill_expected(c.t->d, c.o->o, p, elements(c), buf);
  for (size_t i = 0; i < c.count; ++i) {
    if (c.passed == kMaxloc) {
      int v[2] = {static_cast<int>(value(COLLX_MAX, true, 0, i)), 0};
      for (int r = 1; r < p; ++r) {
        const int x = static_cast<int>(value(COLLX_MAX, true, r, i));
        if (x > v[0]) v[0] = x, v[1] = r;
      }
      std::memcpy(b + 8 * i, v, 8);
    } else {
      int all = 1;
      for (int r = 0; r < p; ++r) all &= (i + static_cast<size_t>(r)) % 7 != 0;
      std::memcpy(b + 4 * i, &all, 4);
    }
  }
}

// One call's buffers: `at` bytes (this rank's own offset) of guard before each, 16 after the
// result.
constexpr uint8_t kGuard = 0xcd;
struct Call {
  Case c;
  int p = 1, r = 0;  // the communicator's size, this rank's rank in it
  size_t at = 0;
  std::vector<uint8_t> in, out;
  MPI_Request req = MPI_REQUEST_NULL;
  std::string what;
  int slot = -1;  // a persistent request's (Run::slots_)
};

void prepare(Call& k, MPI_Comm comm, std::mt19937& mine) {
  MPI_Comm_rank(comm, &k.r);
  MPI_Comm_size(comm, &k.p);
  k.at = mine() % 8;
  const size_t bytes = k.c.count * element_size(k.c);
  k.in.assign(k.at + bytes, kGuard);
  fill(k.c, k.r, k.in.data() + k.at);
  k.out.assign(k.at + bytes + 16, kGuard);
  if (k.c.in_place) std::copy(k.in.begin(), k.in.end(), k.out.begin());
}

// Both buffers after the call: the result between untouched guards, the input unchanged.
void check(const Call& k, int rc) {
  std::vector<uint8_t> want(k.out.size(), kGuard), input(k.in.size(), kGuard);
  fill_result(k.c, k.p, want.data() + k.at);
  fill(k.c, k.r, input.data() + k.at);
  expect(rc == MPI_SUCCESS && k.out == want && (k.c.in_place || k.in == input),
         k.what + " at +" + std::to_string(k.at));
}

// One thread's sequence.
class Run {
 public:
  Run(unsigned seed, MPI_Comm base, const char* label)
      : seed_(seed), shared_(seed), mine_(seed * 7919u + 17u + static_cast<unsigned>(g_rank)),
        label_(label) {
    comms_.push_back(base);
    idup_.push_back(false);
  }

  void step(int s) {
    step_ = s;
    const unsigned what = shared_() % 100;
    if (what < 45) call(true);
    else if (what < 65) call(false);
    else if (what < 85) complete(false);
    else if (what < 93) create();
    else free_one();
  }

  // Completes everything; frees what this run created, or leaves it to MPI_Finalize (but
  // those from MPI_Comm_idup: see idup_).
  void end() {
    complete(true);
    for (size_t s = 0; s < kSlots; ++s) retire(s);
    const bool leave = shared_() % 2 == 0;
    for (size_t i = 1; i < comms_.size(); ++i) {
      if (comms_[i] != MPI_COMM_NULL && (!leave || idup_[i])) MPI_Comm_free(&comms_[i]);
    }
  }

 private:
  std::string where() const {
    return std::string(label_) + "seed " + std::to_string(seed_) + " step " +
           std::to_string(step_) + ": ";
  }

  Case draw() {
    Case c;
    const unsigned kind = shared_() % 24;  // one in eight passed to MPI
    c.passed = kind == 0 ? kUserOp : kind == 1 ? kMaxloc : kind == 2 ? kLand : kNone;
    do {
      c.t = &kTypes[shared_() % std::size(kTypes)];
      c.o = &kOps[shared_() % std::size(kOps)];
    } while (!allowed(*c.t, *c.o));
    static const size_t bounds[] = {0, 1, 2, 3, 7, 100, 1024, 4099, 16384, 65539, 262147};
    const size_t b = bounds[shared_() % std::size(bounds)], any = shared_() % (1u << 18);
    c.count = shared_() % 4 != 0 ? b : any;
    // One floating-point sum in three is the complex type's (decided by a draw already made,
    // so that each seed's sequence stays what it was before complex types were served).
    c.complex = c.passed == kNone && c.o->op == MPI_SUM &&
                complex_of(c.t->type) != MPI_DATATYPE_NULL && (any >> 3) % 3 == 0;
    c.in_place = shared_() % 2 == 1;
    c.persistent = (any >> 7) % 3 == 0;  // (likewise)
    c.again = c.persistent && (any >> 9) % 2 == 0;
    c.pick = any >> 10;
    return c;
  }

  MPI_Comm pick() {
    picked_ = shared_() % comms_.size();
    return comms_[picked_];
  }
  size_t picked_ = 0;

  // An MPI_Iallreduce (kept outstanding) or an MPI_Allreduce (checked at once); each rank
  // picks the int or the large-count function for itself.
  void call(bool nonblocking) {
    Call k;
    k.c = draw();
    MPI_Comm comm = pick();
    if (nonblocking && k.c.persistent && k.c.again && made_ > 0) {
      return start_again(k.c.pick % std::min(made_, kSlots));
    }
    if (nonblocking && k.c.persistent) retire(made_++ % kSlots);  // (its slot, next)
    if (comm == MPI_COMM_NULL) return;  // (not a member of that group)
    prepare(k, comm, mine_);
    const bool large = mine_() % 2 == 1;
    k.what = where() + (nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce") + (large ? "_c " : " ") +
             describe(k.c);
    if (!nonblocking) k.what += " (" + std::to_string(outstanding_.size()) + " outstanding)";
    const void* send = k.c.in_place ? MPI_IN_PLACE : k.in.data() + k.at;
    void* recv = k.out.data() + k.at;
    const MPI_Datatype type = type_of(k.c);
    const MPI_Op op = op_of(k.c);
    const MPI_Count n = static_cast<MPI_Count>(k.c.count);
    int rc = MPI_SUCCESS;
    if (nonblocking && k.c.persistent) {
      k.what = where() + "MPI_Allreduce_init" + (large ? "_c " : " ") + describe(k.c);
      if (g_trace) trace(k.what + " comm " + std::to_string(picked_));
      rc = large ? MPI_Allreduce_init_c(send, recv, n, type, op, comm, MPI_INFO_NULL, &k.req)
                 : MPI_Allreduce_init(send, recv, static_cast<int>(n), type, op, comm,
                                      MPI_INFO_NULL, &k.req);
      if (rc == MPI_SUCCESS) rc = MPI_Start(&k.req);
      expect(rc == MPI_SUCCESS, k.what + ": the init and start");
      if (rc != MPI_SUCCESS) return;
      k.slot = static_cast<int>((made_ - 1) % kSlots);
      held_[k.slot] = kActive;
      outstanding_.push_back(std::move(k));
      return;
    }
    if (g_trace) trace(k.what + " comm " + std::to_string(picked_));
    if (nonblocking) {
      rc = large ? MPI_Iallreduce_c(send, recv, n, type, op, comm, &k.req)
                 : MPI_Iallreduce(send, recv, static_cast<int>(n), type, op, comm, &k.req);
      expect(rc == MPI_SUCCESS, k.what + ": the post");
      if (rc == MPI_SUCCESS) outstanding_.push_back(std::move(k));
      return;
    }
    rc = large ? MPI_Allreduce_c(send, recv, n, type, op, comm)
               : MPI_Allreduce(send, recv, static_cast<int>(n), type, op, comm);
    check(k, rc);
  }

  // A dup (MPI_Comm_dup or MPI_Comm_idup), a split (colors and reordered keys; or the
  // intracommunicator merged from an intercommunicator between the parent's even and odd
  // ranks), a split by shared memory, or a group of some ranks in reverse order
  // (MPI_Comm_create_group, called by its members only: the others hold MPI_COMM_NULL in that
  // slot, and so in those made from it, and skip the calls on it). Which variant comes from
  // `salt`, so that every seed draws what it drew before the variants.
  void create() {
    MPI_Comm parent = pick();
    const unsigned kind = shared_() % 4, colors = 1 + shared_() % 3, salt = shared_() % 1000;
    if (comms_.size() >= 5) return;  // (the draws above are the same on every rank)
    if (g_trace) {
      trace(where() + "create kind " + std::to_string(kind) + " salt " + std::to_string(salt) +
            " from comm " + std::to_string(picked_));
    }
    MPI_Comm made = MPI_COMM_NULL;
    bool idup = false;
    int r = 0, q = 1;
    if (parent != MPI_COMM_NULL) {
      MPI_Comm_rank(parent, &r);
      MPI_Comm_size(parent, &q);
    }
    auto member = [&](int x) { return x == 0 || (static_cast<unsigned>(x) * 3u + salt) % 4u != 0; };
    if (parent == MPI_COMM_NULL) {
    } else if (kind == 0 && salt % 2 == 0) {
      MPI_Comm_dup(parent, &made);
    } else if (kind == 0) {
      MPI_Request req;
      MPI_Comm_idup(parent, &made, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      idup = true;
    } else if (kind == 1 && salt % 3 == 0 && q > 1) {
      const int half_of = r % 2;  // leaders: the parent's ranks 0 and 1
      MPI_Comm half, inter;
      MPI_Comm_split(parent, half_of, r, &half);
      MPI_Intercomm_create(half, 0, parent, 1 - half_of, static_cast<int>(salt), &inter);
      MPI_Intercomm_merge(inter, half_of == static_cast<int>(salt % 2), &made);
      MPI_Comm_free(&inter);
      MPI_Comm_free(&half);
    } else if (kind == 1) {
      const int color = static_cast<int>((static_cast<unsigned>(r) * 5u + salt) % colors);
      const int key = static_cast<int>((static_cast<unsigned>(q - r) * 3u + salt) % 7u);
      MPI_Comm_split(parent, color, key, &made);
    } else if (kind == 2) {
      MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, q - r, MPI_INFO_NULL, &made);
    } else if (member(r)) {
      std::vector<int> ranks;
      for (int x = q - 1; x >= 0; --x) {
        if (member(x)) ranks.push_back(x);
      }
      MPI_Group all, some;
      MPI_Comm_group(parent, &all);
      MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &some);
      MPI_Comm_create_group(parent, some, static_cast<int>(salt), &made);
      MPI_Group_free(&some);
      MPI_Group_free(&all);
    }
    if (g_trace && made != MPI_COMM_NULL) {
      int n = 0;
      MPI_Comm_size(made, &n);
      MPI_Group g, w;
      MPI_Comm_group(made, &g);
      MPI_Comm_group(MPI_COMM_WORLD, &w);
      std::vector<int> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
      for (int x = 0; x < n; ++x) in[static_cast<size_t>(x)] = x;
      MPI_Group_translate_ranks(g, n, in.data(), w, out.data());
      char m[256] = "";
      for (size_t x = 0, at = 0; x < out.size() && at < sizeof m - 12; ++x) {
        at += static_cast<size_t>(std::snprintf(m + at, sizeof m - at, " %d", out[x]));
      }
      trace(where() + "made comm " + std::to_string(comms_.size()) + " of world ranks" + m);
      MPI_Group_free(&g);
      MPI_Group_free(&w);
    }
    comms_.push_back(made);
    idup_.push_back(idup);
  }

  void free_one() {
    const size_t i = 1 + shared_() % 4;
    if (i >= comms_.size()) return;
    if (g_trace) trace(where() + "free comm " + std::to_string(i));
    if (comms_[i] != MPI_COMM_NULL) MPI_Comm_free(&comms_[i]);
    comms_.erase(comms_.begin() + static_cast<long>(i));
    idup_.erase(idup_.begin() + static_cast<long>(i));
  }

  // Completes a random subset of this rank's outstanding operations (all of them with `all`),
  // by one completion call drawn for this rank. What completed is read from the call's outputs
  // (a persistent request stays, inactive): its slot is then set to MPI_REQUEST_NULL here, so
  // no inactive persistent request is passed again (MPICH 4.0.2 hangs on its own), and the
  // persistent requests are freed at the end. MPI_Testall is not drawn while a persistent
  // request is among them (MPICH's fails its own: MPI_ERR_IN_STATUS without an error).
  void complete(bool all) {
    std::vector<Call> now, kept;
    for (Call& k : outstanding_) (all || mine_() % 2 == 0 ? now : kept).push_back(std::move(k));
    outstanding_ = std::move(kept);
    if (now.empty()) return;
    std::shuffle(now.begin(), now.end(), mine_);
    unsigned how = mine_() % 9;
    const bool any_persistent =
        std::any_of(now.begin(), now.end(), [](const Call& k) { return k.c.persistent; });
    if (how == 5 && any_persistent) how = 2;
    static const char* const names[] = {"MPI_Wait",    "MPI_Test",    "MPI_Waitall",
                                        "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
                                        "MPI_Testany", "MPI_Testsome",
                                        "MPI_Request_get_status, then MPI_Wait"};
    std::vector<MPI_Request> reqs;
    for (Call& k : now) {
      if (g_trace) trace(where() + names[how] + " of: " + k.what);
    }
    for (Call& k : now) {
      k.what += std::string(", completed by ") + names[how];
      reqs.push_back(k.req);
    }
    const int n = static_cast<int>(reqs.size());
    MPI_Request* rs = reqs.data();
    std::vector<int> rcs(reqs.size(), MPI_SUCCESS), index(reqs.size());
    std::vector<MPI_Status> st(reqs.size());
    auto null = [](MPI_Request r) { return r == MPI_REQUEST_NULL; };
    auto done = [&] { return std::all_of(reqs.begin(), reqs.end(), null); };
    auto failed = [&] { return std::any_of(rcs.begin(), rcs.end(), [](int x) { return x != 0; }); };
    auto ended = [&](int i) { rs[i] = MPI_REQUEST_NULL; };  // (a persistent one: inactive)
    const double deadline = MPI_Wtime() + 120;
    int flag = 0, outcount = 0, rc = MPI_SUCCESS;
    while (!done() && rc == MPI_SUCCESS && !failed() && MPI_Wtime() < deadline) {
      switch (how) {
        case 0:
          for (int i = 0; i < n; ++i) {
            if (null(rs[i])) continue;
            rcs[i] = MPI_Wait(&rs[i], MPI_STATUS_IGNORE);
            ended(i);
          }
          break;
        case 1:
          for (int i = 0; i < n; ++i) {
            if (null(rs[i])) continue;
            rcs[i] = MPI_Test(&rs[i], &flag, MPI_STATUS_IGNORE);
            if (flag) ended(i);
          }
          break;
        case 2:
          rc = MPI_Waitall(n, rs, st.data());
          for (int i = 0; i < n; ++i) ended(i);
          break;
        case 3:
          rc = MPI_Waitany(n, rs, index.data(), MPI_STATUS_IGNORE);
          if (index[0] != MPI_UNDEFINED) ended(index[0]);
          break;
        case 4:
          rc = MPI_Waitsome(n, rs, &outcount, index.data(), st.data());
          for (int j = 0; outcount != MPI_UNDEFINED && j < outcount; ++j) ended(index[j]);
          break;
        case 5:
          rc = MPI_Testall(n, rs, &flag, st.data());
          for (int i = 0; flag && i < n; ++i) ended(i);
          break;
        case 6:
          rc = MPI_Testany(n, rs, index.data(), &flag, MPI_STATUS_IGNORE);
          if (flag && index[0] != MPI_UNDEFINED) ended(index[0]);
          break;
        case 7:
          rc = MPI_Testsome(n, rs, &outcount, index.data(), st.data());
          for (int j = 0; outcount != MPI_UNDEFINED && j < outcount; ++j) ended(index[j]);
          break;
        default:
          for (int i = 0; i < n; ++i) {
            if (null(rs[i])) continue;
            rcs[i] = MPI_Request_get_status(rs[i], &flag, MPI_STATUS_IGNORE);
            if (rcs[i] == MPI_SUCCESS && flag) {
              rcs[i] = MPI_Wait(&rs[i], MPI_STATUS_IGNORE);
              ended(i);
            }
          }
          break;
      }
    }
    if (!done()) {  // (an error was reported above, or the deadline passed: give up)
      expect(false, now.front().what + ": " + std::to_string(n) + " not completed (rc " +
                        std::to_string(rc) + ")");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < n; ++i) {
      check(now[i], rc == MPI_SUCCESS ? rcs[i] : rc);
      if (now[i].c.persistent) park(std::move(now[i]));
    }
  }

  // The persistent requests: the last kSlots made, slot by slot in the order made, the same
  // slot on every rank (empty on a rank that is not a member of its communicator, or once
  // freed). Each is active (its call in outstanding_) or inactive (in slots_).
  static constexpr size_t kSlots = 4;
  enum Held { kEmpty, kActive, kInactive };

  void park(Call k) {  // a persistent request's call, completed
    const auto s = static_cast<size_t>(k.slot);
    slots_[s] = std::move(k);
    held_[s] = kInactive;
  }

  // Slot s's request inactive on this rank, if it holds one (MPI_Wait if active).
  void settle(size_t s) {
    if (held_[s] != kActive) return;
    const auto it = std::find_if(outstanding_.begin(), outstanding_.end(),
                                 [&](const Call& k) { return k.slot == static_cast<int>(s); });
    Call k = std::move(*it);
    outstanding_.erase(it);
    k.what += ", completed by MPI_Wait before its next start or its free";
    if (g_trace) trace(where() + "settle: " + k.what);
    check(k, MPI_Wait(&k.req, MPI_STATUS_IGNORE));
    park(std::move(k));
  }

  // Slot s emptied: its request, if this rank holds one, completed and freed.
  void retire(size_t s) {
    settle(s);
    if (held_[s] != kInactive) return;
    Call& k = slots_[s];
    expect(MPI_Request_free(&k.req) == MPI_SUCCESS && k.req == MPI_REQUEST_NULL,
           k.what + ": MPI_Request_free");
    k = Call();
    held_[s] = kEmpty;
  }

  // MPI_Start again of slot s's request (its communicator may have been freed since, which
  // MPI allows), on each rank that holds it, with its input and output refilled in place.
  void start_again(size_t s) {
    settle(s);
    if (held_[s] != kInactive) return;
    Call k = std::move(slots_[s]);
    held_[s] = kEmpty;
    k.what = where() + "MPI_Start again of " + describe(k.c);
    if (k.c.in_place) {
      std::copy(k.in.begin(), k.in.end(), k.out.begin());
    } else {
      std::fill(k.out.begin(), k.out.end(), kGuard);
    }
    if (g_trace) trace(k.what);
    const int rc = MPI_Start(&k.req);
    expect(rc == MPI_SUCCESS, k.what);
    if (rc != MPI_SUCCESS) return park(std::move(k));
    held_[s] = kActive;
    outstanding_.push_back(std::move(k));
  }

  const unsigned seed_;
  std::mt19937 shared_, mine_;  // the same on every rank; this rank's own
  const char* const label_;
  int step_ = 0;
  std::vector<MPI_Comm> comms_;
  // Whether comms_[i] came from MPI_Comm_idup: end() frees those even when it leaves the
  // others to MPI_Finalize, which MPICH does not free (test/lsan-mpich.supp suppresses those
  // leaks by the MPI call that made them). MPICH allocates an idup's communicator in the
  // MPI_Wait that completes it, which libcollx intercepts: suppressing that would hide leaks
  // of libcollx's own.
  std::vector<bool> idup_;
  std::vector<Call> outstanding_;
  Call slots_[kSlots];
  Held held_[kSlots] = {kEmpty, kEmpty, kEmpty, kEmpty};
  size_t made_ = 0;  // persistent requests made so far (on any rank)
};

void run(unsigned seed, int steps, MPI_Comm base, const char* label) {
  Run r(seed, base, label);
  for (int s = 0; s < steps; ++s) r.step(s);
  r.end();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: pmpi_random SEED STEPS [--threads]\n");
    return 2;
  }
  const unsigned seed = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
  const int steps = std::atoi(argv[2]);
  const bool threads = argc > 3 && std::strcmp(argv[3], "--threads") == 0;
  int provided = MPI_THREAD_SINGLE;
  if (threads) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Op_create(user_sum, 1, &g_user_sum);
  if (!threads) {
    run(seed, steps, MPI_COMM_WORLD, "");
  } else if (provided != MPI_THREAD_MULTIPLE) {
    expect(false, "MPI_THREAD_MULTIPLE provided");
  } else {
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    std::thread other(run, seed + 1, steps, b, "thread 1, ");
    run(seed, steps, a, "thread 0, ");
    other.join();
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
  }
  MPI_Op_free(&g_user_sum);
  return collx::test::mpi_finish(g_passed.load(), g_failed.load());
}
