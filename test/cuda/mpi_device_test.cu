// An unmodified MPI program's allreduce calls on cudaMalloc'd buffers, for the PMPI preload
// (which makes MPI_Allreduce CUDA-aware on an MPI that is not):
//   mpiexec -n N env LD_PRELOAD=libcollx_mpi.so mpi_device_test [--host]
// - served calls (predefined types and ops): MPI_Allreduce over the dtype x op x count x
//   in-place matrix, and MPI_Allreduce_c, bitwise against the exact result and across ranks;
// - calls the preload passes to the MPI library, which it gives host copies of the datatype's
//   extent: user-defined ops on a derived contiguous type, on a strided vector whose gaps must
//   come back untouched, and on MPI_INT, through MPI_Allreduce and through MPI_Iallreduce
//   (whose copies come back when it completes, in MPI_Wait, MPI_Waitall or MPI_Test);
// - served MPI_Iallreduce on device buffers ended by MPI_Wait, MPI_Waitall and an MPI_Test
//   loop, and one ended by MPI_Test on a thread that has never called CUDA;
// - persistent requests: served ones started several times (MPI_Start, MPI_Startall), and two
//   with a user-defined op, which MPI runs on host copies made again at every start.
// Every ranks' output buffer has guard bytes after it. With --host the buffers are malloc'd
// (the same checks on a machine without a GPU, so that the test itself is tested in CI);
// without it the program exits 77 (skipped) where there is no GPU. Ranks take the GPUs round
// robin, so several ranks per GPU is the usual case.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/cuda_ok.h"
#include "common/pattern.h"
#include "topo/node.h"

using namespace collx::test;

namespace {

bool g_host = false;  // --host: malloc'd buffers
int g_rank = 0, g_size = 1, g_passed = 0, g_failed = 0;

void expect(bool ok, const std::string& what) {
  if (ok) {
    ++g_passed;
  } else if (++g_failed <= 20) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, what.c_str());
  }
}

