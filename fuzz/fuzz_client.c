/* fuzz_client.c: libFuzzer target for libmccounter's answer handling. A
 * hostile or broken server (the input's bytes, written on a real loopback
 * connection) answers a script of asynchronous operations the input also
 * chooses; the client must not crash, leak, or leave a callback uncalled.
 * Built with -DFUZZ_CLIENT_SEEDS it is instead the program that wrote the
 * seed corpus (fuzz/corpus/fuzz_client/), with the protocol's encoders. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "client/mccounter.h"
#include "protocol/response.h"

/* Input layout:
 *   byte 0: flags: FL_SECRET (the client sends an Auth first, so the first
 *           answer belongs to it), FL_CLOSE (the server closes at the end;
 *           otherwise it only shuts its write side), FL_SHORT_LEASE (lease
 *           helpers renew every millisecond once granted)
 *   byte 1: the number of operations, % MAX_OPS + 1
 *   then one byte per operation: kind = b % K_COUNT, variant = b / K_COUNT
 *   then one byte: the number of chunks, % 4 + 1, and one byte per cut
 *           (where, as a fraction of 256, the server's bytes are cut)
 *   the rest: the server's bytes.
 * The client is fresh per input, so its opaques are 1, 2, 3... in script
 * order: a seed can answer them. The Auth a secret adds is queued when the
 * connection opens, on the first operation's submit: it takes opaque 2
 * and is answered first, the first operation's (1) next. */

#define FL_SECRET      0x01u
#define FL_CLOSE       0x02u
#define FL_SHORT_LEASE 0x04u
#define MAX_OPS 16
#define MAX_LEASES 4

/* The operations a script can queue (every _async kind and the lease
 * helper). */
enum {
    K_GET, K_ACQUIRE, K_RELEASE, K_WAIT_ACQUIRE, K_RENEW, K_WAIT_RELEASE,
    K_TTL_INSERT, K_TTL_QUERY, K_TTL_UPDATE, K_TTL_PURGE, K_WINDOW, K_GCRA,
    K_MULTI, K_THROTTLE, K_TENANT_SHOW, K_NODE_SHOW, K_STATS, K_DUMP,
    K_QUEUES, K_TENANT_LIST, K_LEASE, K_NOOP, K_AUTH, K_TENANT_SET,
    K_TENANT_REMOVE, K_NODE_SET, K_UNTHROTTLE, K_RELOAD, K_TENANT_SET_JSON,
    K_NODE_SET_JSON, K_LEASE_LIST, K_BUSIEST, K_COUNT
};

/* One request of the script and what happened to it. */
typedef struct req {
    uint8_t op;             /* the mcc_op its callback must report */
    bool series;            /* a record callback (Stats and the series) */
    bool submitted;         /* queued: its callback must run */
    int finals;             /* final calls seen (must end at 1) */
    unsigned records;
} req;

/* One lease helper and what it reported. */
typedef struct lease_track {
    mcc_lease *lease;
    bool ended;             /* told TIMED_OUT, LOST or FAILED */
    int reports;
} lease_track;

/* Everything one input needs. */
typedef struct run {
    req reqs[MAX_OPS];
    size_t nreq;
    size_t outstanding;     /* submitted requests without a final call */
    lease_track leases[MAX_LEASES];
    size_t nleases;
    bool secret;
    bool lost;              /* the connection's ERROR event came */
    unsigned touched;       /* a sum of every byte the client showed us */
} run;

static run R;

/* With FUZZ_CLIENT_TRACE set, every callback is printed (to see what a
 * seed or a crashing input does). */
static bool trace;

/* Reads every byte of a span the client hands out, so that ASan sees any
 * pointer into freed or foreign memory. */
static void touch(const void *p, size_t n)
{
    const uint8_t *b = p;

    FUZZ_CHECK(n == 0 || p != NULL);
    for (size_t i = 0; i < n; i++)
        R.touched += b[i];
}

/* The error and status of a final call agree with each other. */
static void check_outcome(int error, uint8_t status)
{
    FUZZ_CHECK(error <= 0);
    if (error == MCC_OK)
        FUZZ_CHECK(status == 0);
    else if (error == MCC_ERR_STATUS)
        FUZZ_CHECK(status != 0);
    else
        FUZZ_CHECK(status == 0);
}

/* A single answer: exactly once, of the requested op, from server 0, its
 * fields in the ranges the protocol allows. */
