// An ordinary MPI program (no libcollx calls) for the PMPI interposer: run it plain and with
// LD_PRELOAD=libcollx_mpi.so; both runs must produce exactly the expected results.
//   pmpi_conformance            the matrix: every type the interposer serves x op x in-place
//                               x counts, on an odd/even split, WORLD, a dup, a reversed
//                               communicator and a one-rank communicator; plus cases that must
//                               pass through (user op, MAXLOC, a vector type, LAND, buffers
//                               MPI rejects, an intercommunicator), the intracommunicator
//                               merged from that intercommunicator, and communicators freed by
//                               MPI_Comm_disconnect
//   pmpi_conformance --no-allreduce       never calls MPI_Allreduce
//   pmpi_conformance --complex            only the matrix's complex types: MPI_SUM (served
//                                         under the preload) and MPI_PROD (passed through)
//   pmpi_conformance --float16            only under the preload (MPICH 4.0.2 aborts on its
//                                         own): MPIX_C_FLOAT16 with MPI_SUM, MPI_PROD,
//                                         MPI_MIN and MPI_MAX across the matrix's counts, in
//                                         place or not, then a few counts through
//                                         MPI_Iallreduce, persistent requests and
//                                         MPI_Allreduce_c
//   pmpi_conformance --thread-multiple    MPI_Init_thread(MPI_THREAD_MULTIPLE); two threads
//                                         each reduce on three fresh dups (so that each
//                                         process creates its libcollx communicators from
//                                         two threads at once, in an order that may differ
//                                         between processes), then run the matrix, one on
//                                         WORLD, the other on a dup (through
//                                         MPI_Iallreduce, as --nonblocking), and free two of their
//                                         dups; the other two are left to MPI_Finalize;
//                                         then one thread posts MPI_Iallreduce calls that
//                                         another completes, as the next are posted; then
//                                         two threads run the matrix through persistent
//                                         requests, each on a dup of its own
//   pmpi_conformance --late-free          only under the preload with COLLX_TIMEOUT=1, 2
//                                         ranks: rank 1 frees a communicator 2.5 s after rank
//                                         0, so rank 0's free of its libcollx communicator
//                                         times out (reported; rank 1 finds rank 0's part
//                                         already sent), while MPI's own is freed and the
//                                         program goes on
//   pmpi_conformance --libcollx-error     only under the preload with COLLX_CHECK=1: counts
//                                         that differ by rank (an erroneous program, which
//                                         libcollx's check catches) come back as MPI_ERR_OTHER
//                                         through MPI_ERRORS_RETURN, recvbuf untouched; then
//                                         correct calls on the same communicator still work;
//                                         the same through MPI_Iallreduce + MPI_Wait, and
//                                         through persistent requests
//   pmpi_conformance --unusable           only under the preload without COLLX_CHECK: counts
//                                         that differ by rank fail on every rank and leave the
//                                         libcollx communicator unusable; later MPI_Allreduce
//                                         and MPI_Iallreduce + MPI_Wait calls on it fail,
//                                         buffers untouched; freeing it and other
//                                         communicators work
//   pmpi_conformance --grequest-fails     only under the preload with test/grequest_fail_shim.so
//                                         preloaded first and GREQUEST_FAIL_AT=2 on rank 0: the
//                                         served MPI_Iallreduce that gets no generalized request
//                                         returns MPI's error and MPI_REQUEST_NULL, its
//                                         operation ended; the others and later calls work
//   pmpi_conformance --nonblocking        the matrix and the pass-through cases through
//                                         MPI_Iallreduce, completed by MPI_Wait, MPI_Waitall
//                                         (with point-to-point requests), MPI_Test, MPI_Waitany,
//                                         MPI_Testall, MPI_Testany, MPI_Testsome,
//                                         MPI_Request_get_status (then MPI_Wait) and
//                                         MPI_Waitsome in turn; then several
//                                         operations outstanding at once, a request freed
//                                         before completion, a communicator freed while an
//                                         operation on it is outstanding, and communicators
//                                         freed by MPI_Comm_disconnect
//   pmpi_conformance --progress blocking|small|large|waitall
//                                         rank 0 sends a large message to rank 1, then joins a
//                                         collective that rank 1 joins only once the message
//                                         arrived (legal: MPI progresses the send while rank 0
//                                         waits in the collective): MPI_Allreduce, or
//                                         MPI_Iallreduce + MPI_Wait, small or large, or
//                                         large + MPI_Waitall
//   pmpi_conformance --free-pending       MPI_Comm_free of a communicator with a request of
//                                         MPI's own still pending on some ranks (MPICH then
//                                         defers its attribute callbacks there), then an
//                                         allreduce on MPI_COMM_WORLD, then the request's wait;
//                                         then MPI_Comm_free on rank 0 with an MPI_Ibarrier
//                                         pending, which the others complete before theirs;
//                                         then an erroneous MPI_Comm_free (a freed handle),
//                                         and the allreduce functions on that handle
//   pmpi_conformance --busy               only under the preload: MPI_THREAD_MULTIPLE, rank 0's
//                                         second thread calls MPI_Allreduce, MPI_Iallreduce
//                                         and their _c twins on a communicator while its first
//                                         thread waits in MPI_Allreduce on it (erroneous):
//                                         each fails (MPI_ERR_OTHER, buffers untouched,
//                                         MPI_REQUEST_NULL); the first thread's call and later
//                                         ones succeed
//   pmpi_conformance --request-free       only under the preload: MPI_Request_free of an
//                                         MPI_Iallreduce request before it completes (MPICH
//                                         rejects this for its own), then more operations;
//                                         MPI_Cancel of one (likewise): no effect
//   pmpi_conformance --persistent         the matrix, the pass-through cases and the
//                                         intercommunicator through MPI_Allreduce_init (and
//                                         MPI_Allreduce_init_c), each started twice by MPI_Start
//                                         and completed by the completion calls above; then
//                                         persistent requests over their life: many starts
//                                         with new inputs, MPI_Startall mixed with MPI's own
//                                         persistent requests, MPI_Start of an active one, one
//                                         started after its communicator was freed
//   pmpi_conformance --persistent-edges   only under the preload (MPICH 4.0.2 hangs, aborts
//                                         or corrupts memory on its own): inactive persistent
//                                         requests in every completion call, MPI_Testall,
//                                         MPI_Cancel of an active one, one freed while active;
//                                         with COLLX_MPI_HOST_COPIES=1 the same again with
//                                         user-defined ops (MPI's requests on host copies)
//   pmpi_conformance --large-count        the matrix and the pass-through cases through the
//                                         large-count functions (MPI 4.0): MPI_Allreduce_c,
//                                         then MPI_Iallreduce_c with the completion calls above
//   pmpi_conformance --self-callback      MPI_Allreduce from a delete callback on MPI_COMM_SELF,
//                                         which MPI_Finalize runs first (as libraries clean up);
//                                         the only call of the run: under the preload it must
//                                         be served (the preload finishes after it)
//   pmpi_conformance --sessions           MPI 4.0's Sessions model alone (no MPI_Init): sums
//                                         on a communicator from the world process set,
//                                         exact (under the preload they pass through)
//   pmpi_conformance --fork               only under the preload: a forked child's
//                                         MPI_Allreduce on its parent's communicator is an
//                                         error; the parents' allreduces stay exact
//   pmpi_conformance --huge               2 ranks: 2^31 + 11 uint8 sums (a count no int holds)
//                                         through MPI_Allreduce_c, then MPI_Iallreduce_c +
//                                         MPI_Wait, in place; every byte checked, and the
//                                         bytes after the buffer untouched (2 GiB per rank)
// Prints "N passed, N failed"; exit status 1 on any failure.
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <complex>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>
#include "common/mpi_finish.h"

