/* The floor of an 8-byte allreduce among 8 processes on this machine's
   cores, whatever the MPI: each process deposits its value in shared
   memory and arrives; the last to arrive sums and publishes; the others
   sched_yield() until it is published (parking them costs far more).
   Every process must be scheduled once per operation, so the time is about
   (processes per core) x (cost of a switch). Same pinning as grappe. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  int procs = argc > 1 ? atoi(argv[1]) : 8, iters = 20000, warm = 1000;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char *shm = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  atomic_int *arrived = (atomic_int *)shm, *generation = (atomic_int *)(shm + 64);
  double *slot = (double *)(shm + 4096), *result = (double *)(shm + 8192);
  for (int p = 0; p < procs; p++) {
    if (fork() != 0) continue;
    cpu_set_t set; CPU_ZERO(&set); CPU_SET(p % cpus, &set); sched_setaffinity(0, sizeof set, &set);
    double t0 = 0, y = 0;
    for (int i = 0; i < iters + warm; i++) {
      if (i == warm) t0 = now();
      int g = atomic_load(generation);
      slot[p * 8] = p;
      if (atomic_fetch_add(arrived, 1) == procs - 1) {
        double s = 0; for (int q = 0; q < procs; q++) s += slot[q * 8];
        *result = s; atomic_store(arrived, 0); atomic_store(generation, g + 1);
      } else {
        while (atomic_load(generation) == g) sched_yield();
      }
      y = *result;
    }
    if (p == 0) { printf("allreduce_floor ranks=%d us=%.3f (sum %g)\n", procs, (now() - t0) / iters * 1e6, y); fflush(stdout); }
    _exit(0);
  }
  for (int p = 0; p < procs; p++) wait(0);
  return 0;
}