static void on_result(mcc_client *c, const mcc_result *r, void *arg)
{
    req *q = arg;

    (void)c;
    FUZZ_CHECK(q->submitted && !q->series);
    FUZZ_CHECK(q->finals == 0);
    FUZZ_CHECK(!R.lost);
    q->finals++;
    R.outstanding--;
    if (trace)
        fprintf(stderr, "answer op 0x%02x opaque %u error %d status 0x%02x\n",
                r->op, r->opaque, r->error, r->status);
    FUZZ_CHECK(r->op == q->op);
    FUZZ_CHECK(r->server == 0);
    check_outcome(r->error, r->status);
    if (r->error != MCC_OK)
        return;
    switch (r->op) {
    case MCC_OP_WAIT_ACQUIRE:
        FUZZ_CHECK(r->wait.state == MCC_WAIT_GRANTED ||
                   r->wait.state == MCC_WAIT_QUEUED);
        break;
    case MCC_OP_TTL_QUERY:
    case MCC_OP_TTL_UPDATE:
        FUZZ_CHECK(r->ttl.unit <= MCC_UNIT_H);
        break;
    case MCC_OP_WINDOW_CHECK:
    case MCC_OP_GCRA_CHECK:
        FUZZ_CHECK(r->check.state <= MCC_CHECK_NEVER);
        break;
    case MCC_OP_MULTI_CHECK:
        FUZZ_CHECK(r->multi.overall <= MCC_MULTI_DENIED);
        FUZZ_CHECK(r->multi.count >= 1 && r->multi.count <= MCC_MULTI_MAX);
        for (uint8_t i = 0; i < r->multi.count; i++)
            FUZZ_CHECK(r->multi.items[i].state <= MCC_CHECK_NEVER);
        break;
    case MCC_OP_THROTTLE:
        FUZZ_CHECK(r->throttle.state <= MCC_THROTTLE_THROTTLED);
        FUZZ_CHECK(r->throttle.reason <= MCC_REASON_HARD_LIMIT);
        break;
    default:
        break;
    }
}

/* A series' record or its end: records only before the one final call
 * (more false), all of the requested op and from server 0. */
static void on_record(mcc_client *c, const mcc_record *rec, void *arg)
{
    req *q = arg;

    (void)c;
    FUZZ_CHECK(q->submitted && q->series);
    FUZZ_CHECK(q->finals == 0);
    FUZZ_CHECK(!R.lost);
    FUZZ_CHECK(rec->op == q->op);
    FUZZ_CHECK(rec->server == 0);
    if (trace)
        fprintf(stderr, "record op 0x%02x more %d error %d status 0x%02x\n",
                rec->op, rec->more, rec->error, rec->status);
    if (rec->more) {
        q->records++;
        touch(rec->name, rec->name_len);
        touch(rec->value, rec->value_len);
        return;
    }
    q->finals++;
    R.outstanding--;
    check_outcome(rec->error, rec->status);
}

/* A lease helper's report: a known state other than WAITING, for a lease
 * of ours, and nothing after it ended. */
static void on_lease(mcc_client *c, mcc_lease *lease, mcc_lease_state state,
                     int error, uint8_t status, void *arg)
{
    lease_track *t = arg;

    (void)c;
    (void)status;
    FUZZ_CHECK(t >= R.leases && t < R.leases + MAX_LEASES);
    FUZZ_CHECK(t->lease == lease);
    FUZZ_CHECK(!t->ended);
    FUZZ_CHECK(error <= 0);
    t->reports++;
    if (trace)
        fprintf(stderr, "lease state %d error %d\n", (int)state, error);
    switch (state) {
    case MCC_LEASE_GRANTED:
        FUZZ_CHECK(error == MCC_OK);
        break;
    case MCC_LEASE_TIMED_OUT:
    case MCC_LEASE_LOST:
    case MCC_LEASE_FAILED:
        t->ended = true;
        break;
    default:
        FUZZ_CHECK(!"a lease reported an unknown state");
    }
}

/* Events: known kinds only; the server's before the connection's loss;
 * the loss (ERROR, not an Auth refusal) once, after every pending
 * callback ran. */
static void on_event(mcc_client *c, const mcc_event *ev, void *arg)
{
    (void)c;
    FUZZ_CHECK(arg == &R);
    FUZZ_CHECK(ev->server == 0);
    FUZZ_CHECK(!R.lost);
    if (trace)
        fprintf(stderr, "event %d opaque %u error %d\n", (int)ev->kind,
                ev->opaque, ev->error);
    switch (ev->kind) {
    case MCC_EVENT_GRANTED:
    case MCC_EVENT_TIMED_OUT:
    case MCC_EVENT_LEASE_EXPIRED:
    case MCC_EVENT_SHUTDOWN:
        touch(ev->name, ev->name_len);
        FUZZ_CHECK(ev->error == MCC_OK);
        break;
    case MCC_EVENT_ERROR:
        FUZZ_CHECK(ev->name == NULL && ev->name_len == 0);
        if (ev->error == MCC_ERR_AUTH) {
            FUZZ_CHECK(R.secret);
            FUZZ_CHECK(ev->status != 0);
            break;
        }
        FUZZ_CHECK(ev->error == MCC_ERR_IO || ev->error == MCC_ERR_PROTOCOL ||
                   ev->error == MCC_ERR_TIMEOUT ||
                   ev->error == MCC_ERR_CONNECT ||
                   ev->error == MCC_ERR_MEMCACHE_PORT);
        FUZZ_CHECK(R.outstanding == 0);
        R.lost = true;
        break;
    default:
        FUZZ_CHECK(!"an event of an unknown kind");
    }
}

