// grp PROCS SPINNERS NAPPERS YIELDERS SECONDS: PROCS processes, each in a session of its own
// (an autogroup of its own), each with SPINNERS threads that busy-loop, NAPPERS threads that
// sleep 50 us in a loop and YIELDERS threads that sched_yield in a loop. Every thread records
// the longest time between two iterations of its loop (how long it was kept off a CPU).
// Prints each process's longest. NAP_POLICY=batch or idle: the napping threads run under
// SCHED_BATCH (as libcollx's workers do) or SCHED_IDLE. NAP_US: their sleep (default 50).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double end_at;
struct arg { int kind; double max; };
static int nap_policy = SCHED_OTHER;
static long nap_ns = 50000;  // NAP_US: the napping threads' sleep (default 50 us)
static void* run(void* p) {
  struct arg* a = p;
  if (a->kind == 1 && nap_policy != SCHED_OTHER) {
    struct sched_param none = {0};
    pthread_setschedparam(pthread_self(), nap_policy, &none);
  }
  double last = now();
  for (;;) {
    if (a->kind == 1) {
      struct timespec ts = {nap_ns / 1000000000, nap_ns % 1000000000};
      nanosleep(&ts, NULL);
    } else if (a->kind == 2) {
      sched_yield();
    }
    double t = now();
    if (t - last > a->max) a->max = t - last;
    last = t;
    if (t > end_at) break;
  }
  return NULL;
}
int main(int argc, char** argv) {
  if (argc != 6) return 2;
  int procs = atoi(argv[1]), s = atoi(argv[2]), n = atoi(argv[3]), y = atoi(argv[4]);
  const char* pol = getenv("NAP_POLICY");
  if (pol && pol[0] == 'b') nap_policy = SCHED_BATCH;
  if (pol && pol[0] == 'i') nap_policy = SCHED_IDLE;
  if (getenv("NAP_US")) nap_ns = atol(getenv("NAP_US")) * 1000;
  end_at = now() + atof(argv[5]);
  for (int p = 0; p < procs; ++p) {
    if (fork() == 0) {
      setsid();
      pthread_t th[64];
      struct arg a[64];
      int k = 0;
      for (int i = 0; i < s; ++i, ++k) a[k] = (struct arg){0, 0};
      for (int i = 0; i < n; ++i, ++k) a[k] = (struct arg){1, 0};
      for (int i = 0; i < y; ++i, ++k) a[k] = (struct arg){2, 0};
      for (int i = 0; i < k; ++i) pthread_create(&th[i], NULL, run, &a[i]);
      double worst[3] = {0, 0, 0};
      for (int i = 0; i < k; ++i) {
        pthread_join(th[i], NULL);
        if (a[i].max > worst[a[i].kind]) worst[a[i].kind] = a[i].max;
      }
      printf("process %d: longest off-CPU: spinner %.3f s, napper %.3f s, yielder %.3f s\n", p,
             worst[0], worst[1], worst[2]);
      fflush(stdout);
      _exit(0);
    }
  }
  while (wait(NULL) > 0) {}
  return 0;
}
