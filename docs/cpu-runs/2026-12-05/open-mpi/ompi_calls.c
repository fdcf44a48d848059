/* Every function libcollx_mpi.so exports that Open MPI 4.1 has, with checked results: run
   under Open MPI with and without LD_PRELOAD=libcollx_mpi.so (run.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int failures = 0;
static void expect(int ok, const char* what, int rank) {
  if (!ok) { fprintf(stderr, "rank %d: %s failed\n", rank, what); ++failures; }
}

int main(int argc, char** argv) {
  int provided = 0, r = 0, p = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const long want = (long)p * (p - 1) / 2;
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int iter = 0; iter < 200; ++iter) {
    long x[1000], y[1000];
    for (int i = 0; i < 1000; ++i) x[i] = r + i;
    expect(MPI_Allreduce(x, y, 1000, MPI_LONG, MPI_SUM, dup) == MPI_SUCCESS, "Allreduce", r);
    expect(y[7] == want + 7L * p, "Allreduce result", r);
    double d = r + 0.5, e = 0;
    MPI_Request q[4];
    MPI_Status st;
    int flag = 0, index = -1, outcount = 0, indices[4];
    MPI_Iallreduce(&d, &e, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &q[0]);
    switch (iter % 7) {
      case 0: MPI_Wait(&q[0], &st); break;
      case 1: do MPI_Test(&q[0], &flag, &st); while (!flag); break;
      case 2: MPI_Waitall(1, q, MPI_STATUSES_IGNORE); break;
      case 3: do MPI_Testall(1, q, &flag, MPI_STATUSES_IGNORE); while (!flag); break;
      case 4: MPI_Waitany(1, q, &index, &st); expect(index == 0, "Waitany index", r); break;
      case 5: do MPI_Testany(1, q, &index, &flag, &st); while (!flag); break;
      case 6:
        do {
          MPI_Request_get_status(q[0], &flag, &st);
        } while (!flag);
        MPI_Waitsome(1, q, &outcount, indices, MPI_STATUSES_IGNORE);
        break;
    }
    expect(e == p - 0.5, "Iallreduce result", r);
    /* Persistent point-to-point around the ring: MPI_Start, MPI_Startall, MPI_Testsome,
       MPI_Request_free; a receive posted and cancelled: MPI_Cancel. */
    int out = r * 1000 + iter, in = -1;
    MPI_Request pq[2];
    MPI_Send_init(&out, 1, MPI_INT, (r + 1) % p, 5, MPI_COMM_WORLD, &pq[0]);
    MPI_Recv_init(&in, 1, MPI_INT, (r + p - 1) % p, 5, MPI_COMM_WORLD, &pq[1]);
    if (iter % 2) {
      MPI_Startall(2, pq);
    } else {
      MPI_Start(&pq[1]);
      MPI_Start(&pq[0]);
    }
    int done = 0;
    while (done < 2) {
      MPI_Testsome(2, pq, &outcount, indices, MPI_STATUSES_IGNORE);
      if (outcount != MPI_UNDEFINED) done += outcount;
    }
    expect(in == ((r + p - 1) % p) * 1000 + iter, "persistent ring", r);
    MPI_Request_free(&pq[0]);
    MPI_Request_free(&pq[1]);
    MPI_Request c;
    int never = 0;
    MPI_Irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &c);
    MPI_Cancel(&c);
    MPI_Wait(&c, &st);
    MPI_Test_cancelled(&st, &flag);
    expect(flag, "Cancel", r);
  }
  MPI_Comm_free(&dup);
  expect(dup == MPI_COMM_NULL, "Comm_free", r);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (r == 0) printf("ompi_calls: %d ranks, %d failures\n", p, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
