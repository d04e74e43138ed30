/* net.h: socket helpers shared by the benchmark's client (loadgen.c) and
 * its floor server (counter-floor.c), which drain their output buffers the
 * same way. */
#ifndef CNT_BENCH_NET_H
#define CNT_BENCH_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sends buf[*off, *len) on the non-blocking socket fd until it would block;
 * resets *off and *len to 0 once all of it is sent. False when the socket is
 * broken (the caller decides what that means for its connection). */
bool cnt_bench_flush(int fd, const uint8_t *buf, size_t *off, size_t *len);

#endif
