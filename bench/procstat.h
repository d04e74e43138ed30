/* procstat.h: what the benchmark reads about a server process from /proc:
 * its CPU time (utime + stime) and its resident set size. */
#ifndef CNT_BENCH_PROCSTAT_H
#define CNT_BENCH_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads the user + system CPU time of pid, in seconds; false if the
 * process is gone or /proc/PID/stat is unreadable. */
bool cnt_procstat_cpu(pid_t pid, double *seconds);

/* Reads VmRSS of pid in KiB; false if unavailable. */
bool cnt_procstat_rss(pid_t pid, uint64_t *kib);

#endif