// The buffers' memory: the GPU's, or the host's under --host.
void* mem_alloc(size_t bytes) {
  void* p = nullptr;
  if (g_host) {
    p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) std::exit(1);
  } else {
    CUDA_OK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  }
  return p;
}
void mem_free(void* p) {
  if (g_host) std::free(p);
  else CUDA_OK(cudaFree(p));
}
void upload(void* dst, const void* src, size_t bytes) {
  if (g_host) std::memcpy(dst, src, bytes);
  else CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void download(void* dst, const void* src, size_t bytes) {
  if (g_host) std::memcpy(dst, src, bytes);
  else CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

constexpr size_t kGuard = 64;
constexpr uint8_t kPoison = 0xab;

// A receive buffer of `bytes` plus guard bytes, all poisoned, and (unless in place) a send
// buffer holding `in`.
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  size_t bytes = 0;
  Buffers(const std::vector<uint8_t>& in, bool in_place) : bytes(in.size()) {
    recv = mem_alloc(bytes + kGuard);
    std::vector<uint8_t> poison(bytes + kGuard, kPoison);
    upload(recv, poison.data(), poison.size());
    if (in_place) {
      upload(recv, in.data(), bytes);
    } else {
      send = mem_alloc(bytes);
      upload(send, in.data(), bytes);
    }
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
    mem_free(recv);
    if (send != nullptr) mem_free(send);
  }
  const void* send_arg() const { return send == nullptr ? MPI_IN_PLACE : send; }
  // The receive buffer and its guard bytes.
  std::vector<uint8_t> result() const {
    std::vector<uint8_t> out(bytes + kGuard);
    download(out.data(), recv, out.size());
    return out;
  }
};

// The result against `want` bitwise, the guard bytes untouched, and the same bytes on every
// rank (through the MPI library's own allreduce on a host value).
void check(const Buffers& b, const std::vector<uint8_t>& want, const std::string& what) {
  const std::vector<uint8_t> got = b.result();
  expect(std::memcmp(got.data(), want.data(), want.size()) == 0, what + ": result");
  bool guard = true;
  for (size_t i = want.size(); i < got.size(); ++i) guard = guard && got[i] == kPoison;
  expect(guard, what + ": guard bytes");
  const unsigned long long h = collx::fnv1a(got.data(), want.size());
  unsigned long long lo = 0, hi = 0;
  PMPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  PMPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  expect(lo == hi, what + ": identical on every rank");
}

struct TypePair {
  MPI_Datatype mpi;
  collx_dtype_t dtype;
};
struct OpPair {
  MPI_Op mpi;
  collx_op_t op;
};
const TypePair kTypes[] = {{MPI_FLOAT, COLLX_FLOAT32}, {MPI_DOUBLE, COLLX_FLOAT64},
                           {MPI_INT, COLLX_INT32},     {MPI_UNSIGNED_CHAR, COLLX_UINT8},
                           {MPI_INT64_T, COLLX_INT64}, {MPI_UINT16_T, COLLX_UINT16}};
const OpPair kOps[] = {{MPI_SUM, COLLX_SUM},   {MPI_PROD, COLLX_PROD}, {MPI_MIN, COLLX_MIN},
                       {MPI_MAX, COLLX_MAX},   {MPI_BAND, COLLX_BAND}, {MPI_BOR, COLLX_BOR},
                       {MPI_BXOR, COLLX_BXOR}};

std::vector<uint8_t> input(collx_dtype_t d, collx_op_t op, size_t count) {
  std::vector<uint8_t> v(count * collx_dtype_size(d));
  fill_input(d, op, g_rank, count, v.data());
  return v;
}
std::vector<uint8_t> expected(collx_dtype_t d, collx_op_t op, size_t count) {
  std::vector<uint8_t> v(count * collx_dtype_size(d));
  fill_expected(d, op, g_size, count, v.data());
  return v;
}

// Served: MPI_Allreduce over the matrix (the preload hands these to libcollx).
void served_matrix() {
  const size_t big = (size_t{1} << 20) + 3;
  for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(g_size) + 1, size_t{1000},
                       size_t{70000} + 3, big}) {
    for (const TypePair& t : kTypes) {
      for (const OpPair& o : kOps) {
        if (!op_valid(t.dtype, o.op)) continue;
        if (count == big && o.op != COLLX_SUM) continue;  // (the large count: sums only)
        const std::vector<uint8_t> in = input(t.dtype, o.op, count),
                                   want = expected(t.dtype, o.op, count);
        for (bool in_place : {false, true}) {
          const Buffers b(in, in_place);
          const int rc = MPI_Allreduce(b.send_arg(), b.recv, static_cast<int>(count), t.mpi,
                                       o.mpi, MPI_COMM_WORLD);
          const std::string what = std::string("MPI_Allreduce ") + collx_dtype_name(t.dtype) +
                                   " " + collx_op_name(o.op) + " count " +
                                   std::to_string(count) + (in_place ? " in place" : "");
          expect(rc == MPI_SUCCESS, what + ": return code");
          check(b, want, what);
        }
      }
    }
  }
  const size_t count = 123457;
  const Buffers b(input(COLLX_FLOAT32, COLLX_SUM, count), false);
  expect(MPI_Allreduce_c(b.send_arg(), b.recv, static_cast<MPI_Count>(count), MPI_FLOAT,
                         MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
         "MPI_Allreduce_c: return code");
  check(b, expected(COLLX_FLOAT32, COLLX_SUM, count), "MPI_Allreduce_c float32 sum");
}

// Datatypes that are not predefined, with a user-defined op (MPICH 4.0 defines MPI_SUM on
// predefined types only): pairs of floats, and every other float of 2 kStrided - 1.
constexpr int kStrided = 4099;
MPI_Datatype g_pair = MPI_DATATYPE_NULL, g_strided = MPI_DATATYPE_NULL;

void float_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  const float* a = static_cast<const float*>(in);
  float* b = static_cast<float*>(inout);
  const int step = *dt == g_strided ? 2 : 1;
  const int floats = *dt == g_strided ? kStrided : *dt == g_pair ? 2 : 1;
  for (int e = 0; e < *len; ++e) {
    for (int i = 0; i < floats; ++i) b[i * step] += a[i * step];
    a += *dt == g_strided ? 2 * kStrided - 1 : floats;
    b += *dt == g_strided ? 2 * kStrided - 1 : floats;
  }
}

void int_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const int32_t* a = static_cast<const int32_t*>(in);
  int32_t* b = static_cast<int32_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] += a[i];
}

// One call the preload passes to the MPI library, with its input and exact result.
struct PassedCall {
  std::string what;
  MPI_Datatype type;
  MPI_Op op;
  int count;
  std::vector<uint8_t> in, want;
};