namespace {

int g_rank = 0;
std::atomic<int> g_passed{0}, g_failed{0};  // expect() runs in two threads in one mode

void expect(bool ok, const std::string& what) {
  ok ? ++g_passed : ++g_failed;
  if (!ok && g_failed <= 20) std::fprintf(stderr, "rank %d: FAILED %s\n", g_rank, what.c_str());
}

// Per thread (--thread-multiple runs one thread each way):
thread_local bool g_nonblocking = false;  // allreduce(): MPI_Iallreduce and a completion call
thread_local bool g_large = false;        // the large-count functions (MPI_Allreduce_c, ...)
thread_local bool g_persistent = false;   // allreduce(): MPI_Allreduce_init, MPI_Start, ...
thread_local int g_style = 0;             // which completion call the next one uses

// Completes the operation of req (on comm) by one completion call, a different one each time
// (mixed with MPI's own point-to-point requests in MPI_Waitall). Returns the first error.
// A persistent request is never given to MPI_Testall (MPI_Wait instead): MPICH 4.0.2's fails
// its own persistent collective requests (MPI_ERR_IN_STATUS, with no error in the status).
int complete(MPI_Request& req, MPI_Comm comm, bool persistent_req = false) {
  int rc = MPI_SUCCESS, flag = 0, index = -1, outcount = 0;
  int style = g_style++ % 9;
  if (persistent_req && style == 4) style = 0;
  switch (style) {
    case 0:
      rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    case 1: {
      int me = 0, out = 0, in = -1, inter = 0;
      MPI_Comm_test_inter(comm, &inter);
      const MPI_Comm own = inter ? MPI_COMM_SELF : comm;  // (a message to this rank itself)
      MPI_Comm_rank(own, &me);
      out = me + 1000;
      MPI_Request all[3] = {MPI_REQUEST_NULL, req, MPI_REQUEST_NULL};
      MPI_Irecv(&in, 1, MPI_INT, me, 77, own, &all[0]);
      MPI_Isend(&out, 1, MPI_INT, me, 77, own, &all[2]);
      MPI_Status st[3];
      rc = MPI_Waitall(3, all, st);
      if (rc == MPI_ERR_IN_STATUS) rc = st[1].MPI_ERROR;
      req = all[1];
      expect(in == me + 1000, "point-to-point completed with an iallreduce in MPI_Waitall");
      break;
    }
    case 2:
      while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      break;
    case 3: {
      MPI_Request two[2] = {MPI_REQUEST_NULL, req};
      rc = MPI_Waitany(2, two, &index, MPI_STATUS_IGNORE);
      expect(rc != MPI_SUCCESS || index == 1, "MPI_Waitany: index 1");
      req = two[1];
      break;
    }
    case 4:
      while (rc == MPI_SUCCESS && !flag) rc = MPI_Testall(1, &req, &flag, MPI_STATUSES_IGNORE);
      break;
    case 5: {
      MPI_Request two[2] = {req, MPI_REQUEST_NULL};
      while (rc == MPI_SUCCESS && !flag) {
        rc = MPI_Testany(2, two, &index, &flag, MPI_STATUS_IGNORE);
      }
      expect(rc != MPI_SUCCESS || index == 0, "MPI_Testany: index 0");
      req = two[0];
      break;
    }
    case 6: {
      MPI_Status st;
      while (rc == MPI_SUCCESS && outcount == 0) {
        rc = MPI_Testsome(1, &req, &outcount, &index, &st);
        if (rc == MPI_ERR_IN_STATUS) rc = st.MPI_ERROR;
      }
      expect(rc != MPI_SUCCESS || (outcount == 1 && index == 0), "MPI_Testsome: one, index 0");
      break;
    }
    case 7: {
      // A non-destructive test until it reports completion (with a deadline: under the
      // preload, MPICH's own never polled the request), then MPI_Wait, which frees it.
      const double until = MPI_Wtime() + 20;
      while (rc == MPI_SUCCESS && !flag && MPI_Wtime() < until) {
        rc = MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
      }
      expect(rc != MPI_SUCCESS || (flag && req != MPI_REQUEST_NULL),
             "MPI_Request_get_status reports completion, the request kept");
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    }
    default: {
      MPI_Status st;
      rc = MPI_Waitsome(1, &req, &outcount, &index, &st);
      if (rc == MPI_ERR_IN_STATUS) rc = st.MPI_ERROR;
      expect(rc != MPI_SUCCESS || (outcount == 1 && index == 0), "MPI_Waitsome: one, index 0");
      break;
    }
  }
  return rc;
}

// MPI_Iallreduce, then one completion call (complete). Returns the first error.
int iallreduce(const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = g_large ? MPI_Iallreduce_c(send, recv, count, type, op, comm, &req)
                   : MPI_Iallreduce(send, recv, static_cast<int>(count), type, op, comm, &req);
  if (rc != MPI_SUCCESS) return rc;
  rc = complete(req, comm);
  expect(rc != MPI_SUCCESS || req == MPI_REQUEST_NULL, "the request is MPI_REQUEST_NULL after it");
  return rc;
}

// MPI_Allreduce_init (MPI_Allreduce_init_c with g_large), then MPI_Start and one completion
// call (complete), twice: not in place, recvbuf poisoned before the second start (its result
// is the one checked); in place, once (its input is its recvbuf). Then MPI_Request_free.
// Returns the first error.
int persistent(const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = g_large ? MPI_Allreduce_init_c(send, recv, count, type, op, comm, MPI_INFO_NULL, &req)
                   : MPI_Allreduce_init(send, recv, static_cast<int>(count), type, op, comm,
                                        MPI_INFO_NULL, &req);
  if (rc != MPI_SUCCESS) return rc;
  const MPI_Request persistent_req = req;
  MPI_Count size = 0;
  MPI_Type_size_c(type, &size);
  for (int start = 0; start < (send == MPI_IN_PLACE ? 1 : 2) && rc == MPI_SUCCESS; ++start) {
    if (start == 1 && recv != nullptr) std::memset(recv, 0x5a, static_cast<size_t>(count * size));
    rc = MPI_Start(&req);
    if (rc == MPI_SUCCESS) rc = complete(req, comm, true);
    expect(req == persistent_req, "the persistent request is kept");
  }
  const int free_rc = MPI_Request_free(&req);
  expect(free_rc == MPI_SUCCESS && req == MPI_REQUEST_NULL, "MPI_Request_free: MPI_REQUEST_NULL");
  return rc;
}

int allreduce(const void* send, void* recv, MPI_Count count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  if (g_persistent) return persistent(send, recv, count, type, op, comm);
  if (g_nonblocking) return iallreduce(send, recv, count, type, op, comm);
  if (g_large) return MPI_Allreduce_c(send, recv, count, type, op, comm);
  return MPI_Allreduce(send, recv, static_cast<int>(count), type, op, comm);
}

// Exact integer inputs per op (as in test/common/pattern.h, but MPI-only here).
int64_t value(char op, int r, size_t i) {
  const int64_t ii = static_cast<int64_t>(i % 1000003);
  switch (op) {
    case '+': return (ii * 7 + r * 3) % 5 + (i % 11 == 0 ? 60 : 0);  // int8 sums wrap at p>=3
    case '*': return (ii + r) % 3 == 0 ? 2 : ((ii + 2 * r) % 5 == 0 ? -1 : 1);
    case '<': case '>': return (ii * 13 + r * 7) % 11 - 5;
    default: return static_cast<int64_t>((static_cast<uint64_t>(ii + 1) * 0x9e3779b97f4a7c15ull) ^
                                         (static_cast<uint64_t>(r + 1) * 0xbf58476d1ce4e5b9ull)) >> 1;
  }
}

// Which ops MPI allows on a type: all seven on integers, no bitwise ones on floating types,
// only bitwise ones on MPI_BYTE.
enum Kind { kInteger, kFloat, kByte };

// A floating type of the compiler's (C++20's std::is_floating_point leaves out _Float16).
template <typename T>
constexpr bool kFloating = std::is_floating_point_v<T>;
#ifdef __FLT16_MAX__
template <>
constexpr bool kFloating<_Float16> = true;
#endif

template <typename T>
void run_type(MPI_Comm comm, MPI_Datatype type, const char* tname, Kind kind,
              const std::vector<size_t>& counts) {
  int p = 0, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  struct OpCase { MPI_Op op; char c; const char* name; };
  const OpCase ops[] = {{MPI_SUM, '+', "sum"}, {MPI_PROD, '*', "prod"}, {MPI_MIN, '<', "min"},
                        {MPI_MAX, '>', "max"}, {MPI_BAND, '&', "band"}, {MPI_BOR, '|', "bor"},
                        {MPI_BXOR, '^', "bxor"}};
  for (const OpCase& oc : ops) {
    const bool bitwise = oc.c == '&' || oc.c == '|' || oc.c == '^';
    if ((kind == kFloat && bitwise) || (kind == kByte && !bitwise)) continue;
    // Unsigned min/max: non-negative inputs, so that int64 and the type order them alike.
    const int64_t shift = (std::is_unsigned_v<T> && (oc.c == '<' || oc.c == '>')) ? 5 : 0;
    auto val = [&](int r, size_t i) { return value(oc.c, r, i) + shift; };
    for (size_t count : counts) {
      std::vector<T> exp(count), send(count), recv(count + 4);
      for (size_t i = 0; i < count; ++i) {
        int64_t acc = val(0, i);
        for (int r = 1; r < p; ++r) {
          const int64_t v = val(r, i);
          switch (oc.c) {
            case '+': acc += v; break;
            case '*': acc *= v; break;
            case '<': acc = v < acc ? v : acc; break;
            case '>': acc = v > acc ? v : acc; break;
            case '&': acc &= v; break;
            case '|': acc |= v; break;
            default: acc ^= v; break;
          }
        }
        if constexpr (kFloating<T>) exp[i] = static_cast<T>(acc);
        else exp[i] = static_cast<T>(static_cast<uint64_t>(acc));  // wraps like the type
        const int64_t mine = val(rank, i);
        if constexpr (kFloating<T>) send[i] = static_cast<T>(mine);
        else send[i] = static_cast<T>(static_cast<uint64_t>(mine));
      }
      for (bool in_place : {false, true}) {
        recv.assign(count + 4, T(99));
        if (in_place) std::copy(send.begin(), send.end(), recv.begin());
        const int rc = allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(),
                                     static_cast<int>(count), type, oc.op, comm);
        const bool ok = rc == MPI_SUCCESS &&
                        (count == 0 || std::memcmp(recv.data(), exp.data(), count * sizeof(T)) == 0) &&
                        recv[count] == T(99);
        expect(ok, std::string(tname) + " " + oc.name + " count " + std::to_string(count) +
                       (in_place ? " in-place" : ""));
      }
    }
  }
}

// A complex type (parts of type F): MPI_SUM, which the preload serves as the sums of the parts,
// and MPI_PROD, which it passes through. The parts are small integers, so both are exact.
template <typename F>
void run_complex(MPI_Comm comm, MPI_Datatype type, const char* tname,
                 const std::vector<size_t>& counts) {
  int p = 0, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  for (bool prod : {false, true}) {
    for (size_t count : counts) {
      const size_t n = 2 * count;  // parts
      std::vector<F> exp(n), send(n), recv(n + 2);
      for (size_t i = 0; i < count; ++i) {
        auto z = [&](int r) {  // rank r's input i
          const char c = prod ? '*' : '+';
          return std::complex<double>(static_cast<double>(value(c, r, 2 * i)),
                                      static_cast<double>(value(c, r, 2 * i + 1)));
        };
        std::complex<double> acc = z(0);
        for (int r = 1; r < p; ++r) acc = prod ? acc * z(r) : acc + z(r);
        exp[2 * i] = static_cast<F>(acc.real());
        exp[2 * i + 1] = static_cast<F>(acc.imag());
        send[2 * i] = static_cast<F>(z(rank).real());
        send[2 * i + 1] = static_cast<F>(z(rank).imag());
      }
      for (bool in_place : {false, true}) {
        recv.assign(n + 2, F(99));
        if (in_place) std::copy(send.begin(), send.end(), recv.begin());
        const int rc = allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(),
                                 static_cast<int>(count), type, prod ? MPI_PROD : MPI_SUM, comm);
        const bool ok = rc == MPI_SUCCESS &&
                        (n == 0 || std::memcmp(recv.data(), exp.data(), n * sizeof(F)) == 0) &&
                        recv[n] == F(99) && recv[n + 1] == F(99);
        expect(ok, std::string(tname) + (prod ? " prod" : " sum") + " count " +
                       std::to_string(count) + (in_place ? " in-place" : ""));
      }
    }
  }
}

