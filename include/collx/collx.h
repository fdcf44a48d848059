/* libcollx: allreduce over UCX, for host buffers and CUDA device buffers (see collx_allreduce).
 *
 * Every function returns a collx_status_t; on failure collx_last_error() returns a message
 * (thread-local, valid until the next libcollx call on the same thread) that names the
 * argument, rank, peer or step involved. The library never aborts, never prints unless asked
 * and never waits without a deadline (COLLX_TIMEOUT seconds).
 *
 * Threads (each rule is tested in test/test_threads.cc):
 *   collx_init, collx_finalize   any thread, concurrently with each other (reference counted);
 *                                the last collx_finalize must not race with calls on
 *                                communicators (it fails while any exists).
 *   collx_comm_create            any thread, concurrently: the creations of different
 *                                communicators may overlap in time and start in different
 *                                orders in different processes (their ids are agreed with a
 *                                retry when two collide), and the ranks of one communicator may
 *                                be threads of one process.
 *   collx_allreduce, collx_iallreduce, collx_comm_destroy
 *                                different communicators concurrently from different threads;
 *                                one communicator by one thread at a time: a second thread
 *                                calling into a busy communicator gets COLLX_ERR_INVALID_ARG
 *                                ("in use by another thread"), and nothing of either call is
 *                                harmed.
 *   collx_test, collx_wait       any thread, one thread per request at a time (the request
 *                                may be completed by another thread than the one that posted
 *                                it; a completed request is freed, its handle is dead).
 *   collx_comm_rank/size/algorithm, collx_strerror, names   any thread, any time.
 */
#ifndef COLLX_COLLX_H
#define COLLX_COLLX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COLLX_API __attribute__((visibility("default")))
#else
#define COLLX_API
#endif

#define COLLX_VERSION_MAJOR 0
#define COLLX_VERSION_MINOR 1
#define COLLX_VERSION_PATCH 0

/* A collective's error is this rank's own, or that of a peer which gave up on the call while
 * sending to it: then the message says "the sender gave up on this collective" and the code is
 * the sender's. */
typedef enum {
  COLLX_SUCCESS = 0,
  COLLX_IN_PROGRESS = 1,         /* collx_test: not complete yet */
  COLLX_ERR_INVALID_ARG = -1,    /* a bad argument; the message names it */
  COLLX_ERR_UNSUPPORTED = -2,    /* e.g. a dtype/op pair that has no meaning (avg of int32) */
  COLLX_ERR_NO_MEMORY = -3,      /* an allocation failed: the call freed what it made; in a
                                    collective, the communicator fails (COMM_FAILED after) */
  COLLX_ERR_TRANSPORT = -4,      /* UCX reported an error */
  COLLX_ERR_PEER_FAILED = -5,    /* a peer's connection broke */
  COLLX_ERR_TIMEOUT = -6,        /* a wait passed its deadline; the message names peer and step.
                                    Keep the call's buffers allocated until collx_finalize:
                                    should that peer wake up, a send to it over the network may
                                    still read them (nothing writes into them after the call;
                                    the peer does not take what they then hold for data) */
  COLLX_ERR_MISMATCH = -7,       /* ranks disagree on the call (size of a message, ...) */
  COLLX_ERR_NOT_INITIALIZED = -8,/* called before collx_init or after collx_finalize */
  COLLX_ERR_CONFIG = -9,         /* a COLLX_* variable or tune string is malformed */
  COLLX_ERR_COMM_FAILED = -10,   /* an earlier error left the communicator unusable */
  COLLX_ERR_INTERNAL = -11
} collx_status_t;

typedef enum {
  COLLX_INT8 = 0,
  COLLX_UINT8,
  COLLX_INT16,
  COLLX_UINT16,
  COLLX_INT32,
  COLLX_UINT32,
  COLLX_INT64,
  COLLX_UINT64,
  COLLX_FLOAT16,
  COLLX_BFLOAT16,
  COLLX_FLOAT32,
  COLLX_FLOAT64,
  COLLX_DTYPE_COUNT,
  /* Not a dtype: makes every int a valid value of the type in C++, so that a bad value from a
   * C caller is an error the library reports, not undefined behaviour. */
  COLLX_DTYPE_INT_RANGE_ = -0x7fffffff - 1
} collx_dtype_t;

/* sum/prod wrap around for integers. min/max propagate NaN (unlike IEEE fmin/fmax): if any
 * input is NaN the result is NaN. avg is for floating types only (sum, then divided by the
 * communicator size). band/bor/bxor are for integer types only. */