// The calls passed through, for `in_place`: a contiguous pair type, a strided vector whose
// gaps must come back untouched, and a user-defined op on MPI_INT.
std::vector<PassedCall> passed_calls(bool in_place, MPI_Op fsum, MPI_Op isum) {
  std::vector<PassedCall> calls;
  const std::string how = in_place ? " in place" : "";
  const int pairs = 5003;
  calls.push_back({"contiguous pair type" + how, g_pair, fsum, pairs,
                   input(COLLX_FLOAT32, COLLX_SUM, 2 * pairs),
                   expected(COLLX_FLOAT32, COLLX_SUM, 2 * pairs)});
  // The gaps hold kGap in the input, so in place they keep it; otherwise they keep the
  // receive buffer's poison.
  constexpr uint8_t kGap = 0x5a;
  const size_t floats = 2 * static_cast<size_t>(kStrided) - 1;
  std::vector<uint8_t> in = input(COLLX_FLOAT32, COLLX_SUM, floats);
  for (size_t i = 1; i < floats; i += 2) std::memset(&in[4 * i], kGap, 4);
  std::vector<uint8_t> want(4 * floats, in_place ? kGap : kPoison);
  const std::vector<uint8_t> sums = expected(COLLX_FLOAT32, COLLX_SUM, floats);
  for (size_t i = 0; i < floats; i += 2) std::memcpy(&want[4 * i], &sums[4 * i], 4);
  calls.push_back({"strided vector type" + how + " (gaps untouched)", g_strided, fsum, 1, in,
                   want});
  const int count = 30011;
  calls.push_back({"user-defined op" + how, MPI_INT, isum, count,
                   input(COLLX_INT32, COLLX_SUM, count), expected(COLLX_INT32, COLLX_SUM, count)});
  return calls;
}

