/* What a clock read costs a ping-pong when it falls between seeing the
 * message and answering it, as a traced receive's end date and the
 * reply's start date do: two threads on the two cores bounce a cache
 * line; each side reads the clock `before` times between seeing the
 * ping and writing the pong, and `after` times once it has written it.
 * Blocks of 20000 exchanges of each variant alternate, 30 rounds; prints
 * the median half round trip of each.
 *     gcc -O2 -pthread -o reads_before_reply bench/reads_before_reply.c && ./reads_before_reply
 * A store becomes visible only once it retires, and nothing after an
 * RDTSC retires before it does: reads before the answer delay it, reads
 * after it overlap the wait for the next ping. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

enum { BLOCK = 20000, ROUNDS = 30, VARIANTS = 5 };
struct variant { const char *name; int before, after, gettime; };
static const struct variant variants[VARIANTS] = {
    {"no read", 0, 0, 0},
    {"1 RDTSC before answering", 1, 0, 0},
    {"2 RDTSC before answering", 2, 0, 0},
    {"2 RDTSC after answering", 0, 2, 0},
    {"2 CLOCK_MONOTONIC_RAW before", 2, 0, 1},
};

static _Alignas(64) atomic_long ping;
static _Alignas(64) atomic_long pong;
static _Alignas(64) volatile unsigned long long dates[4];
/* The variant both sides run; changed between blocks only. */
static volatile int current;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static inline void read_clock(int n, int gettime) {
    struct timespec ts;
    for (int k = 0; k < n; k++) {
        if (gettime) {
            clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
            dates[k] = ts.tv_nsec;
        } else {
            dates[k] = __rdtsc();
        }
    }
}

static void *peer(void *unused) {
    (void)unused;
    pin(1);
    for (long i = 1;; i++) {
        long seen;
        while ((seen = atomic_load_explicit(&ping, memory_order_acquire)) != i)
            if (seen < 0) return NULL;
        const struct variant *v = &variants[current];
        read_clock(v->before, v->gettime);
        atomic_store_explicit(&pong, i, memory_order_release);
        read_clock(v->after, v->gettime);
    }
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long exchange(long i, const struct variant *v) {
    read_clock(v->before, v->gettime);
    atomic_store_explicit(&ping, i, memory_order_release);
    read_clock(v->after, v->gettime);
    while (atomic_load_explicit(&pong, memory_order_acquire) != i) {}
    return i + 1;
}

int main(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, peer, NULL);
    pin(0);
    static double half_rtt[VARIANTS][ROUNDS];
    long i = 1;
    for (int round = 0; round < ROUNDS; round++) {
        for (int v = 0; v < VARIANTS; v++) {
            current = v;
            i = exchange(i, &variants[v]); /* the peer takes up the variant */
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            for (int k = 0; k < BLOCK; k++) i = exchange(i, &variants[v]);
            clock_gettime(CLOCK_MONOTONIC, &b);
            half_rtt[v][round] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / BLOCK / 2;
        }
    }
    atomic_store(&ping, -1);
    pthread_join(thread, NULL);
    for (int v = 0; v < VARIANTS; v++) {
        qsort(half_rtt[v], ROUNDS, sizeof(double), by_value);
        printf("%-30s half round trip %.1f ns (quartiles %.1f, %.1f)\n", variants[v].name, half_rtt[v][ROUNDS / 2],
               half_rtt[v][ROUNDS / 4], half_rtt[v][3 * ROUNDS / 4]);
    }
    return 0;
}
