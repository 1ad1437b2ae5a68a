/* Single-core memcpy bandwidth of 16 MiB (the physical limit of one copy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void) {
  size_t n = 16 << 20; int reps = 50;
  char *a = malloc(n), *b = malloc(n); memset(a, 1, n); memset(b, 2, n);
  for (int i = 0; i < 5; i++) memcpy(b, a, n);
  double t = now();
  for (int i = 0; i < reps; i++) { memcpy(b, a, n); __asm__ volatile("" ::: "memory"); }
  double dt = now() - t;
  printf("memcpy bytes=%zu bandwidth_MBps=%.1f\n", n, reps * (double)n / dt / 1e6);
  return 0;
}