/* Queues operation kind (with its variant) as request q; returns the
 * submit's result. */
static int queue_op(mcc_client *c, unsigned kind, unsigned v, bool short_lease,
                    req *q)
{
    static const char *const mnames[] = { "m0", "m1", "m2", "m3" };
    mcc_check_item items[4];
    size_t n;

    switch (kind) {
    case K_GET:
        q->op = MCC_OP_GET;
        return mcc_get_async(c, "k", 1, on_result, q);
    case K_ACQUIRE:
        q->op = MCC_OP_ACQUIRE;
        return mcc_acquire_async(c, "k", 1, v % 3, 2, on_result, q);
    case K_RELEASE:
        q->op = MCC_OP_RELEASE;
        return mcc_release_async(c, "k", 1, 1, on_result, q);
    case K_WAIT_ACQUIRE:
        q->op = MCC_OP_WAIT_ACQUIRE;
        return mcc_wait_for_async(c, "w", 1, &(mcc_wait_params){
                                      .resources = 1, .maximum = 2,
                                      .wait_ms = v & 1 ? 1000 : 0,
                                      .lease_ms = MCC_GROUP_DEFAULT },
                                  on_result, q);
    case K_RENEW:
        q->op = MCC_OP_RENEW;
        return mcc_renew_async(c, "w", 1, 1000, on_result, q);
    case K_WAIT_RELEASE:
        q->op = MCC_OP_WAIT_RELEASE;
        return mcc_wait_release_async(c, "w", 1, on_result, q);
    case K_TTL_INSERT:
        q->op = MCC_OP_TTL_INSERT;
        /* unit 6 does not exist: refused before sending. */
        return mcc_ttl_insert_async(c, "t", 1, 5, 10, (uint8_t)(v % 7),
                                    on_result, q);
    case K_TTL_QUERY:
        q->op = MCC_OP_TTL_QUERY;
        return mcc_ttl_query_async(c, "t", 1, on_result, q);
    case K_TTL_UPDATE:
        q->op = MCC_OP_TTL_UPDATE;
        return mcc_ttl_update_async(c, "t", 1, (uint8_t)(v & 1),
                                    (uint8_t)(v % 3), MCC_UNIT_S, 1,
                                    on_result, q);
    case K_TTL_PURGE:
        q->op = MCC_OP_TTL_PURGE;
        return mcc_ttl_purge_async(c, "t", 1, on_result, q);
    case K_WINDOW:
        q->op = MCC_OP_WINDOW_CHECK;
        return mcc_check_async(c, &(mcc_check_item){
                                   .op = MCC_OP_WINDOW_CHECK, .name = "r",
                                   .name_len = 1, .limit = 10, .cost = 1 },
                               v & 1, on_result, q);
    case K_GCRA:
        q->op = MCC_OP_GCRA_CHECK;
        return mcc_check_async(c, &(mcc_check_item){
                                   .op = MCC_OP_GCRA_CHECK, .name = "g",
                                   .name_len = 1, .limit = 5, .count = 10,
                                   .cost = 1, .period_ns = 1000000000u },
                               v & 1, on_result, q);
    case K_MULTI:
        q->op = MCC_OP_MULTI_CHECK;
        /* Variant 9 asks for no item: refused before sending. */
        n = v == 9 ? 0 : v % 4 + 1;
        memset(items, 0, sizeof items);
        for (size_t i = 0; i < n; i++) {
            items[i].op = i & 1 ? MCC_OP_GCRA_CHECK : MCC_OP_WINDOW_CHECK;
            items[i].name = mnames[i];
            items[i].name_len = 2;
            items[i].limit = 10;
            items[i].count = 10;
            items[i].cost = 1;
            items[i].period_ns = i & 1 ? 1000000000u : 0;
        }
        return mcc_multi_check_async(c, items, n, v & 1, on_result, q);
    case K_THROTTLE:
        q->op = MCC_OP_THROTTLE;
        return mcc_throttle_async(c, "u", 1, 1, on_result, q);
    case K_TENANT_SHOW:
        q->op = MCC_OP_TENANT_SHOW;
        return mcc_tenant_show_async(c, "u", 1, on_result, q);
    case K_NODE_SHOW:
        q->op = MCC_OP_NODE_SHOW;
        return mcc_node_show_async(c, 0, on_result, q);
    case K_STATS:
        q->op = MCC_OP_STATS;
        q->series = true;
        return mcc_stats_async(c, 0, on_record, q);
    case K_DUMP:
        q->op = MCC_OP_DUMP;
        q->series = true;
        return mcc_dump_async(c, 0, on_record, q);
    case K_QUEUES:
        q->op = MCC_OP_QUEUES;
        q->series = true;
        return mcc_queues_async(c, 0, on_record, q);
    case K_TENANT_LIST:
        q->op = MCC_OP_TENANT_LIST;
        q->series = true;
        return mcc_tenant_list_async(c, 0, on_record, q);
    case K_LEASE_LIST:
        q->op = MCC_OP_LEASE_LIST;
        q->series = true;
        return mcc_lease_list_async(c, 0, v % 2 ? 64 : 3, on_record,
                                    q);
    case K_BUSIEST:
        q->op = MCC_OP_BUSIEST;
        q->series = true;
        return mcc_busiest_async(c, 0, v ? 1 : MCC_BUSIEST_MAX,
                                 on_record, q);
    case K_NOOP:
        q->op = MCC_OP_NOOP;
        return mcc_noop_async(c, 0, on_result, q);
    case K_AUTH:
        q->op = MCC_OP_AUTH;
        return mcc_auth_async(c, 0, "s", 1, on_result, q);
    case K_TENANT_SET:
        q->op = MCC_OP_TENANT_SET;
        return mcc_tenant_set_async(c, "u", 1, MCC_TENANT_SET_RESERVED |
                                    MCC_TENANT_SET_HARD, 1, 10, on_result, q);
    case K_TENANT_REMOVE:
        q->op = MCC_OP_TENANT_REMOVE;
        return mcc_tenant_remove_async(c, "u", 1, on_result, q);
    case K_NODE_SET:
        q->op = MCC_OP_NODE_SET;
        return mcc_node_set_async(c, 0, 100, on_result, q);
    case K_UNTHROTTLE:
        q->op = MCC_OP_UNTHROTTLE;
        return mcc_unthrottle_async(c, 0, on_result, q);
    case K_RELOAD:
        q->op = MCC_OP_RELOAD;
        return mcc_reload_async(c, 0, on_result, q);
    case K_TENANT_SET_JSON:
        q->op = MCC_OP_TENANT_SET_JSON;
        return mcc_tenant_set_json_async(c, "u", 1, "{\"reserved\":1}", 14,
                                         on_result, q);
    case K_NODE_SET_JSON:
        q->op = MCC_OP_NODE_SET_JSON;
        return mcc_node_set_json_async(c, 0, "{\"capacity\":9}", 14,
                                       on_result, q);
    default: {
        /* K_LEASE: not a request of ours (no callback per request), but
         * a helper whose reports are checked. */
        lease_track *t;
        int rc;
        if (R.nleases == MAX_LEASES)
            return MCC_ERR_INVALID;
        t = &R.leases[R.nleases];
        rc = mcc_lease_start(c, "l", 1, &(mcc_wait_params){
                                 .resources = 1, .maximum = 2,
                                 .wait_ms = v & 1 ? 1000 : 0,
                                 .lease_ms = short_lease ? 3 : 0xfffffffeu },
                             on_lease, t, &t->lease);
        if (rc == MCC_OK)
            R.nleases++;
        return MCC_ERR_INVALID;     /* nothing for the request checks */
    }
    }
}