typedef enum {
  COLLX_SUM = 0,
  COLLX_PROD,
  COLLX_MIN,
  COLLX_MAX,
  COLLX_AVG,
  COLLX_BAND,
  COLLX_BOR,
  COLLX_BXOR,
  COLLX_OP_COUNT,
  COLLX_OP_INT_RANGE_ = -0x7fffffff - 1 /* not an op; see COLLX_DTYPE_INT_RANGE_ */
} collx_op_t;

/* Pass as sendbuf for an in-place allreduce (sendbuf == recvbuf is in-place too); never as
 * recvbuf (COLLX_ERR_INVALID_ARG with count > 0). */
#define COLLX_IN_PLACE ((const void*)(intptr_t)-1)

typedef struct collx_comm* collx_comm_t;
typedef struct collx_request* collx_request_t;

/* Out-of-band allgather used at communicator creation (a few times, in the same order on
 * every rank): every rank contributes `bytes` bytes from `send`; `recv` receives size*bytes,
 * rank i's contribution at offset i*bytes. Returns 0 on success, anything else on failure. */
typedef int (*collx_oob_allgather_fn)(const void* send, void* recv, size_t bytes, void* ctx);

typedef struct {
  int rank;
  int size;
  collx_oob_allgather_fn allgather;
  void* allgather_ctx;
} collx_comm_params_t;

COLLX_API const char* collx_strerror(collx_status_t status);
COLLX_API const char* collx_last_error(void);
COLLX_API const char* collx_version_string(void);
COLLX_API const char* collx_dtype_name(collx_dtype_t dtype);
COLLX_API const char* collx_op_name(collx_op_t op);
COLLX_API size_t collx_dtype_size(collx_dtype_t dtype); /* 0 for an invalid dtype */

/* Process-wide setup (UCX context and worker). Reference counted: each successful
 * collx_init needs one collx_finalize. A child forked by the process inherits none of it:
 * there the parent's communicators and requests are COLLX_ERR_INVALID_ARG (they serve only
 * the process that created them), and the child may call collx_init for its own. */
COLLX_API collx_status_t collx_init(void);
COLLX_API collx_status_t collx_finalize(void);

/* Collective over the members: every rank calls it with the same size and its own rank.
 * Reads the COLLX_* environment (an unknown or malformed variable is COLLX_ERR_CONFIG).
 * Every member gets the communicator or none does (given an allgather that works on every
 * rank): a rank whose steps failed (no memory, a peer that did not answer within
 * COLLX_TIMEOUT) says so through the allgather, and the others return COLLX_ERR_PEER_FAILED
 * naming it. */
COLLX_API collx_status_t collx_comm_create(const collx_comm_params_t* params, collx_comm_t* comm);
/* Collective, like MPI_Comm_free: waits for the communicator's outstanding requests and for
 * every member (within the deadline), then frees it. A communicator that failed earlier is
 * freed all the same, at once, and COLLX_ERR_COMM_FAILED returned (its message quotes the
 * earlier error). */
COLLX_API collx_status_t collx_comm_destroy(collx_comm_t comm);
COLLX_API collx_status_t collx_comm_rank(collx_comm_t comm, int* rank);
COLLX_API collx_status_t collx_comm_size(collx_comm_t comm, int* size);

/* Where a rank sits: the number of its node (nodes are numbered 0 .. nodes-1 in the order of
 * their lowest rank, so every rank numbers them alike), and its index among the ranks of its
 * node (in rank order) and their number. Ranks share a node when they share its memory: the
 * same hostname and kernel boot, or the same COLLX_NODE. A framework picks a GPU by
 * local_rank; collx_tune --across groups ranks by it. */
typedef struct {
  int node;
  int nodes;
  int local_rank;
  int local_size;
} collx_comm_node_t;
COLLX_API collx_status_t collx_comm_node(collx_comm_t comm, collx_comm_node_t* node);

/* Blocking allreduce: returns when recvbuf holds the result on this rank. Both buffers are
 * host memory, CUDA managed memory or CUDA device memory (of one device), of the same kind
 * (COLLX_ERR_INVALID_ARG otherwise). Host and managed buffers may start at any byte; device
 * buffers at a multiple of the element size, as CUDA kernels need (COLLX_ERR_INVALID_ARG
 * otherwise). Device buffers are read once the work queued on the legacy default stream
 * before the call has finished, as a CUDA-aware MPI's are; ranks of
 * one node whose GPUs reach each other's memory reduce them with GPU kernels over CUDA IPC
 * (COLLX_CUDA=0: not), other ranks through pinned host memory in chunks of
 * COLLX_STAGING_CHUNK. A device buffer without a usable CUDA driver is
 * COLLX_ERR_UNSUPPORTED. All ranks of a call pass the same kind of memory, as they pass the
 * same count, dtype and op (device buffers run as a sequence of chunk collectives that a host
 * call would not line up with); COLLX_CHECK=1 reports a mix as COLLX_ERR_MISMATCH. */
