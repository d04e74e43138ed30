/* wheel-stall.c: how long one worker's wheel call can keep its sockets
 * waiting in a storm of expiries. Arms N timers (default 500,000, half of
 * the lease run's million per worker) in ticket-sized blocks, due within
 * 3 ms of each other about 6 s ahead (so they sit in a high slot of the
 * wheel, as the lease run's do), then advances the wheel the way a worker
 * does, cnt_wheel_advance_max with a budget of 64, and prints the
 * longest single call and the sum, in this thread's CPU time (the
 * machine's other load does not count). With --shuffle the blocks are
 * linked in random order, the worst case for the cache.
 *
 *   ./wheel-stall [N] [--shuffle]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/core/wheel.h"

#define MS UINT64_C(1000000)

static unsigned long fired;

/* Counts a fired timer. */
static void on_fire(cnt_timer *t, void *ctx)
{
    (void)t;
    (void)ctx;
    fired++;
}

/* This thread's CPU time, in microseconds. */
static double cpu_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    size_t n = 500000;
    int shuffle = 0;
    static cnt_wheel w;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shuffle") == 0)
            shuffle = 1;
        else if ((n = strtoul(argv[i], NULL, 10)) == 0) {
            fprintf(stderr, "usage: wheel-stall [N] [--shuffle]\n");
            return 2;
        }
    }
    cnt_timer **t = malloc(n * sizeof *t);
    if (t == NULL)
        return 1;
    srand(1);
    for (size_t i = 0; i < n; i++) {
        /* Blocks of 192 to 640 bytes, a ticket and its neighbours. */
        t[i] = calloc(1, 192 + (size_t)(rand() % 8) * 64);
        if (t[i] == NULL)
            return 1;
    }
    for (size_t i = n; shuffle && i > 1; i--) {
        size_t j = (size_t)rand() % i;
        cnt_timer *x = t[i - 1];
        t[i - 1] = t[j];
        t[j] = x;
    }
    cnt_wheel_init(&w, 0);
    for (size_t i = 0; i < n; i++)
        cnt_timer_arm(&w, t[i], (6000 + i % 3) * MS);

    double worst = 0, total = 0;
    unsigned long calls = 0;
    for (uint64_t ms = 5990; ms <= 6003; ms++) {
        while (cnt_wheel_next_deadline(&w) <= ms * MS) {
            double a = cpu_us();
            cnt_wheel_advance_max(&w, ms * MS, on_fire, NULL, 64);
            double d = cpu_us() - a;
            total += d;
            calls++;
            if (d > worst)
                worst = d;
        }
    }
    printf("timers=%zu fired=%lu calls=%lu worst_call_us=%.0f "
           "total_ms=%.1f\n", n, fired, calls, worst, total / 1e3);
    for (size_t i = 0; i < n; i++)
        free(t[i]);
    free(t);
    return fired == n ? 0 : 1;
}