/* The listening socket every input's connection comes to. */
static int listen_fd = -1;
static uint16_t listen_port;

/* Opens the listening socket on 127.0.0.1, on a port the kernel picks. */
static void listen_once(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    if (listen_fd >= 0)
        return;
    trace = getenv("FUZZ_CLIENT_TRACE") != NULL;
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(listen_fd >= 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    FUZZ_CHECK(bind(listen_fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    FUZZ_CHECK(listen(listen_fd, 64) == 0);
    FUZZ_CHECK(getsockname(listen_fd, (struct sockaddr *)&sa, &len) == 0);
    listen_port = ntohs(sa.sin_port);
}

/* Reads and drops what the client sent (its requests), so that a close
 * is a plain FIN rather than a reset for unread data. */
static void drain(int fd)
{
    uint8_t buf[4096];

    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

/* Writes p[0..n) to the client, letting the client read between sends
 * when the socket is full; stops when the client has closed. */
static void serve(mcc_client *c, int fd, const uint8_t *p, size_t n)
{
    int stalls = 0;

    while (n > 0 && stalls < 100) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            stalls++;
            drain(fd);
            mcc_poll(c, 10);
            continue;
        }
        return;                 /* the client is gone (reset, pipe) */
    }
}

/* Takes the next input byte, 0 once the input is spent. */
static uint8_t take(const uint8_t **p, size_t *n)
{
    uint8_t b;

    if (*n == 0)
        return 0;
    b = **p;
    (*p)++;
    (*n)--;
    return b;
}

/* Runs one input (layout above). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcc_client *c;
    uint8_t flags, nops, nchunks;
    size_t cuts[4];
    int sfd = -1;
    bool connected = false;

    listen_once();
    memset(&R, 0, sizeof R);
    flags = take(&data, &size);
    nops = (uint8_t)(take(&data, &size) % MAX_OPS + 1);
    c = mcc_client_new();
    FUZZ_CHECK(c != NULL);
    FUZZ_CHECK(mcc_client_add_server(c, "127.0.0.1", listen_port, 1) == 0);
    mcc_client_set_event_callback(c, on_event, &R);
    if (flags & FL_SECRET) {
        FUZZ_CHECK(mcc_client_set_secret(c, "secret", 6) == MCC_OK);
        R.secret = true;
    }
    for (uint8_t i = 0; i < nops; i++) {
        uint8_t b = take(&data, &size);
        req *q = &R.reqs[R.nreq++];
        if (queue_op(c, b % K_COUNT, b / K_COUNT,
                     (flags & FL_SHORT_LEASE) != 0, q) == MCC_OK) {
            q->submitted = true;
            R.outstanding++;
        }
    }
    nchunks = (uint8_t)(take(&data, &size) % 4 + 1);
    /* The cut bytes first: the cuts are fractions of what is left. */
    for (uint8_t i = 0; i + 1 < nchunks; i++)
        cuts[i] = take(&data, &size);
    for (uint8_t i = 0; i + 1 < nchunks; i++)
        cuts[i] = size * cuts[i] / 256;
    cuts[nchunks - 1] = size;

    if (mcc_fd(c, 0) >= 0) {
        struct pollfd pl = { .fd = listen_fd, .events = POLLIN, .revents = 0 };
        /* The client's connect completes in the kernel: the accept does
         * not depend on the client being driven. */
        if (poll(&pl, 1, 5000) == 1)
            sfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        FUZZ_CHECK(sfd >= 0);
        connected = true;
    }
    if (sfd >= 0) {
        size_t done = 0;
        for (uint8_t i = 0; i < nchunks; i++) {
            size_t end = cuts[i] < done ? done : cuts[i];
            serve(c, sfd, data + done, end - done);
            done = end;
            mcc_poll(c, 0);
            mcc_poll(c, 0);
        }
        mcc_poll(c, 0);
        drain(sfd);
        if (flags & FL_CLOSE) {
            close(sfd);
            sfd = -1;
        } else {
            shutdown(sfd, SHUT_WR);
        }
    }
    /* The server is done: the client must see the end, fail what is
     * left and close, in a bounded number of rounds. */
    for (int round = 0; round < 500 && mcc_fd(c, 0) >= 0; round++) {
        mcc_poll(c, 10);
        if (sfd >= 0)
            drain(sfd);
    }
    FUZZ_CHECK(mcc_fd(c, 0) < 0);
    FUZZ_CHECK(mcc_pending(c) == 0);
    FUZZ_CHECK(R.outstanding == 0);
    for (size_t i = 0; i < R.nreq; i++)
        FUZZ_CHECK(R.reqs[i].finals == (R.reqs[i].submitted ? 1 : 0));
    /* Its loss was told, after the callbacks (on_event checks that). */
    if (connected)
        FUZZ_CHECK(R.lost);
    /* A lease whose connection is gone was told so. */
    for (size_t i = 0; i < R.nleases; i++)
        FUZZ_CHECK(R.leases[i].ended);
    mcc_client_free(c);
    if (sfd >= 0)
        close(sfd);
    return 0;
}

#ifdef FUZZ_CLIENT_SEEDS
/* ---- The seed generator (run once; its output is committed) ---- */

#include <stdio.h>

/* A seed being built: the script's bytes, then the server's. */
typedef struct seed {
    uint8_t b[8192];
    size_t n;
} seed;

/* Starts a seed: flags, the operations (kind + K_COUNT * variant), and
 * the chunking (count, then cuts out of 256). */
static void seed_begin(seed *s, uint8_t flags, const uint8_t *ops, size_t nops,
                       const uint8_t *cuts, size_t ncuts)
{
    s->n = 0;
    s->b[s->n++] = flags;
    s->b[s->n++] = (uint8_t)(nops - 1);
    memcpy(s->b + s->n, ops, nops);
    s->n += nops;
    s->b[s->n++] = (uint8_t)ncuts;
    memcpy(s->b + s->n, cuts, ncuts);
    s->n += ncuts;
}

/* Room at the end of a seed for one more packet. */
static uint8_t *room(seed *s)
{
    FUZZ_CHECK(s->n + CNT_REQUEST_MAX / 64 < sizeof s->b);
    return s->b + s->n;
}

/* Writes a seed as dir/name. */
static void seed_write(const seed *s, const char *dir, const char *name)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(s->b, 1, s->n, f) == s->n);
    FUZZ_CHECK(fclose(f) == 0);
}

