/* net.c: socket helpers shared by the benchmark's client and floor server,
 * so both sides of a run push bytes through the same send loop. */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>

#include "bench/net.h"

bool cnt_bench_flush(int fd, const uint8_t *buf, size_t *off, size_t *len)
{
    while (*off < *len) {
        /* MSG_NOSIGNAL: a peer that went away is an error, not a SIGPIPE. */
        ssize_t n = send(fd, buf + *off, *len - *off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0)
            return false;
        *off += (size_t)n;
    }
    if (*off == *len)
        *off = *len = 0;
    return true;
}
