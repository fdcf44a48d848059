// N_YIELD threads spin on sched_yield, N_SPIN threads spin without yielding, N_SLEEP threads
// alternate 1 ms sleeps with short work; every 0.25 s print each spinner's CPU share; report the
// longest interval any spinner got < 1% CPU.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static volatile int stop;
static void* yielder(void* a) { (void)a; struct sched_param p = {0}; if (getenv("BATCH")) pthread_setschedparam(pthread_self(), SCHED_BATCH, &p); while (!stop) sched_yield(); return 0; }
static void* spinner(void* a) { (void)a; volatile unsigned long x = 0; while (!stop) ++x; return 0; }
static void* sleeper(void* a) { (void)a; while (!stop) { struct timespec t = {0, 1000000}; nanosleep(&t, 0); volatile int x = 0; for (int i = 0; i < 20000; ++i) ++x; } return 0; }
int main(int argc, char** argv) {
  int ny = atoi(argv[1]), ns = atoi(argv[2]), nz = atoi(argv[3]); double secs = atof(argv[4]);
  pthread_t t[64]; clockid_t c[64];
  for (int i = 0; i < ns; ++i) { pthread_create(&t[i], 0, spinner, 0); pthread_getcpuclockid(t[i], &c[i]); }
  for (int i = 0; i < ny; ++i) pthread_create(&t[ns + i], 0, yielder, 0);
  for (int i = 0; i < nz; ++i) pthread_create(&t[ns + ny + i], 0, sleeper, 0);
  double prev[64], starve[64] = {0}, worst[64] = {0}, t0 = now(CLOCK_MONOTONIC), tp = t0;
  for (int i = 0; i < ns; ++i) prev[i] = now(c[i]);
  while (now(CLOCK_MONOTONIC) - t0 < secs) {
    usleep(50000);
    double tn = now(CLOCK_MONOTONIC);
    for (int i = 0; i < ns; ++i) {
      double cn = now(c[i]);
      if (cn - prev[i] < 0.01 * (tn - tp)) { starve[i] += tn - tp; if (starve[i] > worst[i]) worst[i] = starve[i]; } else starve[i] = 0;
      prev[i] = cn;
    }
    tp = tn;
  }
  stop = 1;
  for (int i = 0; i < ns; ++i) printf("spinner %d: cpu %.2f s of %.1f s; longest starved %.2f s\n", i, now(c[i]), secs, worst[i]);
  return 0;
}