#define OP(kind, variant) ((uint8_t)((kind) + K_COUNT * (variant)))

/* Writes the seeds into the directory argv[1]. */
int main(int argc, char **argv)
{
    static const uint8_t name_k[] = "k", name_w[] = "w", name_l[] = "l";
    seed s;
    cnt_check_result chk = { .state = 0, .limit = 10, .remaining = 9,
                             .used = 1, .retry_after_ns = 0,
                             .reset_after_ns = 5 };
    cnt_check_result two[2];
    cnt_ttl_answer ttl = { .quota = 5, .ttl_left = 10, .unit = CNT_UNIT_S };
    cnt_throttle_answer thr = { .state = 0, .reason = 0, .used = 1,
                                .remaining = 9, .retry_after_ns = 0 };
    cnt_tenant_view tv = { .reserved = 1, .hard_limit = 10, .used = 1,
                           .flags = 1, .throttled = 0, .units = 3 };
    cnt_node_view nv = { .capacity = 100, .used = 1, .pool = 99,
                         .pool_used = 0, .reserved_sum = 1, .tenants = 1,
                         .throttled = 0 };
    uint8_t *p;
    size_t body;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    two[0] = chk;
    two[1] = chk;

    /* Every single-answer operation answered with status 0, in three
     * chunks; the server closes. */
    {
        static const uint8_t ops[] = {
            OP(K_GET, 0), OP(K_ACQUIRE, 1), OP(K_RELEASE, 0), OP(K_NOOP, 0),
            OP(K_TTL_INSERT, 3), OP(K_TTL_QUERY, 0), OP(K_TTL_UPDATE, 0),
            OP(K_TTL_PURGE, 0), OP(K_WINDOW, 0), OP(K_GCRA, 1),
            OP(K_MULTI, 1), OP(K_THROTTLE, 0), OP(K_TENANT_SHOW, 0),
            OP(K_NODE_SHOW, 0), OP(K_RENEW, 0), OP(K_WAIT_RELEASE, 0)
        };
        static const uint8_t cuts[] = { 80, 160 };
        seed_begin(&s, FL_CLOSE, ops, sizeof ops, cuts, sizeof cuts);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 1, 3);
        s.n += cnt_encode_u32(room(&s), CNT_OP_ACQUIRE, 2, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_RELEASE, 3);
        s.n += cnt_encode_empty(room(&s), CNT_OP_NOOP, 4);
        s.n += cnt_encode_empty(room(&s), CNT_OP_TTL_INSERT, 5);
        s.n += cnt_encode_ttl_view(room(&s), CNT_OP_TTL_QUERY, 6, &ttl);
        s.n += cnt_encode_ttl_view(room(&s), CNT_OP_TTL_UPDATE, 7, &ttl);
        s.n += cnt_encode_empty(room(&s), CNT_OP_TTL_PURGE, 8);
        s.n += cnt_encode_check_answer(room(&s), CNT_OP_WINDOW_CHECK, 9, &chk);
        s.n += cnt_encode_check_answer(room(&s), CNT_OP_GCRA_CHECK, 10, &chk);
        s.n += cnt_encode_multi_answer(room(&s), 11, CNT_MULTI_ALLOWED, two, 2);
        s.n += cnt_encode_throttle_answer(room(&s), 12, &thr);
        s.n += cnt_encode_tenant_view(room(&s), 13, &tv);
        s.n += cnt_encode_node_view(room(&s), 14, &nv);
        s.n += cnt_encode_u64(room(&s), CNT_OP_RENEW, 15, 7);
        s.n += cnt_encode_u32(room(&s), CNT_OP_WAIT_RELEASE, 16, 1);
        seed_write(&s, argv[1], "status0-all-answers");
    }

    /* The JSON commands: what they applied as a body, then a refusal
     * with a text of its own. */
    {
        static const uint8_t ops[] = {
            OP(K_TENANT_SET_JSON, 0), OP(K_NODE_SET_JSON, 0),
            OP(K_TENANT_SET_JSON, 1), OP(K_NODE_SET_JSON, 1)
        };
        static const char applied_t[] = "{\"reserved\":1,\"hard_limit\":"
                                        "\"unlimited\"}";
        static const char applied_n[] = "{\"capacity\":9}";
        static const char refused[] = "hard_limit: 5 is below reserved 10";
        seed_begin(&s, FL_CLOSE, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_text(room(&s), CNT_OP_TENANT_SET_JSON, 0, 1,
                               applied_t, sizeof applied_t - 1);
        s.n += cnt_encode_text(room(&s), CNT_OP_NODE_SET_JSON, 0, 2,
                               applied_n, sizeof applied_n - 1);
        s.n += cnt_encode_text(room(&s), CNT_OP_TENANT_SET_JSON,
                               CNT_STATUS_INVALID, 3, refused,
                               sizeof refused - 1);
        s.n += cnt_encode_error(room(&s), CNT_OP_NODE_SET_JSON,
                                CNT_STATUS_OVER_CAPACITY, 4);
        seed_write(&s, argv[1], "json-commands");
    }

    /* Error answers (the reference's texts as bodies); half-close. */
    {
        static const uint8_t ops[] = {
            OP(K_GET, 0), OP(K_ACQUIRE, 1), OP(K_RELEASE, 0),
            OP(K_WAIT_ACQUIRE, 0), OP(K_TENANT_SET, 0), OP(K_NODE_SET, 0),
            OP(K_UNTHROTTLE, 0), OP(K_RELOAD, 0), OP(K_AUTH, 0),
            OP(K_TENANT_REMOVE, 0), OP(K_DUMP, 0), OP(K_STATS, 0)
        };
        static const struct { uint8_t op; cnt_status st; } ans[] = {
            { CNT_OP_GET, CNT_STATUS_NOT_FOUND },
            { CNT_OP_ACQUIRE, CNT_STATUS_RESOURCE_NOT_AVAILABLE },
            { CNT_OP_RELEASE, CNT_STATUS_NOT_ACQUIRED },
            { CNT_OP_WAIT_ACQUIRE, CNT_STATUS_TOO_MANY_WAITS },
            { CNT_OP_TENANT_SET, CNT_STATUS_NOT_PERMITTED },
            { CNT_OP_NODE_SET, CNT_STATUS_OVER_CAPACITY },
            { CNT_OP_UNTHROTTLE, CNT_STATUS_NOT_PERMITTED },
            { CNT_OP_RELOAD, CNT_STATUS_INVALID },
            { CNT_OP_AUTH, CNT_STATUS_AUTH_FAILED },
            { CNT_OP_TENANT_REMOVE, CNT_STATUS_NOT_FOUND },
            { CNT_OP_DUMP, CNT_STATUS_OUT_OF_MEMORY },
            { CNT_OP_STATS, CNT_STATUS_UNKNOWN_COMMAND },
        };
        seed_begin(&s, 0, ops, sizeof ops, NULL, 0);
        for (size_t i = 0; i < sizeof ans / sizeof ans[0]; i++)
            s.n += cnt_encode_error(room(&s), ans[i].op, ans[i].st,
                                    (uint32_t)(i + 1));
        seed_write(&s, argv[1], "errors");
    }

    /* A queued wait, events between answers (granted, then the grant
     * expires), one of them about no request of ours, then a shutdown. */
    {
        static const uint8_t ops[] = {
            OP(K_WAIT_ACQUIRE, 1), OP(K_GET, 0), OP(K_WAIT_RELEASE, 0)
        };
        static const uint8_t cuts[] = { 100 };
        seed_begin(&s, FL_CLOSE, ops, sizeof ops, cuts, sizeof cuts);
        s.n += cnt_encode_wait_answer(room(&s), 1, CNT_WAIT_QUEUED, 1, 0, 2);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_GRANTED, 1, 9, 1, name_w, 1);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 2, 1);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_LEASE_EXPIRED, 1, 9, 1,
                                name_w, 1);
        s.n += cnt_encode_error(room(&s), CNT_OP_WAIT_RELEASE,
                                CNT_STATUS_LEASE_EXPIRED, 3);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_SHUTDOWN, 77, 0, 0,
                                name_k, 1);
        seed_write(&s, argv[1], "wait-events");
    }

    /* The series: Stats pairs, Dump, Queues, Tenant_list and Busiest
     * records and their ends, an event between two series. */
    {
        static const uint8_t ops[] = {
            OP(K_STATS, 0), OP(K_DUMP, 0), OP(K_QUEUES, 0),
            OP(K_TENANT_LIST, 0), OP(K_GET, 0), OP(K_BUSIEST, 0)
        };
        static const uint8_t cuts[] = { 30, 90, 200 };
        seed_begin(&s, 0, ops, sizeof ops, cuts, sizeof cuts);
        body = cnt_encode_stats_pair(NULL, "pid", "42") +
               cnt_encode_stats_pair(NULL, "uptime", "7");
        p = room(&s);
        p += cnt_encode_response_header(p, CNT_OP_STATS, 0, (uint32_t)body, 1);
        p += cnt_encode_stats_pair(p, "pid", "42");
        p += cnt_encode_stats_pair(p, "uptime", "7");
        s.n = (size_t)(p - s.b);
        s.n += cnt_encode_dump_record(room(&s), 2, 1, 2, name_k, 1);
        s.n += cnt_encode_dump_record(room(&s), 2, 0, 5, name_w, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_DUMP, 2);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_TIMED_OUT, 5, 0, 0,
                                name_w, 1);
        s.n += cnt_encode_queues_record(room(&s), 3, 2, 1, name_w, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_QUEUES, 3);
        s.n += cnt_encode_tenant_record(room(&s), 4, &tv, name_k, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_TENANT_LIST, 4);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 5, 0);
        s.n += cnt_encode_busy_record(room(&s), 6, 9, CNT_BUSY_KIND_GCRA,
                                      name_w, 1);
        s.n += cnt_encode_busy_record(room(&s), 6, 2, CNT_BUSY_KIND_TTL,
                                      name_k, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_BUSIEST, 6);
        seed_write(&s, argv[1], "series");
    }

    /* Lease_list: two records and the end, an event between it and a
     * second listing that fails (no memory on the server). */
    {
        static const uint8_t ops[] = {
            OP(K_LEASE_LIST, 0), OP(K_LEASE_LIST, 1), OP(K_GET, 0)
        };
        static const uint8_t cuts[] = { 20, 70 };
        seed_begin(&s, 0, ops, sizeof ops, cuts, sizeof cuts);
        s.n += cnt_encode_lease_record(room(&s), 1, 1500, 42, 1, name_k, 1);
        s.n += cnt_encode_lease_record(room(&s), 1, 90000, 7, 3, name_w, 1);
        s.n += cnt_encode_empty(room(&s), CNT_OP_LEASE_LIST, 1);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_LEASE_EXPIRED, 5, 42, 1,
                                name_k, 1);
        s.n += cnt_encode_error(room(&s), CNT_OP_LEASE_LIST,
                                CNT_STATUS_OUT_OF_MEMORY, 2);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 3, 0);
        seed_write(&s, argv[1], "lease-list");
    }

    /* A lease helper: queued, granted by an event, then expired. */
    {
        static const uint8_t ops[] = { OP(K_LEASE, 1), OP(K_GET, 0) };
        seed_begin(&s, FL_CLOSE, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_wait_answer(room(&s), 1, CNT_WAIT_QUEUED, 1, 0, 2);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 2, 2);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_GRANTED, 1, 4, 1, name_l, 1);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_LEASE_EXPIRED, 1, 4, 1,
                                name_l, 1);
        seed_write(&s, argv[1], "lease-events");
    }

    /* A lease granted at once, on a short lease; the server goes away. */
    {
        static const uint8_t ops[] = { OP(K_LEASE, 0) };
        seed_begin(&s, FL_SHORT_LEASE, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_wait_answer(room(&s), 1, CNT_WAIT_GRANTED, 0, 3, 1);
        seed_write(&s, argv[1], "lease-granted-then-lost");
    }

    /* A broken server: the lease's wait times out (event) before its
     * answer, which then says granted; a second lease's answer comes
     * after its expiry event. */
    {
        static const uint8_t ops[] = { OP(K_LEASE, 1), OP(K_LEASE, 1) };
        seed_begin(&s, FL_CLOSE, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_TIMED_OUT, 1, 0, 0,
                                name_l, 1);
        s.n += cnt_encode_wait_answer(room(&s), 1, CNT_WAIT_GRANTED, 0, 5, 1);
        s.n += cnt_encode_event(room(&s), CNT_EVENT_LEASE_EXPIRED, 2, 6, 1,
                                name_l, 1);
        s.n += cnt_encode_wait_answer(room(&s), 2, CNT_WAIT_GRANTED, 0, 6, 1);
        seed_write(&s, argv[1], "lease-event-before-answer");
    }

    /* The Auth a secret adds is refused; the rest is answered. */
    {
        static const uint8_t ops[] = { OP(K_GET, 0), OP(K_NODE_SET, 0) };
        seed_begin(&s, FL_SECRET | FL_CLOSE, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_error(room(&s), CNT_OP_AUTH,
                                CNT_STATUS_AUTH_FAILED, 2);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 1, 0);
        s.n += cnt_encode_error(room(&s), CNT_OP_NODE_SET,
                                CNT_STATUS_NOT_PERMITTED, 3);
        seed_write(&s, argv[1], "auth-refused");
    }

    /* An answer with the wrong opaque: the connection is dropped and the
     * rest fail. */
    {
        static const uint8_t ops[] = { OP(K_GET, 0), OP(K_DUMP, 0),
                                       OP(K_GET, 0) };
        seed_begin(&s, 0, ops, sizeof ops, NULL, 0);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 1, 0);
        s.n += cnt_encode_dump_record(room(&s), 2, 1, 1, name_k, 1);
        s.n += cnt_encode_u32(room(&s), CNT_OP_GET, 9, 0);
        seed_write(&s, argv[1], "wrong-opaque-mid-series");
    }
    return 0;
}
#endif