COLLX_API collx_status_t collx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                                         collx_dtype_t dtype, collx_op_t op, collx_comm_t comm);

/* As collx_allreduce, for frameworks that queue work on CUDA streams: the allreduce starts
 * after the work queued on `stream` before the call (a cudaStream_t; NULL: the legacy default
 * stream) and the call returns when recvbuf holds the result, so work queued on `stream`
 * afterwards sees it. For host buffers it synchronises `stream` first; without a CUDA driver
 * only a NULL stream is accepted (nothing can be queued). */
struct CUstream_st;
COLLX_API collx_status_t collx_allreduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                                collx_dtype_t dtype, collx_op_t op,
                                                collx_comm_t comm, struct CUstream_st* stream);

/* Non-blocking allreduce: operations on one communicator run one at a time, in order of
 * posting, each on the first thread to take it: the communicator's own, or one that waits.
 * One of at least COLLX_ASYNC_MIN bytes (64K) starts at once on the communicator's thread, so
 * that it overlaps the caller's work. A smaller one is deferred, since handing it to another
 * thread costs more than it takes: collx_wait runs it (and those posted before it) on the
 * calling thread; collx_test runs it on the calling thread once every rank has started it,
 * else the communicator's thread starts it 250 us after the first test; and if neither is
 * called, the communicator's thread starts it within about 2 ms (20 ms where the node has more
 * ranks than CPUs to run on: online, within the control group's CPU set), so it completes
 * even if this rank never calls in. A larger one is run by a test too, if the test polls
 * (comes within 20 us of the previous test of the request) and the communicator's thread has
 * not started it: tests further apart, between pieces of the caller's work, leave it to that
 * thread. The communicator's thread (named collx-worker) runs under SCHED_BATCH: it takes a
 * free core, but never preempts a running thread; where every core is busy it runs when a
 * thread sleeps or its time slice ends (later than the times above, then). Buffers must stay
 * untouched until the request completes.
 * Device buffers are reduced as in collx_allreduce. */
COLLX_API collx_status_t collx_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                                          collx_dtype_t dtype, collx_op_t op, collx_comm_t comm,
                                          collx_request_t* request);
/* COLLX_SUCCESS (and the request is freed, *request set to NULL), COLLX_IN_PROGRESS, or the
 * operation's error (request freed too). collx_test does not wait for other ranks to call in.
 * A test says that this rank started the operation and those posted before it; for one
 * below COLLX_ASYNC_MIN, every operation posted on the communicator so far (so that testing a
 * batch of them in turn finds each started by every rank that tested any of them; the
 * communicator's thread starts them 250 us later if no test or wait did): through the node's
 * shared memory, or, where the ranks share none, by a 16-byte message to each peer
 * (communicators of up to 8 ranks; on larger ones a test hands the operation to the
 * communicator's thread at once). Once every rank has started it (tested it, waited for it,
 * or its communicator's thread runs it; across nodes, a rank that does not test says so only
 * once a peer has tested), a test runs it on the calling thread and returns when it is done:
 * as long as the operation takes, plus at most 250 us for a rank that tested it (or one
 * posted before it) once and not again (an operation of at least COLLX_ASYNC_MIN: only a
 * polling test runs it, see collx_iallreduce). Otherwise, when the operation is not complete,
 * collx_test yields the core once (sched_yield), so that a thread running the operation
 * gets one when a caller polls in a loop; for an operation of at least COLLX_ASYNC_MIN that
 * no thread runs yet, it does not (where the ranks share memory): a polling caller's next
 * test runs it sooner than the communicator's thread would get a core where threads
 * outnumber cores. collx_wait blocks until the request completes, running operations of its
 * communicator that no thread has started. */
COLLX_API collx_status_t collx_test(collx_request_t* request);
COLLX_API collx_status_t collx_wait(collx_request_t* request);

/* Name of the algorithm the communicator would use for `bytes` bytes of host memory; NULL for a
 * handle that is not a live communicator (collx_last_error says why). */
COLLX_API const char* collx_comm_algorithm(collx_comm_t comm, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* COLLX_COLLX_H */