// The complex types: C's at every count of `counts`, the others (with `big`) at a few.
void complex_types(MPI_Comm comm, const std::vector<size_t>& counts, bool big) {
  const std::vector<size_t> small = {0, 1, 5, 1003};
  run_complex<double>(comm, MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", counts);
  run_complex<float>(comm, MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", small);
  if (!big) return;
  run_complex<double>(comm, MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", small);
  run_complex<float>(comm, MPI_COMPLEX, "MPI_COMPLEX", small);
  run_complex<double>(comm, MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", small);
  run_complex<float>(comm, MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", small);
  run_complex<double>(comm, MPI_COMPLEX16, "MPI_COMPLEX16", small);
  run_complex<float>(comm, MPI_COMPLEX8, "MPI_COMPLEX8", small);
}

// A few int sums on `comm`, tagged `k` (each value differs by communicator).
void few(MPI_Comm comm, int k) {
  int p = 0, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  for (int count : {1, 1000, 70000}) {
    std::vector<int> v(static_cast<size_t>(count), rank + 100 * k);
    const int rc = allreduce(MPI_IN_PLACE, v.data(), count, MPI_INT, MPI_SUM, comm);
    const int want = p * (p - 1) / 2 + p * 100 * k;
    expect(rc == MPI_SUCCESS && v.front() == want && v.back() == want,
           "dup " + std::to_string(k) + " count " + std::to_string(count));
  }
}

// MPI_Comm_disconnect, MPI's collective free: MPICH deletes the communicator's attributes,
// which frees its libcollx communicator (the preload does not intercept it). Calls on the
// communicator before it, and on MPI_COMM_WORLD after it, are exact.
void disconnect() {
  for (int k = 0; k < 3; ++k) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    few(comm, k);
    expect(MPI_Comm_disconnect(&comm) == MPI_SUCCESS && comm == MPI_COMM_NULL,
           "MPI_Comm_disconnect");
    few(MPI_COMM_WORLD, k + 3);
  }
}

// The matrix's counts, with `big` one past a million too.
std::vector<size_t> matrix_counts(bool big) {
  std::vector<size_t> counts = {0, 1, 3, 17, 1000, 65543};
  if (big) counts.push_back((1u << 20) + 7);
  return counts;
}

void matrix(MPI_Comm comm, bool big) {
  const std::vector<size_t> counts = matrix_counts(big);
  const std::vector<size_t> small = {0, 1, 5, 1003};
  run_type<int8_t>(comm, MPI_CHAR, "MPI_CHAR", kInteger, counts);
  run_type<int8_t>(comm, MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", kInteger, small);
  run_type<uint8_t>(comm, MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", kInteger, small);
  run_type<short>(comm, MPI_SHORT, "MPI_SHORT", kInteger, small);
  run_type<unsigned short>(comm, MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", kInteger, small);
  run_type<int>(comm, MPI_INT, "MPI_INT", kInteger, counts);
  run_type<unsigned>(comm, MPI_UNSIGNED, "MPI_UNSIGNED", kInteger, small);
  run_type<long>(comm, MPI_LONG, "MPI_LONG", kInteger, small);
  run_type<unsigned long>(comm, MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", kInteger, small);
  run_type<long long>(comm, MPI_LONG_LONG, "MPI_LONG_LONG", kInteger, small);
  run_type<unsigned long long>(comm, MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", kInteger,
                               small);
  run_type<int8_t>(comm, MPI_INT8_T, "MPI_INT8_T", kInteger, small);
  run_type<uint8_t>(comm, MPI_UINT8_T, "MPI_UINT8_T", kInteger, small);
  run_type<int16_t>(comm, MPI_INT16_T, "MPI_INT16_T", kInteger, small);
  run_type<uint16_t>(comm, MPI_UINT16_T, "MPI_UINT16_T", kInteger, small);
  run_type<int32_t>(comm, MPI_INT32_T, "MPI_INT32_T", kInteger, small);
  run_type<uint32_t>(comm, MPI_UINT32_T, "MPI_UINT32_T", kInteger, small);
  run_type<int64_t>(comm, MPI_INT64_T, "MPI_INT64_T", kInteger, small);
  run_type<uint64_t>(comm, MPI_UINT64_T, "MPI_UINT64_T", kInteger, small);
  run_type<float>(comm, MPI_FLOAT, "MPI_FLOAT", kFloat, counts);
  run_type<double>(comm, MPI_DOUBLE, "MPI_DOUBLE", kFloat, counts);
  complex_types(comm, counts, big);
  // Fortran's types (from C, as MPI allows; their sizes are MPICH's on Debian, checked first),
  // the multi-language ones and MPI_BYTE: once per run (with `big`), as only the mapping of
  // types differs from the above.
  if (!big) return;
  int size_integer = 0, size_real = 0;
  MPI_Type_size(MPI_INTEGER, &size_integer);
  MPI_Type_size(MPI_REAL, &size_real);
  expect(size_integer == 4 && size_real == 4, "MPI_INTEGER and MPI_REAL have 4 bytes");
  run_type<int32_t>(comm, MPI_INTEGER, "MPI_INTEGER", kInteger, small);
  run_type<float>(comm, MPI_REAL, "MPI_REAL", kFloat, small);
  run_type<double>(comm, MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", kFloat, small);
  run_type<int8_t>(comm, MPI_INTEGER1, "MPI_INTEGER1", kInteger, small);
  run_type<int16_t>(comm, MPI_INTEGER2, "MPI_INTEGER2", kInteger, small);
  run_type<int32_t>(comm, MPI_INTEGER4, "MPI_INTEGER4", kInteger, small);
  run_type<int64_t>(comm, MPI_INTEGER8, "MPI_INTEGER8", kInteger, small);
  run_type<float>(comm, MPI_REAL4, "MPI_REAL4", kFloat, small);
  run_type<double>(comm, MPI_REAL8, "MPI_REAL8", kFloat, small);
  run_type<MPI_Aint>(comm, MPI_AINT, "MPI_AINT", kInteger, small);
  run_type<MPI_Offset>(comm, MPI_OFFSET, "MPI_OFFSET", kInteger, small);
  run_type<MPI_Count>(comm, MPI_COUNT, "MPI_COUNT", kInteger, small);
  run_type<uint8_t>(comm, MPI_BYTE, "MPI_BYTE", kByte, small);
}

// MPICH's float16 (MPIX_C_FLOAT16), which MPICH 4.0.2 itself cannot reduce (it aborts), so
// only under the preload: every served op, count and in-place, through each allreduce function
// in turn. The values are small integers, exact in float16 whatever the order of the sums.
void float16(MPI_Comm comm) {
#if defined(MPIX_C_FLOAT16) && defined(__FLT16_MAX__)
  const std::vector<size_t> counts = matrix_counts(true), small = {0, 1, 5, 1003};
  run_type<_Float16>(comm, MPIX_C_FLOAT16, "MPIX_C_FLOAT16", kFloat, counts);
  g_nonblocking = true;
  run_type<_Float16>(comm, MPIX_C_FLOAT16, "MPIX_C_FLOAT16 (MPI_Iallreduce)", kFloat, small);
  g_nonblocking = false;
  g_persistent = true;
  run_type<_Float16>(comm, MPIX_C_FLOAT16, "MPIX_C_FLOAT16 (persistent)", kFloat, small);
  g_persistent = false;
  g_large = true;
  run_type<_Float16>(comm, MPIX_C_FLOAT16, "MPIX_C_FLOAT16 (large count)", kFloat, small);
  g_large = false;
#else
  (void)comm;
  expect(false, "MPIX_C_FLOAT16 and _Float16 (needs MPICH and a compiler with _Float16)");
#endif
}

void user_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}
void user_max(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) {
    static_cast<int*>(inout)[i] = std::max(static_cast<int*>(inout)[i], static_cast<int*>(in)[i]);
  }
}

// Cases the interposer must hand to MPI unchanged; MPI's answers are known exactly.
void passthrough(MPI_Comm comm) {
  int p = 0, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  int x[3] = {rank, 1, 2 * rank}, y[3];
  expect(allreduce(x, y, 3, MPI_INT, op, comm) == MPI_SUCCESS && y[0] == p * (p - 1) / 2 &&
             y[1] == p && y[2] == p * (p - 1),
         "user-defined op");
  MPI_Op_free(&op);
  struct { double v; int i; } in{static_cast<double>(rank % 2), rank}, out{};
  expect(allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm) == MPI_SUCCESS &&
             out.v == (p > 1 ? 1.0 : 0.0) && out.i == (p > 1 ? 1 : 0),
         "MPI_MAXLOC on MPI_DOUBLE_INT");
  // MPICH 4.0.2 (built without yaksa) rejects predefined ops on derived types: its answer is
  // an error, which must come back unchanged through the communicator's error handler.
  MPI_Datatype vec;
  MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  int v[8], w[8];
  for (int i = 0; i < 8; ++i) v[i] = w[i] = i + rank;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int rc = allreduce(v, w, 1, vec, MPI_SUM, comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  bool ok = rc != MPI_SUCCESS && cls == MPI_ERR_OP;
  for (int i = 0; i < 8; ++i) ok = ok && w[i] == i + rank;  // recvbuf untouched
  expect(ok, "vector datatype: MPICH's own MPI_ERR_OP");
  MPI_Type_free(&vec);
  int l = rank == 0 ? 0 : 1, lr = -1;
  expect(allreduce(&l, &lr, 1, MPI_INT, MPI_LAND, comm) == MPI_SUCCESS && lr == 0,
         "MPI_LAND");
  // Ops MPI does not define for the type: MPICH's own MPI_ERR_OP, recvbuf untouched.
  struct Bad { MPI_Datatype type; MPI_Op op; const char* name; };
  for (const Bad& b : {Bad{MPI_BYTE, MPI_SUM, "MPI_SUM on MPI_BYTE"},
                       Bad{MPI_FLOAT, MPI_BXOR, "MPI_BXOR on MPI_FLOAT"},
                       Bad{MPI_REAL, MPI_BAND, "MPI_BAND on MPI_REAL"}}) {
    uint32_t in[2] = {1, 2}, out[2] = {7, 7};
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const int brc = allreduce(in, out, b.type == MPI_BYTE ? 8 : 2, b.type, b.op, comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    int bcls = MPI_SUCCESS;
    if (brc != MPI_SUCCESS) MPI_Error_class(brc, &bcls);
    expect(brc != MPI_SUCCESS && bcls == MPI_ERR_OP && out[0] == 7 && out[1] == 7,
           std::string(b.name) + ": MPICH's own MPI_ERR_OP");
  }
  // Buffers MPI rejects: MPICH's own MPI_ERR_BUFFER, both buffers untouched (served, an
  // MPI_IN_PLACE recvbuf would be written at address -1, and sendbuf == recvbuf would be taken
  // as in place). With count 0 the same buffers are no error.
  struct Buffers { const void* send; void* recv; const char* name; };
  int a[2] = {rank, 5}, b[2] = {7, 7};
  for (const Buffers& bb : {Buffers{a, MPI_IN_PLACE, "MPI_IN_PLACE as recvbuf"},
                            Buffers{MPI_IN_PLACE, MPI_IN_PLACE, "MPI_IN_PLACE as both buffers"},
                            Buffers{a, a, "sendbuf == recvbuf"},
                            Buffers{nullptr, b, "a null sendbuf"},
                            Buffers{a, nullptr, "a null recvbuf"}}) {
    for (const int count : {2, 0}) {
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      const int brc = allreduce(bb.send, bb.recv, count, MPI_INT, MPI_SUM, comm);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
      int bcls = MPI_SUCCESS;
      if (brc != MPI_SUCCESS) MPI_Error_class(brc, &bcls);
      const bool untouched = a[0] == rank && a[1] == 5 && b[0] == 7 && b[1] == 7;
      expect(untouched && (count > 0 ? bcls == MPI_ERR_BUFFER : brc == MPI_SUCCESS),
             std::string(bb.name) + ", count " + std::to_string(count) +
                 (count > 0 ? ": MPICH's own MPI_ERR_BUFFER" : ": no error"));
    }
  }
}

// MPI_Comm_free of one communicator in one thread while another thread reduces on another,
// in an order that differs by rank (legal: MPI_Comm_free need not synchronise). Rank 0 frees
// X at once and reduces on Y 100 ms later from a second thread; the other ranks reduce on Y
// first and free X afterwards. Freeing X's libcollx communicator waits for every member, so
// it must not hold anything rank 0's reducing thread needs (such as MPICH's global lock).
void free_while_reducing() {
  MPI_Comm x, y;
  MPI_Comm_dup(MPI_COMM_WORLD, &x);
  MPI_Comm_dup(MPI_COMM_WORLD, &y);
  few(x, 7);  // both communicators exist in libcollx from here
  few(y, 8);
  if (g_rank == 0) {
    std::thread reducer([&y] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      few(y, 9);
    });
    MPI_Comm_free(&x);
    reducer.join();
  } else {
    few(y, 9);
    MPI_Comm_free(&x);
  }
  MPI_Comm_free(&y);
}

void late_free() {
  MPI_Comm x;
  MPI_Comm_dup(MPI_COMM_WORLD, &x);
  few(x, 3);
  if (g_rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  MPI_Comm_free(&x);
  expect(x == MPI_COMM_NULL, "MPI_Comm_free after a failed libcollx free");
  few(MPI_COMM_WORLD, 4);  // the rest goes on working
}

// libcollx's own errors reach the program as MPI's would: through the communicator's error
// handler. A count that differs by rank is the one error every rank sees at once.
void libcollx_error() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int p = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int count = 8 + g_rank;
  std::vector<int> send(static_cast<size_t>(count), 1), recv(static_cast<size_t>(count), -7);
  const int rc = allreduce(send.data(), recv.data(), count, MPI_INT, MPI_SUM, comm);
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  bool untouched = true;
  for (int v : recv) untouched = untouched && v == -7;
  expect(rc != MPI_SUCCESS && cls == MPI_ERR_OTHER, "counts that differ by rank: MPI_ERR_OTHER");
  expect(untouched, "counts that differ by rank: recvbuf untouched");
  // The check kept the ranks in step: the communicator goes on working.
  for (int i = 0; i < 3; ++i) {
    int x = g_rank + i, y = -1;
    expect(allreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS &&
               y == p * (p - 1) / 2 + p * i,
           "a correct call after the error");
  }
  if (g_persistent) {
    // Completed together by MPI_Waitall (the preload's own path for served requests only):
    // MPI_ERR_IN_STATUS, the failed one's error in its status, the others' MPI_SUCCESS.
    int x = g_rank, y = -1;
    MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Allreduce_init(send.data(), recv.data(), count, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                       &reqs[0]);
    MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[2]);
    const MPI_Request kept[3] = {reqs[0], reqs[1], reqs[2]};
    MPI_Status st[3];
    for (MPI_Status& one : st) one.MPI_ERROR = -1;
    const bool started = MPI_Start(&reqs[0]) == MPI_SUCCESS && MPI_Start(&reqs[2]) == MPI_SUCCESS;
    const int all_rc = MPI_Waitall(3, reqs, st);
    int first = MPI_SUCCESS;
    if (st[0].MPI_ERROR != MPI_SUCCESS) MPI_Error_class(st[0].MPI_ERROR, &first);
    untouched = true;
    for (int v : recv) untouched = untouched && v == -7;
    expect(started && all_rc == MPI_ERR_IN_STATUS && first == MPI_ERR_OTHER &&
               st[1].MPI_ERROR == MPI_SUCCESS && st[2].MPI_ERROR == MPI_SUCCESS &&
               y == p * (p - 1) / 2 && untouched && reqs[0] == kept[0] && reqs[2] == kept[2],
           "MPI_Waitall, one failed: MPI_ERR_IN_STATUS, each status's error");
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[2]);
  }
  MPI_Comm_free(&comm);
}

// After an error that leaves its libcollx communicator unusable (counts that differ by rank,
// without COLLX_CHECK: the shared-memory algorithms stop in their first step), every later
// call on that communicator fails, without touching its buffers: MPI_Allreduce at once, and
// MPI_Iallreduce when it runs (in MPI_Wait here). Freeing it is no error (the preload counts
// no failed free), and the rest goes on.
void unusable_comm() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int count = g_rank == 0 ? 1000 : 1100;  // (one selection row: 4000 and 4400 bytes)
  std::vector<int> send(static_cast<size_t>(count), 1), recv(send.size());
  auto other = [](int rc) {
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    return rc != MPI_SUCCESS && cls == MPI_ERR_OTHER;
  };
  auto untouched = [&] {
    bool ok = true;
    for (size_t i = 0; i < send.size(); ++i) ok = ok && send[i] == 1 && recv[i] == -7;
    return ok;
  };
  int rc = MPI_Allreduce(send.data(), recv.data(), count, MPI_INT, MPI_SUM, comm);
  expect(other(rc), "counts that differ by rank, without COLLX_CHECK: MPI_ERR_OTHER");
  std::fill(recv.begin(), recv.end(), -7);
  MPI_Request req = MPI_REQUEST_NULL;
  rc = MPI_Iallreduce(send.data(), recv.data(), count, MPI_INT, MPI_SUM, comm, &req);
  // It fails when it runs; MPICH reports a failed generalized request through
  // MPI_COMM_WORLD's handler.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  expect(other(rc) && req == MPI_REQUEST_NULL && untouched(),
         "MPI_Iallreduce + MPI_Wait on the unusable communicator: MPI_ERR_OTHER, buffers "
         "untouched");
  rc = MPI_Allreduce(send.data(), recv.data(), count, MPI_INT, MPI_SUM, comm);
  expect(other(rc) && untouched(),
         "MPI_Allreduce on the unusable communicator: MPI_ERR_OTHER, buffers untouched");
  MPI_Comm_free(&comm);
  expect(comm == MPI_COMM_NULL, "MPI_Comm_free of the unusable communicator");
  few(MPI_COMM_WORLD, 6);  // the rest goes on working
}

// An intercommunicator between the even and the odd ranks of `comm` (passed through: each
// group's result is the sum of the other group's inputs), then the intracommunicator merged
// from it, the odd ranks first (served).
void intercomm(MPI_Comm comm) {
  int p = 0, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  if (p < 2) return;
  const int color = rank % 2;
  MPI_Comm half, inter, merged;
  MPI_Comm_split(comm, color, rank, &half);
  MPI_Intercomm_create(half, 0, comm, 1 - color, 77, &inter);  // leaders: ranks 0 and 1
  for (int count : {1, 1000, 70000}) {
    std::vector<int> in(static_cast<size_t>(count)), out(in.size() + 1, -1);
    for (int i = 0; i < count; ++i) in[static_cast<size_t>(i)] = 3 * rank + i % 100;
    bool ok = allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, inter) == MPI_SUCCESS &&
              out[static_cast<size_t>(count)] == -1;
    for (int i = 0; i < count; ++i) {
      int want = 0;
      for (int r = 1 - color; r < p; r += 2) want += 3 * r + i % 100;
      ok = ok && out[static_cast<size_t>(i)] == want;
    }
    expect(ok, "intercommunicator sum, count " + std::to_string(count));
  }
  MPI_Intercomm_merge(inter, color == 0, &merged);
  few(merged, 9);
  run_type<double>(merged, MPI_DOUBLE, "MPI_DOUBLE (merged)", kFloat, {0, 1, 1003, 65543});
  MPI_Comm_free(&merged);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

// Sums of `count` ints on `comm`, tagged `k`: the input, and the result every rank expects.
std::vector<int> input(MPI_Comm comm, size_t count, int k) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<int> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<int>(i % 1000) + rank * 7 + k;
  return v;
}
bool is_sum(MPI_Comm comm, const std::vector<int>& v, int k) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != p * (static_cast<int>(i % 1000) + k) + 7 * p * (p - 1) / 2) return false;
  }
  return true;
}

