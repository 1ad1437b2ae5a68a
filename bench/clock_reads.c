/* The cost of reading the clock, in a loop of 10^7 reads: RDTSC, RDTSCP,
 * and clock_gettime of the raw and the NTP-slewed monotonic clocks.
 *     gcc -O2 -o clock_reads bench/clock_reads.c && ./clock_reads
 * Prints three rounds; compare them, the VM drifts. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
    const int n = 10000000;
    uint64_t sum = 0;
    unsigned aux;
    struct timespec ts;
    for (int round = 0; round < 3; round++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) sum += __rdtsc();
        double t1 = now_ns();
        for (int i = 0; i < n; i++) sum += __rdtscp(&aux);
        double t2 = now_ns();
        for (int i = 0; i < n; i++) { clock_gettime(CLOCK_MONOTONIC_RAW, &ts); sum += ts.tv_nsec; }
        double t3 = now_ns();
        for (int i = 0; i < n; i++) { clock_gettime(CLOCK_MONOTONIC, &ts); sum += ts.tv_nsec; }
        double t4 = now_ns();
        printf("ns per read: rdtsc %.2f rdtscp %.2f monotonic_raw %.2f monotonic %.2f (%lu)\n",
               (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n, (t4 - t3) / n, (unsigned long)(sum & 1));
    }
    return 0;
}
