/* A data race on purpose (negative control for the TSan preload check). */
#include <pthread.h>
static int shared;
static void* other(void* p) { shared++; return p; }
__attribute__((constructor)) static void start(void) {
  pthread_t t;
  pthread_create(&t, 0, other, 0);
  shared++;
  pthread_join(t, 0);
}