// One thread posts, another completes (frameworks do this: a thread that issues the
// collectives, another that waits for them). The main thread posts 300 MPI_Iallreduce on a
// dup of MPI_COMM_WORLD, of 1 - 70 000 ints, with a blocking MPI_Allreduce on it after every
// tenth; a second thread completes them in order, by MPI_Wait or by MPI_Test until done,
// while the next ones are posted (legal under MPI_THREAD_MULTIPLE: one thread issues the
// collectives on the communicator, in the same order on every rank).
void handoff() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  struct Posted {
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<int> buf;
    int k = 0;
  };
  std::deque<std::unique_ptr<Posted>> queue;
  std::mutex mutex;
  std::condition_variable ready;
  bool posting = true;
  int wrong = 0;  // (the completer's; read after it is joined)
  std::thread completer([&] {
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return !queue.empty() || !posting; });
      if (queue.empty()) return;
      std::unique_ptr<Posted> next = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      int rc = MPI_SUCCESS, flag = 0;
      if (next->k % 2 == 0) {
        rc = MPI_Wait(&next->req, MPI_STATUS_IGNORE);
      } else {
        while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&next->req, &flag, MPI_STATUS_IGNORE);
      }
      if (rc != MPI_SUCCESS || !is_sum(comm, next->buf, next->k)) ++wrong;
    }
  });
  int blocking_wrong = 0;
  for (int k = 0; k < 300; ++k) {
    auto posted = std::make_unique<Posted>();
    posted->k = k;
    posted->buf = input(comm, k % 7 == 0 ? 70000 : static_cast<size_t>(k % 5) * 300 + 1, k);
    MPI_Iallreduce(MPI_IN_PLACE, posted->buf.data(), static_cast<int>(posted->buf.size()),
                   MPI_INT, MPI_SUM, comm, &posted->req);
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(posted));
    }
    ready.notify_one();
    if (k % 10 == 9) {
      std::vector<int> v = input(comm, 1000, k);
      MPI_Allreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, comm);
      if (!is_sum(comm, v, k)) ++blocking_wrong;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    posting = false;
  }
  ready.notify_one();
  completer.join();
  expect(wrong == 0 && blocking_wrong == 0,
         "posted by one thread, completed by another: " + std::to_string(wrong) +
             " wrong operations, " + std::to_string(blocking_wrong) + " wrong blocking calls");
  MPI_Comm_free(&comm);
}

