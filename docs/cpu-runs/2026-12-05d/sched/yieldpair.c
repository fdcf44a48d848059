// yieldpair SECONDS [NAP_US]: two threads of one process (a session of its own, so an autogroup
// of its own) yielding in a loop (and sleeping NAP_US once per ms, if given), beside a thread
// of another session that spins and records its longest time without the CPU; with
// SLEEPER=US it spins 5 ms and sleeps US in turn, and records its longest wake-up delay too.
// All pinned to CPU 0.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double until; static int nap_us;
static void* yielder(void* arg) {
  (void)arg; double next_nap = now() + 1e-3; long n = 0;
  while (now() < until) {
    sched_yield(); ++n;
    if (nap_us > 0 && now() >= next_nap) { usleep(nap_us); next_nap = now() + 1e-3; }
  }
  return (void*)n;
}
int main(int argc, char** argv) {
  double secs = atof(argv[1]); nap_us = argc > 2 ? atoi(argv[2]) : 0;
  cpu_set_t one; CPU_ZERO(&one); CPU_SET(0, &one); sched_setaffinity(0, sizeof one, &one);
  until = now() + secs;
  pid_t spinner = fork();
  if (spinner == 0) {
    if (setsid() < 0) perror("setsid spinner");
    { char b[64]; FILE* f = fopen("/proc/self/autogroup", "r"); if (f && fgets(b, sizeof b, f)) printf("spinner %s", b); }
    double last = now(), worst = 0, t; long iters = 0;
    double slept_worst = 0; int mode = getenv("SLEEPER") ? atoi(getenv("SLEEPER")) : 0;
    double spin_end = now() + 5e-3;
    while ((t = now()) < until + 0.5) {
      if (t - last > worst) worst = t - last;
      last = t; ++iters;
      if (mode && t > spin_end) {
        double t0 = now(); usleep(mode); double late = now() - t0 - mode * 1e-6;
        if (late > slept_worst) slept_worst = late;
        last = now(); spin_end = last + 5e-3;
      }
    }
    printf("spinner: longest wake-up delay after a %d us sleep %.1f ms\n", mode, slept_worst * 1e3);
    printf("spinner (own session): longest without the CPU %.1f ms\n", worst * 1e3);
    return 0;
  }
  if (setsid() < 0) { pid_t c = fork(); if (c > 0) { waitpid(c, 0, 0); return 0; } setsid(); }
  { char b[64]; FILE* f = fopen("/proc/self/autogroup", "r"); if (f && fgets(b, sizeof b, f)) printf("yielders %s", b); }
  pthread_t a, b; pthread_create(&a, 0, yielder, 0); pthread_create(&b, 0, yielder, 0);
  void *na, *nb; pthread_join(a, &na); pthread_join(b, &nb);
  printf("yielders: %ld and %ld yields (nap %d us per ms)\n", (long)na, (long)nb, nap_us);
  waitpid(spinner, 0, 0);
  return 0;
}