// Passed to the MPI library through host copies of the datatype's extent: MPI_Allreduce, and
// MPI_Iallreduce (the last as MPI_Iallreduce_c) whose copies come back when it completes,
// ended by MPI_Wait, MPI_Waitall beside a served one, and an MPI_Test loop.
void passed_through() {
  MPI_Type_contiguous(2, MPI_FLOAT, &g_pair);
  MPI_Type_commit(&g_pair);
  MPI_Type_vector(kStrided, 1, 2, MPI_FLOAT, &g_strided);
  MPI_Type_commit(&g_strided);
  MPI_Op fsum, isum;
  MPI_Op_create(float_sum, 1, &fsum);
  MPI_Op_create(int_sum, 1, &isum);
  for (bool in_place : {false, true}) {
    for (const PassedCall& c : passed_calls(in_place, fsum, isum)) {
      const Buffers b(c.in, in_place);
      expect(MPI_Allreduce(b.send_arg(), b.recv, c.count, c.type, c.op, MPI_COMM_WORLD) ==
                 MPI_SUCCESS,
             c.what + ": return code");
      check(b, c.want, c.what);
    }
    const std::vector<PassedCall> calls = passed_calls(in_place, fsum, isum);
    std::vector<std::unique_ptr<Buffers>> bufs;
    MPI_Request reqs[4];
    for (size_t k = 0; k < calls.size(); ++k) {
      const PassedCall& c = calls[k];
      bufs.push_back(std::make_unique<Buffers>(c.in, in_place));
      const int rc = k + 1 < calls.size()
                         ? MPI_Iallreduce(bufs[k]->send_arg(), bufs[k]->recv, c.count, c.type,
                                          c.op, MPI_COMM_WORLD, &reqs[k])
                         : MPI_Iallreduce_c(bufs[k]->send_arg(), bufs[k]->recv, c.count, c.type,
                                            c.op, MPI_COMM_WORLD, &reqs[k]);
      expect(rc == MPI_SUCCESS, "MPI_Iallreduce post, " + c.what);
    }
    const int served_count = 4099;
    const Buffers served(input(COLLX_FLOAT32, COLLX_SUM, served_count), in_place);
    expect(MPI_Iallreduce(served.send_arg(), served.recv, served_count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD, &reqs[3]) == MPI_SUCCESS,
           "MPI_Iallreduce post, served beside passed-through ones");
    expect(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait, " + calls[0].what);
    MPI_Request mixed[2] = {reqs[1], reqs[3]};
    expect(MPI_Waitall(2, mixed, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
           "MPI_Waitall, " + calls[1].what + " and a served one");
    for (int done = 0; !done;) {
      expect(MPI_Test(&reqs[2], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS,
             "MPI_Test, " + calls[2].what);
    }
    for (size_t k = 0; k < calls.size(); ++k) {
      check(*bufs[k], calls[k].want, "MPI_Iallreduce " + calls[k].what);
    }
    check(served, expected(COLLX_FLOAT32, COLLX_SUM, served_count),
          "MPI_Iallreduce served beside passed-through ones");
  }
  MPI_Op_free(&fsum);
  MPI_Op_free(&isum);
  MPI_Type_free(&g_pair);
  MPI_Type_free(&g_strided);
}

// Served MPI_Iallreduce on device buffers: several posted at once, ended by MPI_Wait (the
// last), MPI_Waitall (the middle ones) and an MPI_Test loop (the first).
void nonblocking() {
  constexpr int kOpsPosted = 4;
  std::vector<Buffers*> bufs;
  MPI_Request reqs[kOpsPosted];
  for (int k = 0; k < kOpsPosted; ++k) {
    const size_t count = 1000u * (k + 1) * (k + 1) + 1;
    bufs.push_back(new Buffers(input(COLLX_FLOAT32, COLLX_SUM, count), k % 2 == 1));
    expect(MPI_Iallreduce(bufs[k]->send_arg(), bufs[k]->recv, static_cast<int>(count), MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD, &reqs[k]) == MPI_SUCCESS,
           "MPI_Iallreduce post " + std::to_string(k));
  }
  expect(MPI_Wait(&reqs[kOpsPosted - 1], MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
  expect(MPI_Waitall(kOpsPosted - 2, reqs + 1, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
         "MPI_Waitall");
  for (int done = 0; !done;) {
    expect(MPI_Test(&reqs[0], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test");
  }
  for (int k = 0; k < kOpsPosted; ++k) {
    const size_t count = bufs[k]->bytes / sizeof(float);
    check(*bufs[k], expected(COLLX_FLOAT32, COLLX_SUM, count),
          "MPI_Iallreduce " + std::to_string(k) + " count " + std::to_string(count));
    delete bufs[k];
  }
}

// Persistent requests on device buffers: a served one (MPI_Allreduce_init) started three
// times with new inputs and ended by MPI_Wait, then with a second by MPI_Startall and
// MPI_Waitall; two the preload passes to MPI (a user-defined op, one in place), which MPI runs
// on host copies, started three times with new inputs and ended by MPI_Wait, an MPI_Test loop
// and MPI_Waitall beside a served one.
void persistent() {
  const size_t count = 70001;
  const Buffers a(input(COLLX_FLOAT32, COLLX_SUM, count), false);
  const Buffers b(input(COLLX_INT32, COLLX_SUM, 1000), true);
  MPI_Request reqs[2];
  expect(MPI_Allreduce_init(a.send, a.recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                            MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]) == MPI_SUCCESS &&
             MPI_Allreduce_init(MPI_IN_PLACE, b.recv, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &reqs[1]) == MPI_SUCCESS,
         "MPI_Allreduce_init on device buffers");
  // New inputs before each start: the pattern's small integers times k + 1 (sums stay exact).
  auto scaled = [&](std::vector<uint8_t> v, int k) {
    for (size_t i = 0; i < count; ++i) {
      float f = 0;
      std::memcpy(&f, v.data() + 4 * i, 4);
      f *= static_cast<float>(k + 1);
      std::memcpy(v.data() + 4 * i, &f, 4);
    }
    return v;
  };
  for (int k = 0; k < 3; ++k) {
    const std::vector<uint8_t> in = scaled(input(COLLX_FLOAT32, COLLX_SUM, count), k);
    upload(a.send, in.data(), in.size());
    expect(MPI_Start(&reqs[0]) == MPI_SUCCESS &&
               MPI_Wait(&reqs[0], MPI_STATUS_IGNORE) == MPI_SUCCESS,
           "persistent start " + std::to_string(k));
    check(a, scaled(expected(COLLX_FLOAT32, COLLX_SUM, count), k),
          "persistent float32 sum, start " + std::to_string(k));
  }
  upload(a.send, input(COLLX_FLOAT32, COLLX_SUM, count).data(), count * 4);
  expect(MPI_Startall(2, reqs) == MPI_SUCCESS &&
             MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
         "persistent: MPI_Startall and MPI_Waitall");
  check(a, expected(COLLX_FLOAT32, COLLX_SUM, count), "persistent float32 sum by MPI_Startall");
  check(b, expected(COLLX_INT32, COLLX_SUM, 1000), "persistent int32 sum in place");
  MPI_Request_free(&reqs[0]);
  MPI_Request_free(&reqs[1]);
  MPI_Op isum;
  MPI_Op_create(int_sum, 1, &isum);
  const Buffers c(input(COLLX_INT32, COLLX_SUM, 100), false);
  const Buffers d(input(COLLX_INT32, COLLX_SUM, 100), true);
  MPI_Request user[3];
  expect(MPI_Allreduce_init(c.send, c.recv, 100, MPI_INT, isum, MPI_COMM_WORLD, MPI_INFO_NULL,
                            &user[0]) == MPI_SUCCESS &&
             MPI_Allreduce_init(MPI_IN_PLACE, d.recv, 100, MPI_INT, isum, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &user[1]) == MPI_SUCCESS,
         "MPI_Allreduce_init with a user-defined op on device buffers");
  MPI_Allreduce_init(a.send, a.recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &user[2]);
  auto times = [](std::vector<uint8_t> v, int k) {  // int32 values times k + 1
    for (size_t i = 0; i + 4 <= v.size(); i += 4) {
      int32_t x = 0;
      std::memcpy(&x, v.data() + i, 4);
      x *= k + 1;
      std::memcpy(v.data() + i, &x, 4);
    }
    return v;
  };
  const std::vector<uint8_t> poison(400, kPoison), poison_a(count * 4, kPoison);
  for (int k = 0; k < 3; ++k) {
    const std::vector<uint8_t> in = times(input(COLLX_INT32, COLLX_SUM, 100), k);
    upload(c.send, in.data(), in.size());
    upload(c.recv, poison.data(), poison.size());
    upload(d.recv, in.data(), in.size());
    upload(a.recv, poison_a.data(), poison_a.size());
    const std::string how = k == 0 ? "MPI_Wait" : k == 1 ? "MPI_Test" : "MPI_Waitall";
    bool ok = MPI_Start(&user[0]) == MPI_SUCCESS && MPI_Start(&user[1]) == MPI_SUCCESS;
    if (k == 0) {
      ok = ok && MPI_Wait(&user[0], MPI_STATUS_IGNORE) == MPI_SUCCESS &&
           MPI_Wait(&user[1], MPI_STATUS_IGNORE) == MPI_SUCCESS;
    } else if (k == 1) {
      for (int i = 0; i < 2 && ok; ++i) {
        for (int done = 0; ok && !done;) {
          ok = MPI_Test(&user[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        }
      }
    } else {
      ok = ok && MPI_Start(&user[2]) == MPI_SUCCESS &&
           MPI_Waitall(3, user, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
      check(a, expected(COLLX_FLOAT32, COLLX_SUM, count), "persistent float32 sum beside them");
    }
    expect(ok, "persistent with a user-defined op: MPI_Start and " + how);
    const std::vector<uint8_t> want = times(expected(COLLX_INT32, COLLX_SUM, 100), k);
    check(c, want, "persistent with a user-defined op, ended by " + how);
    check(d, want, "persistent with a user-defined op in place, ended by " + how);
  }
  for (MPI_Request& r : user) MPI_Request_free(&r);
  MPI_Op_free(&isum);
}

// A served MPI_Iallreduce ended by MPI_Test on a thread that has never called CUDA (the
// operation may run there).
void tested_on_another_thread() {
  const size_t count = 65537;
  const Buffers b(input(COLLX_FLOAT32, COLLX_SUM, count), true);
  MPI_Request req;
  expect(MPI_Iallreduce(MPI_IN_PLACE, b.recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD, &req) == MPI_SUCCESS,
         "MPI_Iallreduce post (tested on another thread)");
  int rc = MPI_SUCCESS;
  std::thread tester([&] {
    for (int done = 0; !done && rc == MPI_SUCCESS;) rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  });
  tester.join();
  expect(rc == MPI_SUCCESS, "MPI_Test on another thread");
  check(b, expected(COLLX_FLOAT32, COLLX_SUM, count), "MPI_Iallreduce tested on another thread");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--host") == 0) {
      g_host = true;
    } else {
      std::fprintf(stderr, "usage: %s [--host]\n", argv[0]);
      return 2;
    }
  }
  int devices = 0;
  if (!g_host && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    std::printf("SKIP: no CUDA device (--host runs the same checks on host memory)\n");
    return 77;  // before MPI_Init: every rank finds the same
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (!g_host) CUDA_OK(cudaSetDevice(g_rank % devices));
  served_matrix();
  passed_through();
  nonblocking();
  persistent();
  if (provided == MPI_THREAD_MULTIPLE) tested_on_another_thread();
  else if (g_rank == 0) std::printf("(no MPI_THREAD_MULTIPLE: the other thread's test not run)\n");
  int failed = 0;
  PMPI_Allreduce(&g_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d (%s memory): %d passed, %d failed\n", g_rank, g_host ? "host" : "device",
              g_passed, g_failed);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