// Under test/grequest_fail_shim.so with GREQUEST_FAIL_AT=2 on rank 0: its second served
// MPI_Iallreduce cannot get a generalized request. That call returns MPI's error with
// MPI_REQUEST_NULL, its operation having been ended (run to completion, as every rank joined
// it) rather than left running; the other ranks' requests complete normally, and later calls
// on the same communicator work.
void grequest_fails() {
  for (int k = 0; k < 4; ++k) {
    std::vector<int> v = input(MPI_COMM_WORLD, 1000, k);
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = MPI_Iallreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                  &req);
    const bool fails = g_rank == 0 && k == 1;
    if (fails) {
      expect(rc == MPI_ERR_INTERN && req == MPI_REQUEST_NULL,
             "no generalized request: MPI's error, MPI_REQUEST_NULL");
    } else {
      expect(rc == MPI_SUCCESS && MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
             "MPI_Iallreduce " + std::to_string(k));
    }
    expect(is_sum(MPI_COMM_WORLD, v, k), "the operation ran to its end: " + std::to_string(k));
  }
}

// Several MPI_Iallreduce outstanding at once (small ones, and one large enough to start at
// once on libcollx's thread), completed in reverse order by MPI_Wait, then by one MPI_Waitall.
void several(MPI_Comm comm) {
  const size_t counts[] = {1, 100, 70000, 3, 20000};
  constexpr int n = 5;
  std::vector<int> bufs[n];
  MPI_Request reqs[n];
  for (int k = 0; k < n; ++k) {
    bufs[k] = input(comm, counts[k], k);
    MPI_Iallreduce(MPI_IN_PLACE, bufs[k].data(), static_cast<int>(counts[k]), MPI_INT, MPI_SUM,
                   comm, &reqs[k]);
  }
  for (int k = n - 1; k >= 0; --k) {
    expect(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE) == MPI_SUCCESS && is_sum(comm, bufs[k], k),
           "outstanding together, waited for in reverse: operation " + std::to_string(k));
  }
  for (int k = 0; k < n; ++k) {
    bufs[k] = input(comm, counts[k], k + 10);
    MPI_Iallreduce(MPI_IN_PLACE, bufs[k].data(), static_cast<int>(counts[k]), MPI_INT, MPI_SUM,
                   comm, &reqs[k]);
  }
  bool ok = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
  for (int k = 0; k < n; ++k) ok = ok && is_sum(comm, bufs[k], k + 10);
  expect(ok, "outstanding together, one MPI_Waitall");
}

// MPI_Request_free before the operation completes: erroneous for a nonblocking collective
// (MPICH rejects it for its own requests), accepted for the interposer's. The buffers stay
// untouched until MPI_Finalize, which ends the operations; those after it still work.
void request_free(MPI_Comm comm) {
  static std::vector<int> freed[3];
  for (int k = 0; k < 3; ++k) {
    freed[k] = input(comm, k == 1 ? 30000 : 10, k);
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, freed[k].data(), static_cast<int>(freed[k].size()), MPI_INT,
                   MPI_SUM, comm, &req);
    MPI_Request_free(&req);
    expect(req == MPI_REQUEST_NULL, "MPI_Request_free: MPI_REQUEST_NULL");
    std::vector<int> v = input(comm, 1000, k + 20);
    expect(iallreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS &&
               is_sum(comm, v, k + 20),
           "an operation after a freed request");
  }
  // MPI_Cancel, erroneous likewise (MPICH fails it for its own requests): it has no effect, the
  // operation completes, and its status says it was not cancelled.
  for (int k = 0; k < 2; ++k) {
    std::vector<int> v = input(comm, k == 1 ? 30000 : 10, k + 40);
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT, MPI_SUM, comm,
                   &req);
    const int rc = MPI_Cancel(&req);
    MPI_Status st;
    int cancelled = 1;
    const bool done = MPI_Wait(&req, &st) == MPI_SUCCESS;
    MPI_Test_cancelled(&st, &cancelled);
    expect(rc == MPI_SUCCESS && done && !cancelled && req == MPI_REQUEST_NULL &&
               is_sum(comm, v, k + 40),
           "MPI_Cancel: no effect, the operation completes");
  }
}

// Puts input(comm, v.size(), k) into v's own storage (a persistent request keeps its address).
void refill(std::vector<int>& v, MPI_Comm comm, int k) {
  const std::vector<int> fresh = input(comm, v.size(), k);
  std::copy(fresh.begin(), fresh.end(), v.begin());
}

// Persistent allreduces over their life, on `comm`:
// - two requests (10 ints, and 70 000 in place) started 12 times each, with new inputs before
//   every start, and completed by each completion call in turn;
// - by MPI_Startall and one MPI_Waitall, 5 times: three on `comm`, one passed through (a user
//   op; MPI's own), and a persistent send and receive (to this rank itself), mixed;
// - one on a dup freed after its first start: MPI runs the starts after the free (it keeps a
//   freed communicator for its persistent requests);
// - MPI_Start of an active request: MPI_ERR_REQUEST, and the operation goes on.
void persistent_life(MPI_Comm comm) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::vector<int> in = input(comm, 10, 0), out(10), big = input(comm, 70000, 0);
  MPI_Request small_req, big_req;
  MPI_Allreduce_init(in.data(), out.data(), 10, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                     &small_req);
  MPI_Allreduce_init(MPI_IN_PLACE, big.data(), 70000, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                     &big_req);
  const MPI_Request small_kept = small_req, big_kept = big_req;
  bool ok = true;
  for (int k = 0; k < 12; ++k) {
    refill(in, comm, k);
    refill(big, comm, k + 100);
    ok = ok && MPI_Start(&small_req) == MPI_SUCCESS &&
         complete(small_req, comm, true) == MPI_SUCCESS && is_sum(comm, out, k);
    ok = ok && MPI_Start(&big_req) == MPI_SUCCESS &&
         complete(big_req, comm, true) == MPI_SUCCESS && is_sum(comm, big, k + 100);
  }
  expect(ok && small_req == small_kept && big_req == big_kept,
         "persistent: 12 starts each with new inputs, every completion call");
  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  std::vector<int> third = input(comm, 1000, 0), third_out(1000), user = input(comm, 5, 0),
                   user_out(5);
  int to_me = 0, from_me = -1;
  MPI_Request all[6];
  MPI_Allreduce_init(third.data(), third_out.data(), 1000, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                     &all[1]);
  MPI_Recv_init(&from_me, 1, MPI_INT, me, 78, comm, &all[0]);
  all[2] = small_req;
  MPI_Allreduce_init(user.data(), user_out.data(), 5, MPI_INT, op, comm, MPI_INFO_NULL, &all[3]);
  MPI_Send_init(&to_me, 1, MPI_INT, me, 78, comm, &all[4]);
  all[5] = big_req;
  ok = true;
  for (int k = 0; k < 5; ++k) {
    refill(in, comm, k + 20);
    refill(big, comm, k + 30);
    refill(third, comm, k + 40);
    refill(user, comm, k + 50);
    to_me = k + 60;
    ok = ok && MPI_Startall(6, all) == MPI_SUCCESS &&
         MPI_Waitall(6, all, MPI_STATUSES_IGNORE) == MPI_SUCCESS && is_sum(comm, out, k + 20) &&
         is_sum(comm, big, k + 30) && is_sum(comm, third_out, k + 40) &&
         is_sum(comm, user_out, k + 50) && from_me == k + 60;
  }
  expect(ok && all[2] == small_kept && all[5] == big_kept,
         "persistent: MPI_Startall and MPI_Waitall, mixed with MPI's own");
  // Served requests alone in MPI_Waitall (the preload completes these itself), with
  // MPI_REQUEST_NULL among them, whose status is empty. (A collective's source, tag and count
  // are undefined: MPICH's own persistent ones give those of an internal message.)
  MPI_Request ours[4] = {all[1], small_req, MPI_REQUEST_NULL, big_req};
  for (int k = 0; k < 3; ++k) {
    refill(in, comm, k + 90);
    refill(big, comm, k + 93);
    refill(third, comm, k + 96);
    MPI_Status st[4];
    ok = MPI_Startall(2, ours) == MPI_SUCCESS && MPI_Start(&ours[3]) == MPI_SUCCESS &&
         MPI_Waitall(4, ours, st) == MPI_SUCCESS && is_sum(comm, third_out, k + 96) &&
         is_sum(comm, out, k + 90) && is_sum(comm, big, k + 93);
    int elements = -1;
    MPI_Get_elements(&st[2], MPI_INT, &elements);
    expect(ok && elements == 0 && ours[0] == all[1] && ours[1] == small_kept &&
               ours[2] == MPI_REQUEST_NULL && ours[3] == big_kept &&
               st[2].MPI_SOURCE == MPI_ANY_SOURCE && st[2].MPI_TAG == MPI_ANY_TAG,
           "persistent: MPI_Startall and MPI_Waitall of served requests only, a null one");
  }
  for (int i : {0, 1, 3, 4}) MPI_Request_free(&all[i]);
  MPI_Op_free(&op);
  // MPI_Start of an active request: MPI's error (through MPI_COMM_WORLD's handler in MPICH).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  refill(in, comm, 70);
  int rc = MPI_Start(&small_req);
  const int again = MPI_Start(&small_req);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  int cls = MPI_SUCCESS;
  if (again != MPI_SUCCESS) MPI_Error_class(again, &cls);
  expect(rc == MPI_SUCCESS && cls == MPI_ERR_REQUEST &&
             MPI_Wait(&small_req, MPI_STATUS_IGNORE) == MPI_SUCCESS && is_sum(comm, out, 70),
         "persistent: MPI_Start of an active request: MPI_ERR_REQUEST, the operation goes on");
  MPI_Request_free(&small_req);
  MPI_Request_free(&big_req);
  expect(small_req == MPI_REQUEST_NULL && big_req == MPI_REQUEST_NULL,
         "persistent: MPI_Request_free");
  MPI_Comm dup;
  MPI_Comm_dup(comm, &dup);
  MPI_Request on_dup;
  MPI_Allreduce_init(in.data(), out.data(), 10, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &on_dup);
  ok = true;
  for (int k = 0; k < 3; ++k) {
    if (k == 1) MPI_Comm_free(&dup);
    refill(in, comm, k + 80);
    ok = ok && MPI_Start(&on_dup) == MPI_SUCCESS &&
         MPI_Wait(&on_dup, MPI_STATUS_IGNORE) == MPI_SUCCESS && is_sum(comm, out, k + 80);
  }
  MPI_Request_free(&on_dup);
  expect(ok, "persistent: started before and after its communicator's MPI_Comm_free");
}

// Persistent requests of two threads at once, each on a dup of its own: the matrix through
// MPI_Allreduce_init, MPI_Start and the completion calls.
void persistent_threads() {
  MPI_Comm a, b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_dup(MPI_COMM_WORLD, &b);
  auto work = [](MPI_Comm comm) {
    g_persistent = true;
    matrix(comm, false);
    g_persistent = false;
  };
  std::thread other(work, b);
  work(a);
  other.join();
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
}

// Only under the preload (MPICH 4.0.2's own persistent collective requests hang in MPI_Wait
// when inactive, abort in MPI_Cancel when active, and corrupt memory when freed active):
// inactive persistent requests in every completion call, which returns at once as for
// MPI_REQUEST_NULL; MPI_Testall on an active one; MPI_Cancel of an active one; an active one
// freed, whose operation goes on (its buffers are not touched until MPI_Finalize); then more
// operations. With `sum` and `max` (MPI_SUM and MPI_MAX: served; user-defined ops under
// COLLX_MPI_HOST_COPIES=1: MPI's own requests on host copies, which the preload completes).
void persistent_edges(MPI_Comm comm, MPI_Op sum, MPI_Op max) {
  std::vector<int> in = input(comm, 10, 0), out(10), other = input(comm, 10, 0);
  MPI_Request two[2];
  MPI_Allreduce_init(in.data(), out.data(), 10, MPI_INT, sum, comm, MPI_INFO_NULL, &two[0]);
  MPI_Allreduce_init(MPI_IN_PLACE, other.data(), 10, MPI_INT, max, comm, MPI_INFO_NULL,
                     &two[1]);
  const MPI_Request kept[2] = {two[0], two[1]};
  for (int started = 0; started < 2; ++started) {  // never started, then completed once
    const std::string when = started ? " (completed)" : " (never started)";
    int flag = 0, index = 0, outcount = 0, indices[2];
    MPI_Status st;
    bool ok = MPI_Wait(&two[0], &st) == MPI_SUCCESS && MPI_Test(&two[1], &flag, &st) ==
              MPI_SUCCESS && flag;
    flag = 0;
    ok = ok && MPI_Waitall(2, two, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
         MPI_Testall(2, two, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS && flag;
    ok = ok && MPI_Waitany(2, two, &index, &st) == MPI_SUCCESS && index == MPI_UNDEFINED;
    flag = 0;
    index = 0;
    ok = ok && MPI_Testany(2, two, &index, &flag, &st) == MPI_SUCCESS && flag &&
         index == MPI_UNDEFINED;
    ok = ok && MPI_Waitsome(2, two, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
         outcount == MPI_UNDEFINED;
    outcount = 0;
    ok = ok && MPI_Testsome(2, two, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
         outcount == MPI_UNDEFINED;
    flag = 0;
    ok = ok && MPI_Request_get_status(two[0], &flag, &st) == MPI_SUCCESS && flag;
    expect(ok && two[0] == kept[0] && two[1] == kept[1],
           "persistent, inactive: every completion call returns at once" + when);
    if (!started) {
      ok = MPI_Startall(2, two) == MPI_SUCCESS && MPI_Waitall(2, two, MPI_STATUSES_IGNORE) ==
           MPI_SUCCESS;
      int p = 0;
      MPI_Comm_size(comm, &p);
      expect(ok && is_sum(comm, out, 0) && other[0] == 7 * (p - 1) && other[9] == 9 + 7 * (p - 1),
             "persistent: the two ran");
    }
  }
  // MPI_Testall on an active one (the completion calls above do not use it on persistent
  // requests: MPICH's fails its own).
  refill(in, comm, 9);
  int done = 0;
  bool ok = MPI_Start(&two[0]) == MPI_SUCCESS;
  while (ok && !done) ok = MPI_Testall(2, two, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
  expect(ok && two[0] == kept[0] && is_sum(comm, out, 9), "persistent: MPI_Testall");
  // MPI_Cancel of an active one (erroneous): MPI's error for a persistent collective request
  // (plain MPICH aborts on its own), and the operation completes, not cancelled.
  refill(in, comm, 11);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ok = MPI_Start(&two[0]) == MPI_SUCCESS;
  const int cancel_rc = MPI_Cancel(&two[0]);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Status cancel_st;
  int cancelled = 1;
  ok = ok && MPI_Wait(&two[0], &cancel_st) == MPI_SUCCESS;
  MPI_Test_cancelled(&cancel_st, &cancelled);
  expect(ok && cancel_rc != MPI_SUCCESS && !cancelled && is_sum(comm, out, 11),
         "persistent: MPI_Cancel of an active one: MPI's error, the operation completes");
  // Freed while active: right after MPI_Start, and after MPI_Request_get_status (which puts
  // the operation behind a generalized request).
  static std::vector<int> freed[4];  // (two per call: a served one may still run)
  for (int asked = 0; asked < 2; ++asked) {
    std::vector<int>& mine = freed[(sum == MPI_SUM ? 0 : 2) + asked];
    mine = input(comm, 30000, 5);
    MPI_Request active;
    MPI_Allreduce_init(MPI_IN_PLACE, mine.data(), 30000, MPI_INT, sum, comm, MPI_INFO_NULL,
                       &active);
    MPI_Start(&active);
    int flag = 0;
    if (asked) MPI_Request_get_status(active, &flag, MPI_STATUS_IGNORE);
    MPI_Request_free(&active);
    expect(active == MPI_REQUEST_NULL,
           std::string("persistent, freed while active: MPI_REQUEST_NULL") +
               (asked ? " (after MPI_Request_get_status)" : ""));
  }
  for (int k = 0; k < 3; ++k) {
    refill(in, comm, k + 10);
    expect(MPI_Start(&two[0]) == MPI_SUCCESS && complete(two[0], comm, true) == MPI_SUCCESS &&
               is_sum(comm, out, k + 10),
           "persistent: an operation after a freed active request");
  }
  MPI_Request_free(&two[0]);
  MPI_Request_free(&two[1]);
}

// MPI_Comm_free while an operation on the communicator is outstanding: the operation completes
// normally (MPI's rule for pending operations).
void comm_free_pending() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<int> a = input(comm, 10, 30), b = input(comm, 100000, 31);
  MPI_Request reqs[2];
  MPI_Iallreduce(MPI_IN_PLACE, a.data(), 10, MPI_INT, MPI_SUM, comm, &reqs[0]);
  MPI_Iallreduce(MPI_IN_PLACE, b.data(), 100000, MPI_INT, MPI_SUM, comm, &reqs[1]);
  int p = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_free(&comm);
  expect(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE) == MPI_SUCCESS &&
             MPI_Wait(&reqs[1], MPI_STATUS_IGNORE) == MPI_SUCCESS,
         "operations outstanding at MPI_Comm_free complete");
  expect(is_sum(MPI_COMM_WORLD, a, 30) && is_sum(MPI_COMM_WORLD, b, 31),
         "operations outstanding at MPI_Comm_free: results");
}

// MPI's progress rule: rank 0's MPI_Isend must progress while rank 0 waits in a collective
// that the receiver joins only once the message arrived (a large message, whose first
// transfer needs the sender's progress; under the preload, libcollx runs MPI's progress while
// it waits). `how`: MPI_Allreduce ("blocking"), or MPI_Iallreduce + MPI_Wait of a small
// operation ("small", run by the waiting thread) or a large one ("large", run by libcollx's
// thread), or a large one completed by MPI_Waitall ("waitall": MPICH calls the generalized
// request's wait_fn). One per run: only the first such transfer after the libcollx
// communicator's creation reliably needs the sender.
void progress_while_waiting(const std::string& how) {
  const bool large = how == "large" || how == "waitall";
  const int count = large ? 70000 : 1;
  const int n = 1 << 21;
  std::vector<int> big(n, 3), v = input(MPI_COMM_WORLD, static_cast<size_t>(count), 5);
  few(MPI_COMM_WORLD, 1);  // (under the preload: creates the libcollx communicator)
  if (how != "blocking" && how != "small" && !large) {
    expect(false, "--progress blocking|small|large|waitall");
    return;
  }
  MPI_Request send = MPI_REQUEST_NULL, op = MPI_REQUEST_NULL;
  if (g_rank == 0) MPI_Isend(big.data(), n, MPI_INT, 1, 9, MPI_COMM_WORLD, &send);
  if (g_rank == 1) MPI_Recv(big.data(), n, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int rc = MPI_SUCCESS;
  if (how == "blocking") {
    rc = MPI_Allreduce(MPI_IN_PLACE, v.data(), count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    rc = MPI_Iallreduce(MPI_IN_PLACE, v.data(), count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &op);
    // A large one has started on libcollx's thread by now: MPI_Wait waits for that thread.
    // A small one has not (it would within 2 ms; 20 where ranks outnumber CPUs): MPI_Wait runs it.
    if (large) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (rc == MPI_SUCCESS) {
      rc = how == "waitall" ? MPI_Waitall(1, &op, MPI_STATUSES_IGNORE)
                            : MPI_Wait(&op, MPI_STATUS_IGNORE);
    }
  }
  expect(rc == MPI_SUCCESS && is_sum(MPI_COMM_WORLD, v, 5),
         how + ": a collective while rank 0's MPI_Isend waits for its receiver");
  expect(MPI_Wait(&send, MPI_STATUS_IGNORE) == MPI_SUCCESS, how + ": the send completes");
}

// A count no int holds, through the large-count functions: 2^31 + 11 uint8 sums in place,
// blocking, then non-blocking. Every byte is checked, and the 16 after the buffer. Rank r's
// byte i is i * 7 + (i >> 20) + r * 3 (mod 256), so the sum over p ranks is
// p * (i * 7 + (i >> 20)) + 3 * p * (p - 1) / 2: both loops run over blocks of 2^20 bytes with
// (i >> 20) fixed, in uint8 arithmetic the compiler vectorises (2^31 bytes each, per rank).
void huge() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const MPI_Count count = (MPI_Count{1} << 31) + 11;
  const size_t n = static_cast<size_t>(count), block = size_t{1} << 20;
  const std::unique_ptr<uint8_t[]> buf(new uint8_t[n + 16]);  // (not zeroed first: filled)
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    for (size_t b = 0; b < n; b += block) {
      const auto add = static_cast<uint8_t>((b >> 20) + g_rank * 3);
      for (size_t i = b; i < std::min(n, b + block); ++i) {
        buf[i] = static_cast<uint8_t>(static_cast<uint8_t>(i) * 7 + add);
      }
    }
    std::memset(buf.get() + n, 0x5a, 16);
    int rc = MPI_SUCCESS;
    if (nonblocking) {
      MPI_Request req = MPI_REQUEST_NULL;
      rc = MPI_Iallreduce_c(MPI_IN_PLACE, buf.get(), count, MPI_UINT8_T, MPI_SUM,
                            MPI_COMM_WORLD, &req);
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      rc = MPI_Allreduce_c(MPI_IN_PLACE, buf.get(), count, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
    }
    size_t bad = 0;
    for (size_t b = 0; b < n; b += block) {
      const auto add = static_cast<uint8_t>(p * (b >> 20) + 3 * p * (p - 1) / 2);
      const auto times = static_cast<uint8_t>(7 * p);
      uint32_t bad_here = 0;
      for (size_t i = b; i < std::min(n, b + block); ++i) {
        bad_here += buf[i] != static_cast<uint8_t>(static_cast<uint8_t>(i) * times + add);
      }
      bad += bad_here;
    }
    for (size_t i = n; i < n + 16; ++i) bad += buf[i] != 0x5a;
    const std::string fn = nonblocking ? "MPI_Iallreduce_c" : "MPI_Allreduce_c";
    expect(rc == MPI_SUCCESS, fn + " of 2^31 + 11 uint8: MPI_SUCCESS");
    expect(bad == 0, fn + " of 2^31 + 11 uint8: " + std::to_string(bad) + " wrong bytes");
  }
}

// An error handler that counts its calls and keeps the last error's class.
int g_errors = 0, g_error_class = MPI_SUCCESS;
void count_errors(MPI_Comm*, int* code, ...) {
  ++g_errors;
  MPI_Error_class(*code, &g_error_class);
}

// MPI_Comm_free while a request of the MPI library's own on the communicator is still
// pending on some ranks: MPICH runs a communicator's attribute delete callbacks only once no
// request holds it, so on those ranks later (here: in MPI_Wait, after an allreduce on
// MPI_COMM_WORLD that needs every rank). The preload must free its libcollx communicator at
// MPI_Comm_free all the same, where every rank calls it (before, rank 0 waited there for the
// others, which waited for it in the next allreduce: a deadlock until COLLX_TIMEOUT).
void free_pending() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm x;
  MPI_Comm_dup(MPI_COMM_WORLD, &x);
  few(x, 11);  // (under the preload: creates its libcollx communicator)
  struct { int v, i; } in{g_rank, g_rank}, out{-1, -1};
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, x, &req);  // passed through to MPICH
  if (g_rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_free(&x);
  expect(x == MPI_COMM_NULL, "MPI_Comm_free with a request of MPI's own pending on it");
  few(MPI_COMM_WORLD, 12);
  if (g_rank != 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  expect(out.v == p - 1 && out.i == p - 1, "the request pending at MPI_Comm_free completes");
  // MPI_Comm_free waits for the other members under the preload, so MPI's own operations
  // must progress meanwhile: rank 0 frees a communicator with an MPI_Ibarrier pending, which
  // the others wait for before they free it (its later rounds need rank 0's progress).
  MPI_Comm y;
  MPI_Comm_dup(MPI_COMM_WORLD, &y);
  few(y, 13);
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  if (g_rank != 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_free(&y);
  if (g_rank == 0) MPI_Wait(&req, MPI_STATUS_IGNORE);
  expect(y == MPI_COMM_NULL && req == MPI_REQUEST_NULL,
         "MPI_Comm_free on rank 0 with an MPI_Ibarrier pending that the others wait for");
  // An erroneous MPI_Comm_free (a handle already freed) reaches MPI_COMM_WORLD's error
  // handler once, with MPI_ERR_COMM from MPI_Comm_free itself, as without the preload.
  MPI_Comm z, stale;
  MPI_Comm_dup(MPI_COMM_WORLD, &z);
  few(z, 14);
  stale = z;
  MPI_Comm_free(&z);
  MPI_Errhandler counting;
  MPI_Comm_create_errhandler(count_errors, &counting);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, counting);
  const int rc = MPI_Comm_free(&stale);
  expect(rc != MPI_SUCCESS && g_errors == 1 && g_error_class == MPI_ERR_COMM,
         "MPI_Comm_free of a freed handle: one MPI_ERR_COMM (" + std::to_string(g_errors) +
             " errors)");
  // The same for the allreduce functions on the freed handle (a served type): one error each,
  // the buffers untouched.
  int a[2] = {1, 2}, b[2] = {7, 7};
  MPI_Request r = MPI_REQUEST_NULL;
  const char* const names[] = {"MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init",
                               "MPI_Allreduce_c"};
  for (int f = 0; f < 4; ++f) {
    g_errors = 0;
    g_error_class = MPI_SUCCESS;
    const int frc =
        f == 0   ? MPI_Allreduce(a, b, 2, MPI_INT, MPI_SUM, stale)
        : f == 1 ? MPI_Iallreduce(a, b, 2, MPI_INT, MPI_SUM, stale, &r)
        : f == 2 ? MPI_Allreduce_init(a, b, 2, MPI_INT, MPI_SUM, stale, MPI_INFO_NULL, &r)
                 : MPI_Allreduce_c(a, b, 2, MPI_INT, MPI_SUM, stale);
    expect(frc != MPI_SUCCESS && g_errors == 1 && g_error_class == MPI_ERR_COMM && a[0] == 1 &&
               a[1] == 2 && b[0] == 7 && b[1] == 7,
           std::string(names[f]) + " on a freed handle: one MPI_ERR_COMM (" +
               std::to_string(g_errors) + " errors)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&counting);
}

// --busy: an erroneous program, rank 0's second thread reducing on a communicator while its
// first thread waits inside MPI_Allreduce on it (MPI leaves concurrent collectives on one
// communicator undefined). Each of the second thread's calls (MPI_Allreduce, MPI_Iallreduce and
// their _c twins) comes back as MPI_ERR_OTHER through the communicator's handler, its buffers
// untouched and MPI_Iallreduce's request MPI_REQUEST_NULL; none of them disturbs the first
// thread's call, which the other ranks join after them, nor later calls on the communicator.
void busy() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int p = 0;
  MPI_Comm_size(comm, &p);
  few(comm, 1);  // (under the preload: creates the libcollx communicator)
  std::vector<int> v = input(comm, 1000, 50);
  if (g_rank != 0) {
    MPI_Recv(nullptr, 0, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    expect(MPI_Allreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS &&
               is_sum(comm, v, 50),
           "the call rank 0's first thread waits in");
  } else {
    std::atomic<bool> entering{false};
    int first_rc = MPI_ERR_OTHER;
    std::thread first([&] {
      entering = true;
      first_rc = MPI_Allreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, comm);
    });
    while (!entering) std::this_thread::yield();
    // (It waits there until the other ranks come, after the message below.)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::vector<int> send(1000, 3);
    std::vector<int> recv(1000, -7);
    auto failed_untouched = [&](int rc, const char* what) {
      int cls = MPI_SUCCESS;
      if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
      const bool untouched = std::all_of(send.begin(), send.end(), [](int x) { return x == 3; }) &&
                             std::all_of(recv.begin(), recv.end(), [](int x) { return x == -7; });
      expect(rc != MPI_SUCCESS && cls == MPI_ERR_OTHER && untouched,
             std::string(what) + " on a communicator busy in another thread: MPI_ERR_OTHER, "
                                 "buffers untouched");
    };
    failed_untouched(MPI_Allreduce(send.data(), recv.data(), 1000, MPI_INT, MPI_SUM, comm),
                     "MPI_Allreduce");
    failed_untouched(MPI_Allreduce_c(send.data(), recv.data(), 1000, MPI_INT, MPI_SUM, comm),
                     "MPI_Allreduce_c");
    for (bool large : {false, true}) {
      MPI_Request req;
      std::memset(&req, 0x5a, sizeof req);  // (not MPI_REQUEST_NULL: the call must set it)
      const int rc =
          large ? MPI_Iallreduce_c(send.data(), recv.data(), 1000, MPI_INT, MPI_SUM, comm, &req)
                : MPI_Iallreduce(send.data(), recv.data(), 1000, MPI_INT, MPI_SUM, comm, &req);
      failed_untouched(rc, large ? "MPI_Iallreduce_c" : "MPI_Iallreduce");
      expect(req == MPI_REQUEST_NULL, "a failed post leaves MPI_REQUEST_NULL");
    }
    for (int q = 1; q < p; ++q) MPI_Send(nullptr, 0, MPI_INT, q, 0, MPI_COMM_WORLD);
    first.join();
    expect(first_rc == MPI_SUCCESS && is_sum(comm, v, 50),
           "the first thread's call, undisturbed by the second's");
  }
  few(comm, 2);  // the communicator goes on working
  MPI_Comm_free(&comm);
}

// MPI_COMM_SELF's delete callback of --self-callback: an allreduce while MPI_Finalize runs.
bool g_self_ok = false;
int self_callback(MPI_Comm, int, void*, void*) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  std::vector<int> v = input(MPI_COMM_WORLD, 1000, 40);
  g_self_ok = MPI_Allreduce(MPI_IN_PLACE, v.data(), 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS &&
              is_sum(MPI_COMM_WORLD, v, 40);
  return MPI_SUCCESS;
}

// --sessions: MPI 4.0's Sessions model alone (no MPI_Init): a communicator from the world
// process set; MPI_Allreduce and MPI_Iallreduce + MPI_Wait of 1, 1000 and 70 000 ints must
// give the exact sums (the preload does not start without MPI_Init: they pass through). Its
// own report: MPI_COMM_WORLD does not exist here.
int sessions() {
  MPI_Session session = MPI_SESSION_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session) != MPI_SUCCESS ||
      MPI_Group_from_session_pset(session, "mpi://WORLD", &group) != MPI_SUCCESS ||
      MPI_Comm_create_from_group(group, "org.libcollx.test", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                 &comm) != MPI_SUCCESS) {
    std::fprintf(stderr, "FAILED: a communicator from a session\n");
    return 1;
  }
  MPI_Comm_rank(comm, &g_rank);
  for (const size_t count : {size_t{1}, size_t{1000}, size_t{70000}}) {
    std::vector<int> v = input(comm, count, 3), w = input(comm, count, 4), sum(count);
    expect(MPI_Allreduce(v.data(), sum.data(), static_cast<int>(count), MPI_INT, MPI_SUM,
                         comm) == MPI_SUCCESS &&
               is_sum(comm, sum, 3),
           "sessions: MPI_Allreduce of " + std::to_string(count));
    MPI_Request req = MPI_REQUEST_NULL;
    expect(MPI_Iallreduce(MPI_IN_PLACE, w.data(), static_cast<int>(count), MPI_INT, MPI_SUM, comm,
                          &req) == MPI_SUCCESS &&
               MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && is_sum(comm, w, 4),
           "sessions: MPI_Iallreduce of " + std::to_string(count));
  }
  int local[2] = {g_passed.load(), g_failed.load()}, total[2] = {0, 0};
  MPI_Allreduce(local, total, 2, MPI_INT, MPI_SUM, comm);
  if (g_rank == 0) std::printf("%d passed, %d failed\n", total[0], total[1]);
  MPI_Comm_free(&comm);
  MPI_Group_free(&group);
  MPI_Session_finalize(&session);
  return g_failed == 0 ? 0 : 1;
}

// --fork (only under the preload: with MPICH alone a forked child's MPI_Allreduce takes part in
// its parent's collectives, and a parent's call fails, aborting the job, or gives wrong sums):
// after a served MPI_Allreduce on MPI_COMM_WORLD every rank forks a child, which calls
// MPI_Allreduce on it with MPI_ERRORS_RETURN: an error, since the parent's libcollx
// communicator serves only the parent (the child exits 0 if so). Meanwhile the parents run 20
// allreduces of 1 and 70 000 ints with new values each: exact.
void forked_child() {
  std::vector<int> v = input(MPI_COMM_WORLD, 1000, 1), sum(1000);
  expect(MPI_Allreduce(v.data(), sum.data(), 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
                 MPI_SUCCESS &&
             is_sum(MPI_COMM_WORLD, sum, 1),
         "fork: the allreduce before the fork");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int rc = MPI_Allreduce(v.data(), sum.data(), 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::_Exit(rc != MPI_SUCCESS ? 0 : 1);
  }
  expect(pid > 0, "fork: fork()");
  for (int k = 2; k < 22; ++k) {
    const size_t count = k % 2 ? 70000 : 1;
    std::vector<int> in = input(MPI_COMM_WORLD, count, k), out(count);
    expect(MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_INT, MPI_SUM,
                         MPI_COMM_WORLD) == MPI_SUCCESS &&
               is_sum(MPI_COMM_WORLD, out, k),
           "fork: the parent's allreduce " + std::to_string(k) + " of " + std::to_string(count));
  }
  int st = 0;
  if (pid > 0) waitpid(pid, &st, 0);
  expect(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
         "fork: the child's MPI_Allreduce on its parent's communicator is an error");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--sessions") return sessions();
  int provided = MPI_THREAD_SINGLE;
  if (mode == "--thread-multiple" || mode == "--busy") {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (mode == "--no-allreduce") {
    MPI_Barrier(MPI_COMM_WORLD);
    ++g_passed;
  } else if (mode == "--thread-multiple") {
    expect(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    if (provided == MPI_THREAD_MULTIPLE) {
      std::vector<MPI_Comm> dups(6);
      for (MPI_Comm& d : dups) MPI_Comm_dup(MPI_COMM_WORLD, &d);
      // Thread t owns dups t, t+2, t+4: the first call on each creates its communicator.
      auto work = [&](int t, MPI_Comm big) {
        g_nonblocking = t == 1;  // thread 1 through MPI_Iallreduce
        for (int k = t; k < 6; k += 2) few(dups[k], k);
        matrix(big, false);
        for (int k = t + 2; k < 6; k += 2) MPI_Comm_free(&dups[k]);
      };
      std::thread other(work, 1, dups[1]);
      work(0, MPI_COMM_WORLD);
      other.join();
      few(dups[0], 0);  // the two left still work; MPI_Finalize destroys them
      few(dups[1], 1);
      free_while_reducing();
      handoff();
      persistent_threads();
    }
    passthrough(MPI_COMM_WORLD);
  } else if (mode == "--busy") {
    expect(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    if (provided == MPI_THREAD_MULTIPLE) busy();
  } else if (mode == "--complex") {
    complex_types(MPI_COMM_WORLD, matrix_counts(true), true);
  } else if (mode == "--float16") {
    float16(MPI_COMM_WORLD);
  } else if (mode == "--late-free") {
    late_free();
  } else if (mode == "--libcollx-error") {
    libcollx_error();
    // A failed generalized request reports through MPI_COMM_WORLD's handler in MPICH.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_nonblocking = true;
    libcollx_error();
    g_persistent = true;  // (a persistent request's operation reports likewise)
    libcollx_error();
  } else if (mode == "--unusable") {
    unusable_comm();
  } else if (mode == "--grequest-fails") {
    grequest_fails();
  } else if (mode == "--progress") {
    progress_while_waiting(argc > 2 ? argv[2] : "");
  } else if (mode == "--free-pending") {
    free_pending();
  } else if (mode == "--request-free") {
    request_free(MPI_COMM_WORLD);
  } else if (mode == "--large-count") {
    g_large = true;
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &split);
    matrix(MPI_COMM_WORLD, true);
    matrix(split, false);
    passthrough(MPI_COMM_WORLD);
    g_nonblocking = true;
    matrix(MPI_COMM_WORLD, false);
    passthrough(MPI_COMM_WORLD);
    intercomm(MPI_COMM_WORLD);
    MPI_Comm_free(&split);
  } else if (mode == "--self-callback") {
    int keyval = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_callback, &keyval, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
    ++g_passed;
    const int rc = collx::test::mpi_finish(g_passed.load(), g_failed.load());
    if (!g_self_ok) std::fprintf(stderr, "rank %d: FAILED the allreduce in MPI_COMM_SELF's delete callback\n", g_rank);
    return g_self_ok ? rc : 1;
  } else if (mode == "--huge") {
    huge();
  } else if (mode == "--fork") {
    forked_child();
  } else if (mode == "--persistent") {
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &split);
    g_persistent = true;
    matrix(MPI_COMM_WORLD, true);
    matrix(split, false);
    passthrough(MPI_COMM_WORLD);
    intercomm(MPI_COMM_WORLD);
    g_large = true;
    matrix(split, false);
    g_large = false;
    g_persistent = false;
    persistent_life(MPI_COMM_WORLD);
    persistent_life(split);
    MPI_Comm_free(&split);
  } else if (mode == "--persistent-edges") {
    persistent_edges(MPI_COMM_WORLD, MPI_SUM, MPI_MAX);
    const char* copies = std::getenv("COLLX_MPI_HOST_COPIES");
    if (copies != nullptr && std::strcmp(copies, "1") == 0) {
      MPI_Op sum, max;
      MPI_Op_create(user_sum, 1, &sum);
      MPI_Op_create(user_max, 1, &max);
      persistent_edges(MPI_COMM_WORLD, sum, max);
      MPI_Op_free(&sum);
      MPI_Op_free(&max);
    }
  } else if (mode == "--nonblocking") {
    g_nonblocking = true;
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &split);
    matrix(MPI_COMM_WORLD, true);
    matrix(split, false);
    passthrough(MPI_COMM_WORLD);
    intercomm(MPI_COMM_WORLD);
    several(MPI_COMM_WORLD);
    several(split);
    comm_free_pending();
    disconnect();
    MPI_Comm_free(&split);
  } else {
    MPI_Comm dup, split, reversed, self;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &split);
    MPI_Comm_split(MPI_COMM_WORLD, 0, p - g_rank, &reversed);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank, 0, &self);
    // The split first: its libcollx communicators, made before any larger one, count all the
    // machine's processes for their watch period all the same (run_preloaded.sh checks it).
    matrix(split, false);
    matrix(MPI_COMM_WORLD, true);
    matrix(dup, false);
    matrix(reversed, false);
    matrix(self, false);
    passthrough(MPI_COMM_WORLD);
    passthrough(split);
    intercomm(MPI_COMM_WORLD);
    disconnect();
    MPI_Comm_free(&dup);  // frees its libcollx communicator; the others go at MPI_Finalize
    matrix(MPI_COMM_WORLD, false);
    MPI_Comm_free(&split);
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&self);
  }
  return collx::test::mpi_finish(g_passed.load(), g_failed.load());
}
