/* test_client_live.c: integration tests of libmccounter against the
 * real mchost with counter.so (MCHOST and COUNTER_SO in the environment,
 * as t/ uses them; the tests are skipped without MCHOST): every operation
 * runs once blocking and once async, the lease helper is granted, renews
 * and loses a lease, events arrive in order and 1000 requests are
 * pipelined, and get_lease keeps its batching bound. Nothing here asserts
 * how long anything took. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/mccounter.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "client/test_client_util.h"

/* ---- The real server ---- */

typedef struct live {
    pid_t pid;
    char dir[64];
    uint16_t port;              /* the counter port */
} live;

static live the_live;
static const char live_secret[] = "t0p-s3cret, sixteen+";

/* Reads the memcache port's stats and returns counter_port (0 if none). */
static uint16_t counter_port_of(uint16_t mc_port)
{
    struct sockaddr_in a;
    char buf[16384];
    size_t len = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char *p;

    if (fd < 0)
        return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(mc_port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, "stats\r\n", 7) != 7) {
        close(fd);
        return 0;
    }
    while (len < sizeof buf - 1) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t n;
        if (poll(&pf, 1, GIVE_UP_MS) != 1)
            break;
        n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "END\r\n"))
            break;
    }
    close(fd);
    buf[len] = '\0';
    p = strstr(buf, "STAT counter_port ");
    return p ? (uint16_t)atoi(p + 18) : 0;
}

/* Starts mchost with counter.so (as t/lib/CounterTest.pm does) when MCHOST
 * is set; otherwise the live tests skip. */
static int live_setup(void **state)
{
    const char *mchost = getenv("MCHOST"), *so = getenv("COUNTER_SO");
    char portfile[128], secretfile[128], x[512];
    FILE *fp;

    (void)state;
    memset(&the_live, 0, sizeof the_live);
    if (!mchost || !*mchost || !so || !*so)
        return 0;
    snprintf(the_live.dir, sizeof the_live.dir, "/tmp/mcc-test-XXXXXX");
    if (!mkdtemp(the_live.dir))
        return -1;
    snprintf(portfile, sizeof portfile, "%s/port", the_live.dir);
    snprintf(secretfile, sizeof secretfile, "%s/secret", the_live.dir);
    fp = fopen(secretfile, "w");
    if (!fp)
        return -1;
    fprintf(fp, "%s\n", live_secret);
    fclose(fp);
    chmod(secretfile, 0600);
    snprintf(x, sizeof x,
             "%s,counter.enable=true;counter.port=0;"
             "counter.admin_secret_file=%s", so, secretfile);
    the_live.pid = fork();
    if (the_live.pid < 0)
        return -1;
    if (the_live.pid == 0) {
        char errfile[128];
        snprintf(errfile, sizeof errfile, "%s/stderr", the_live.dir);
        if (!freopen("/dev/null", "r", stdin) ||
            !freopen(errfile, "w", stderr))
            _exit(127);
        execl(mchost, mchost, "-p", "0", "-l", "127.0.0.1", "-F", portfile,
              "-X", x, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < GIVE_UP_MS / 10; i++) {
        int mc = 0;
        fp = fopen(portfile, "r");
        if (fp) {
            if (fscanf(fp, "%d", &mc) != 1)
                mc = 0;
            fclose(fp);
        }
        if (mc > 0) {
            the_live.port = counter_port_of((uint16_t)mc);
            break;
        }
        if (waitpid(the_live.pid, NULL, WNOHANG) == the_live.pid) {
            the_live.pid = 0;
            return -1;
        }
        sleep_ms(10);
    }
    return the_live.port ? 0 : -1;
}

/* Stops the mchost the setup started (by its pid) and removes its files. */
static int live_teardown(void **state)
{
    char path[160];

    (void)state;
    if (the_live.pid > 0) {
        int st;
        kill(the_live.pid, SIGTERM);
        for (int i = 0; i < GIVE_UP_MS / 10; i++) {
            if (waitpid(the_live.pid, &st, WNOHANG) == the_live.pid)
                break;
            sleep_ms(10);
            if (i == GIVE_UP_MS / 10 - 1) {
                kill(the_live.pid, SIGKILL);
                waitpid(the_live.pid, &st, 0);
            }
        }
        the_live.pid = 0;
    }
    if (the_live.dir[0]) {
        snprintf(path, sizeof path, "%s/port", the_live.dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/secret", the_live.dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/stderr", the_live.dir);
        unlink(path);
        rmdir(the_live.dir);
    }
    return 0;
}

/* A client of the live server, or a skip. */
static mcc_client *live_client(void)
{
    if (!the_live.port)
        skip();
    return client_at(the_live.port);
}

/* Counts records and remembers whether a given name was among them. */
typedef struct tally {
    int records, ends, last_error;
    const char *want;
    bool seen;
} tally;

/* Counts the records of a series. */
static void tally_record(mcc_client *c, const mcc_record *rec, void *arg)
{
    tally *t = arg;

    (void)c;
    if (!rec->more) {
        t->ends++;
        t->last_error = rec->error;
        return;
    }
    t->records++;
    if (t->want && rec->name_len == strlen(t->want) &&
        memcmp(rec->name, t->want, rec->name_len) == 0)
        t->seen = true;
}

/* What a Lease_list series showed: the lease want_id (named wblk, one
 * resource, at most a minute left) and how many ends. */
typedef struct lease_seen {
    uint64_t want_id;
    bool seen;
    int ends;
} lease_seen;

static void lease_record(mcc_client *c, const mcc_record *rec, void *arg)
{
    lease_seen *ls = arg;

    (void)c;
    if (!rec->more) {
        ls->ends++;
        assert_int_equal(rec->error, MCC_OK);
        return;
    }
    assert_int_equal(rec->op, MCC_OP_LEASE_LIST);
    if (rec->lease_id == ls->want_id) {
        assert_int_equal(rec->name_len, 4);
        assert_memory_equal(rec->name, "wblk", 4);
        assert_int_equal(rec->resources, 1);
        assert_true(rec->left_ms > 0 && rec->left_ms <= 60000);
        ls->seen = true;
    }
}

/* Auth_user against the real server: the admin secret answers to the
 * user admin, once asked for and once on every new connection. */
static void test_live_auth_user(void **state)
{
    mcc_client *c = live_client();
    mcc_client *d;
    mcc_result r;
    size_t slen = strlen(live_secret);

    (void)state;
    assert_int_equal(mcc_auth_user(c, 0, "nobody", 6, live_secret, slen, 0,
                                   -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_AUTH_FAILED);
    assert_int_equal(mcc_unthrottle(c, 0, -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_NOT_PERMITTED);
    assert_int_equal(mcc_auth_user(c, 0, "admin", 5, live_secret, slen,
                                   MCC_AUTH_NONBLOCKING, -1, &r), MCC_OK);
    assert_int_equal(r.op, MCC_OP_AUTH_USER);
    assert_int_equal(mcc_unthrottle(c, 0, -1, &r), MCC_OK);
    mcc_client_free(c);

    d = live_client();
    assert_int_equal(mcc_client_set_secret(d, live_secret, slen), MCC_OK);
    assert_int_equal(mcc_client_set_user(d, "admin", 5, 0), MCC_OK);
    assert_int_equal(mcc_unthrottle(d, 0, -1, &r), MCC_OK);
    mcc_client_free(d);
}

static void test_live_blocking(void **state)
{
    mcc_client *c = live_client();
    mcc_result r;
    tally t;
    mcc_check_item items[2];

    (void)state;
    assert_int_equal(mcc_noop(c, 0, -1, &r), MCC_OK);
    assert_int_equal(mcc_acquire(c, "blk", 3, 2, 5, -1, &r), MCC_OK);
    assert_int_equal(r.value, 2);
    assert_int_equal(mcc_get(c, "blk", 3, -1, &r), MCC_OK);
    assert_int_equal(r.value, 2);
    memset(&t, 0, sizeof t);
    t.want = "blk";
    assert_int_equal(mcc_dump(c, 0, tally_record, &t, -1), MCC_OK);
    assert_true(t.seen);
    assert_int_equal(t.ends, 1);
    assert_int_equal(mcc_release(c, "blk", 3, 2, -1, &r), MCC_OK);
    assert_int_equal(mcc_release(c, "blk", 3, 2, -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_NOT_ACQUIRED);
    assert_int_equal(mcc_get(c, "never-made", 10, -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_NOT_FOUND);
    memset(&t, 0, sizeof t);
    t.want = "objects";
    assert_int_equal(mcc_stats(c, 0, tally_record, &t, -1), MCC_OK);
    assert_true(t.seen);
    /* Waits and leases. */
    assert_int_equal(mcc_wait_for(c, "wblk", 4, &(mcc_wait_params){
                                      .resources = 1, .maximum = 2 },
                                  -1, &r), MCC_OK);
    assert_int_equal(r.wait.state, MCC_WAIT_GRANTED);
    assert_true(r.wait.lease_id > 0);
    {
        uint64_t id = r.wait.lease_id;
        assert_int_equal(mcc_renew(c, "wblk", 4, 60000, -1, &r), MCC_OK);
        assert_true(r.lease_id == id);
    }
    memset(&t, 0, sizeof t);
    assert_int_equal(mcc_queues(c, 0, tally_record, &t, -1), MCC_OK);
    assert_int_equal(t.ends, 1);
    /* The leases nearest to expiry: wblk's, renewed for a minute. */
    {
        lease_seen ls = { .want_id = 0 };
        assert_int_equal(mcc_renew(c, "wblk", 4, 60000, -1, &r), MCC_OK);
        ls.want_id = r.lease_id;
        assert_int_equal(mcc_lease_list(c, 0, 64, lease_record, &ls, -1),
                         MCC_OK);
        assert_int_equal(ls.ends, 1);
        assert_true(ls.seen);
        assert_int_equal(mcc_lease_list(c, 0, 0, lease_record, &ls, -1),
                         MCC_ERR_INVALID);
    }
    assert_int_equal(mcc_wait_release(c, "wblk", 4, -1, &r), MCC_OK);
    assert_int_equal(r.value, 1);
    /* Rate limits. */
    assert_int_equal(mcc_ttl_insert(c, "tblk", 4, 10, 60, MCC_UNIT_S, -1, &r),
                     MCC_OK);
    assert_int_equal(mcc_ttl_query(c, "tblk", 4, -1, &r), MCC_OK);
    assert_int_equal(r.ttl.quota, 10);
    assert_int_equal(mcc_ttl_update(c, "tblk", 4, MCC_TTL_ATTR_QUOTA,
                                    MCC_TTL_PATCH, MCC_UNIT_S, 20, -1, &r),
                     MCC_OK);
    assert_int_equal(r.ttl.quota, 20);
    assert_int_equal(mcc_ttl_purge(c, "tblk", 4, -1, &r), MCC_OK);
    assert_int_equal(mcc_check(c, &(mcc_check_item){
                                   .op = MCC_OP_WINDOW_CHECK, .name = "wl",
                                   .name_len = 2, .limit = 10, .cost = 1 },
                               false, -1, &r), MCC_OK);
    assert_int_equal(r.check.state, MCC_CHECK_ALLOWED);
    assert_int_equal(r.check.remaining, 9);
    assert_int_equal(mcc_check(c, &(mcc_check_item){
                                   .op = MCC_OP_GCRA_CHECK, .name = "gl",
                                   .name_len = 2, .limit = 5, .count = 10,
                                   .cost = 1, .period_ns = 1000000000u },
                               true, -1, &r), MCC_OK);
    assert_int_equal(r.check.state, MCC_CHECK_ALLOWED);
    memset(items, 0, sizeof items);
    items[0].op = MCC_OP_WINDOW_CHECK;
    items[0].name = "ml";
    items[0].name_len = 2;
    items[0].limit = 10;
    items[0].cost = 1;
    items[1].op = MCC_OP_GCRA_CHECK;
    items[1].name = "ml";
    items[1].name_len = 2;
    items[1].limit = 5;
    items[1].count = 10;
    items[1].cost = 1;
    items[1].period_ns = 1000000000u;
    assert_int_equal(mcc_multi_check(c, items, 2, false, -1, &r), MCC_OK);
    assert_int_equal(r.multi.overall, MCC_MULTI_ALLOWED);
    assert_int_equal(r.multi.count, 2);
    assert_int_equal(r.multi.items[0].remaining, 9);
    /* Throttling, privileged ones after Auth. */
    assert_int_equal(mcc_tenant_set(c, "acme", 4, MCC_TENANT_SET_HARD, 0, 50,
                                    -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_NOT_PERMITTED);
    assert_int_equal(mcc_auth(c, 0, "wrong", 5, -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_AUTH_FAILED);
    assert_int_equal(mcc_auth(c, 0, live_secret, strlen(live_secret), -1, &r),
                     MCC_OK);
    assert_int_equal(mcc_node_set(c, 0, 1000, -1, &r), MCC_OK);
    assert_int_equal(mcc_tenant_set(c, "acme", 4, MCC_TENANT_SET_HARD, 0, 50,
                                    -1, &r), MCC_OK);
    assert_int_equal(mcc_throttle(c, "acme", 4, 5, -1, &r), MCC_OK);
    assert_int_equal(r.throttle.state, MCC_THROTTLE_ALLOWED);
    assert_int_equal(mcc_tenant_show(c, "acme", 4, -1, &r), MCC_OK);
    assert_int_equal(r.tenant.hard_limit, 50);
    memset(&t, 0, sizeof t);
    t.want = "acme";
    assert_int_equal(mcc_tenant_list(c, 0, tally_record, &t, -1), MCC_OK);
    assert_true(t.seen);
    assert_int_equal(mcc_node_show(c, 0, -1, &r), MCC_OK);
    assert_int_equal(r.node.capacity, 1000);
    /* The JSON documents: applied, and refused with the server's status. */
    static const char node_doc[] = "{\"capacity\": 2000}";
    static const char tenant_doc[] = "{\"reserved\": 5}";
    assert_int_equal(mcc_node_set_json(c, 0, node_doc, strlen(node_doc), -1,
                                       &r), MCC_OK);
    assert_int_equal(mcc_tenant_set_json(c, "acme", 4, tenant_doc,
                                         strlen(tenant_doc), -1, &r), MCC_OK);
    assert_int_equal(mcc_tenant_show(c, "acme", 4, -1, &r), MCC_OK);
    assert_int_equal(r.tenant.reserved, 5);
    assert_int_equal(r.tenant.hard_limit, 50);
    assert_int_equal(mcc_node_show(c, 0, -1, &r), MCC_OK);
    assert_int_equal(r.node.capacity, 2000);
    assert_int_equal(mcc_tenant_set_json(c, "acme", 4, "{}", 2, -1, &r),
                     MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_INVALID);
    assert_int_equal(mcc_node_set_json(c, 0, "{\"capacity\": 4}", 15, -1,
                                       &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_OVER_CAPACITY);
    assert_int_equal(mcc_tenant_remove(c, "acme", 4, -1, &r), MCC_OK);
    assert_int_equal(mcc_unthrottle(c, 0, -1, &r), MCC_OK);
    assert_int_equal(mcc_reload(c, 0, -1, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_NOT_FOUND);   /* no config file */
    assert_int_equal(mcc_node_set(c, 0, 0, -1, &r), MCC_OK);
    mcc_client_free(c);
}

static void test_live_async(void **state)
{
    mcc_client *c = live_client();
    logbook *lb = calloc(1, sizeof *lb);
    mcc_check_item it;

    (void)state;
    memset(&it, 0, sizeof it);
    it.op = MCC_OP_WINDOW_CHECK;
    it.name = "aml";
    it.name_len = 3;
    it.limit = 10;
    it.cost = 1;
    assert_int_equal(mcc_noop_async(c, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_acquire_async(c, "as", 2, 1, 3, log_result, lb), 0);
    assert_int_equal(mcc_get_async(c, "as", 2, log_result, lb), MCC_OK);
    assert_int_equal(mcc_release_async(c, "as", 2, 1, log_result, lb), 0);
    assert_int_equal(mcc_stats_async(c, 0, log_end, lb), MCC_OK);
    poll_until(c, lb, 5);
    log_expect(lb, "00:0", "02:0:1", "01:0:1", "03:0", "end:0", NULL);
    lb->n = 0;
    assert_int_equal(mcc_dump_async(c, 0, NULL, NULL), MCC_OK);
    assert_int_equal(mcc_wait_for_async(c, "aw", 2, &(mcc_wait_params){
                                            .resources = 1, .maximum = 1 },
                                        log_result, lb), MCC_OK);
    assert_int_equal(mcc_renew_async(c, "aw", 2, 60000, log_result, lb), 0);
    assert_int_equal(mcc_queues_async(c, 0, log_record, lb), MCC_OK);
    assert_int_equal(mcc_wait_release_async(c, "aw", 2, log_result, lb), 0);
    assert_int_equal(mcc_ttl_insert_async(c, "at", 2, 5, 60, MCC_UNIT_S,
                                          log_result, lb), MCC_OK);
    assert_int_equal(mcc_ttl_query_async(c, "at", 2, log_result, lb), 0);
    assert_int_equal(mcc_ttl_update_async(c, "at", 2, MCC_TTL_ATTR_TTL,
                                          MCC_TTL_INCREASE, MCC_UNIT_S, 5,
                                          log_result, lb), MCC_OK);
    assert_int_equal(mcc_ttl_purge_async(c, "at", 2, log_result, lb), 0);
    assert_int_equal(mcc_check_async(c, &(mcc_check_item){
                                         .op = MCC_OP_WINDOW_CHECK,
                                         .name = "awl", .name_len = 3,
                                         .limit = 10, .cost = 1 },
                                     false, log_result, lb), MCC_OK);
    assert_int_equal(mcc_check_async(c, &(mcc_check_item){
                                         .op = MCC_OP_GCRA_CHECK,
                                         .name = "agl", .name_len = 3,
                                         .limit = 5, .count = 10, .cost = 1,
                                         .period_ns = 1000000000u },
                                     false, log_result, lb), 0);
    assert_int_equal(mcc_multi_check_async(c, &it, 1, true, log_result, lb),
                     MCC_OK);
    assert_int_equal(mcc_auth_async(c, 0, live_secret, strlen(live_secret),
                                    log_result, lb), MCC_OK);
    assert_int_equal(mcc_throttle_async(c, "beta", 4, 1, log_result, lb), 0);
    assert_int_equal(mcc_tenant_show_async(c, "beta", 4, log_result, lb), 0);
    assert_int_equal(mcc_tenant_list_async(c, 0, NULL, NULL), MCC_OK);
    assert_int_equal(mcc_lease_list_async(c, 0, 5, NULL, NULL), MCC_OK);
    assert_int_equal(mcc_node_show_async(c, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_tenant_set_async(c, "beta", 4, MCC_TENANT_SET_RESERVED | MCC_TENANT_SET_HARD,
                                          0, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_tenant_remove_async(c, "beta", 4, log_result, lb),
                     MCC_OK);
    assert_int_equal(mcc_node_set_async(c, 0, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_unthrottle_async(c, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_reload_async(c, 0, log_result, lb), MCC_OK);
    poll_until(c, lb, 20);
    for (int round = 0; mcc_pending(c) && round < GIVE_UP_MS / 10; round++)
        mcc_poll(c, 10);
    assert_int_equal(mcc_pending(c), 0);
    log_expect(lb, "20:0:w0", "21:0", "end:0", "22:0", "30:0", "31:0",
               "32:0", "33:0", "34:0", "35:0", "36:0", "40:0", "41:0",
               "42:0", "44:0", "45:0", "46:0", "47:0", "48:0", "49:-10:s01",
               NULL);
    mcc_client_free(c);
    free(lb);
}

/* Events of queued waits, in the order they happen. */
static void test_live_events(void **state)
{
    mcc_client *holder = live_client();
    mcc_client *waiter = client_at(the_live.port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    mcc_client_set_event_callback(waiter, log_event, lb);
    assert_int_equal(mcc_acquire(holder, "ev1", 3, 1, 1, -1, &r), MCC_OK);
    assert_int_equal(mcc_acquire(holder, "ev2", 3, 1, 1, -1, &r), MCC_OK);
    assert_int_equal(mcc_wait_for_async(waiter, "ev1", 3, &(mcc_wait_params){
                                            .resources = 1, .maximum = 1,
                                            .wait_ms = 60000 },
                                        log_result, lb), MCC_OK);
    assert_int_equal(mcc_wait_for_async(waiter, "ev2", 3, &(mcc_wait_params){
                                            .resources = 1, .maximum = 1,
                                            .wait_ms = 20 },
                                        log_result, lb), MCC_OK);
    /* The short wait times out on its own... */
    poll_until(waiter, lb, 3);
    log_expect(lb, "20:0:w1", "20:0:w1", "ev2:ev2", NULL);
    /* ...and the release of ev1 grants the long one. */
    assert_int_equal(mcc_release(holder, "ev1", 3, 1, -1, &r), MCC_OK);
    poll_until(waiter, lb, 4);
    log_expect(lb, "20:0:w1", "20:0:w1", "ev2:ev2", "ev1:ev1", NULL);
    /* A blocking wait that times out on the server, then one granted when
     * the holder's connection ends. */
    assert_int_equal(mcc_wait_for(waiter, "ev2", 3, &(mcc_wait_params){
                                      .resources = 1, .maximum = 1,
                                      .wait_ms = 20 }, -1, &r), MCC_OK);
    assert_int_equal(r.wait.state, MCC_WAIT_TIMED_OUT);
    mcc_client_free(holder);
    assert_int_equal(mcc_wait_for(waiter, "ev2", 3, &(mcc_wait_params){
                                      .resources = 1, .maximum = 1,
                                      .wait_ms = 60000 }, GIVE_UP_MS, &r),
                     MCC_OK);
    assert_int_equal(r.wait.state, MCC_WAIT_GRANTED);
    assert_true(r.wait.lease_id > 0);
    /* The blocking waits' events were theirs, not the callback's. */
    assert_int_equal(lb->n, 4);
    mcc_client_free(waiter);
    free(lb);
}

static void test_live_lease(void **state)
{
    mcc_client *c = live_client();
    mcc_client *other = client_at(the_live.port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_lease *l = NULL, *l2 = NULL;
    mcc_result r;
    uint64_t id;

    (void)state;
    /* Granted at once, then kept alive for several lease periods by the
     * background renewals (a lease of 1.5 s renewed every 0.5 s, so that
     * the blocking calls below on the other client leave it room). */
    assert_int_equal(mcc_lease_start(c, "lz", 2, &(mcc_wait_params){
                                         .resources = 1, .maximum = 1,
                                         .wait_ms = 0, .lease_ms = 1500 },
                                     log_lease, lb, &l), MCC_OK);
    poll_until(c, lb, 1);
    log_expect(lb, "lease:1:0:s00", NULL);
    id = mcc_lease_id(l);
    assert_true(id > 0);
    drive_for(c, 4000);         /* several renewals */
    log_expect(lb, "lease:1:0:s00", NULL);
    assert_int_equal(mcc_lease_get_state(l), MCC_LEASE_GRANTED);
    /* Another connection finds the counter full all along. */
    assert_int_equal(mcc_acquire(other, "lz", 2, 1, 1, -1, &r),
                     MCC_ERR_STATUS);
    assert_int_equal(mcc_get(other, "lz", 2, -1, &r), MCC_OK);
    assert_int_equal(r.value, 1);
    /* Released: the counter is free again. */
    mcc_lease_release(l);
    assert_int_equal(mcc_noop(c, 0, -1, NULL), MCC_OK);
    assert_int_equal(mcc_acquire(other, "lz", 2, 1, 1, -1, &r), MCC_OK);
    /* Queued behind other's holding, granted on its release. */
    lb->n = 0;
    assert_int_equal(mcc_lease_start(c, "lz", 2, &(mcc_wait_params){
                                         .resources = 1, .maximum = 1,
                                         .wait_ms = 60000, .lease_ms = 150 },
                                     log_lease, lb, &l2), MCC_OK);
    assert_int_equal(mcc_noop(c, 0, -1, NULL), MCC_OK);
    assert_int_equal(lb->n, 0);
    assert_int_equal(mcc_release(other, "lz", 2, 1, -1, &r), MCC_OK);
    poll_until(c, lb, 1);
    log_expect(lb, "lease:1:0:s00", NULL);
    /* Lost: the loop does not run for longer than the lease, so nothing
     * renews it and the server lets it expire. */
    sleep_ms(600);
    poll_until(c, lb, 2);
    log_expect(lb, "lease:1:0:s00", "lease:3:0:s27", NULL);
    assert_int_equal(mcc_lease_id(l2), 0);
    mcc_lease_release(l2);
    assert_int_equal(mcc_noop(c, 0, -1, NULL), MCC_OK);
    /* A wait that times out. */
    assert_int_equal(mcc_acquire(other, "lz", 2, 1, 1, -1, &r), MCC_OK);
    lb->n = 0;
    assert_int_equal(mcc_lease_start(c, "lz", 2, &(mcc_wait_params){
                                         .resources = 1, .maximum = 1,
                                         .wait_ms = 0, .lease_ms = 150 },
                                     log_lease, lb, &l), MCC_OK);
    poll_until(c, lb, 1);
    log_expect(lb, "lease:2:-10:s21", NULL);
    mcc_lease_release(l);
    /* A lease still held when the client is freed goes with it. */
    assert_int_equal(mcc_release(other, "lz", 2, 1, -1, &r), MCC_OK);
    lb->n = 0;
    assert_int_equal(mcc_lease_start(c, "lz", 2, &(mcc_wait_params){
                                         .resources = 1, .maximum = 1,
                                         .wait_ms = 0, .lease_ms = 150 },
                                     log_lease, lb, &l), MCC_OK);
    poll_until(c, lb, 1);
    mcc_client_free(c);
    mcc_client_free(other);
    free(lb);
}

/* Checks 1000 pipelined answers come back in order. */
typedef struct order {
    int n, bad;
    uint32_t last;
} order;

/* Counts answers and checks their opaques only increase. */
static void order_cb(mcc_client *c, const mcc_result *r, void *arg)
{
    order *o = arg;

    (void)c;
    if (r->error != MCC_OK || (o->n && r->opaque <= o->last))
        o->bad++;
    o->last = r->opaque;
    o->n++;
}

static void test_live_pipeline(void **state)
{
    mcc_client *c = live_client();
    order o;
    mcc_result r;

    (void)state;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < 1000; i++) {
        int rc = i % 2 ? mcc_get_async(c, "pipe", 4, order_cb, &o)
                       : mcc_acquire_async(c, "pipe", 4, 1, 1000, order_cb,
                                           &o);
        assert_int_equal(rc, MCC_OK);
    }
    assert_int_equal(mcc_pending(c), 1000);
    for (int round = 0; o.n < 1000 && round < GIVE_UP_MS / 10; round++)
        mcc_poll(c, 10);
    assert_int_equal(o.n, 1000);
    assert_int_equal(o.bad, 0);
    assert_int_equal(mcc_get(c, "pipe", 4, -1, &r), MCC_OK);
    assert_int_equal(r.value, 500);
    mcc_client_free(c);
}

/* get_lease: exact with max_lease 1, under the documented name; a batch
 * of max_lease charged at once; what is left taken when a batch does not
 * fit; the refusals of bad arguments. */
static void test_live_get_lease(void **state)
{
    char list[64], err[128], big[70000];
    mcc_client *c, *b;
    mcc_result r;
    int got[7];

    (void)state;
    if (!the_live.port)
        skip();
    snprintf(list, sizeof list, "127.0.0.1:%u", (unsigned)the_live.port);
    c = mcc_quota_init(list, 1, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(mcc_client_max_lease(c), 1);
    for (int i = 0; i < 7; i++)
        got[i] = mcc_get_lease(c, "guest", "X", "insert", 5);
    for (int i = 0; i < 7; i++)
        assert_int_equal(got[i], i < 5 ? 1 : 0);
    assert_int_equal(mcc_get_lease(c, "guest", "Y", "insert", 5), 1);
    assert_int_equal(mcc_check(c, &(mcc_check_item){
                                   .op = MCC_OP_WINDOW_CHECK,
                                   .name = "getlease:5:guest1:Xinsert",
                                   .name_len = 25, .slots = 10, .limit = 5,
                                   .cost = 1, .period_ns = 1000000000ull },
                               true, -1, &r), MCC_OK);
    assert_int_equal(r.check.used, 5);
    assert_int_equal(mcc_get_lease(c, "guest", "X", "insert", 0), 0);

    /* max_lease 10: one charge of 10 covers ten calls. */
    b = mcc_quota_init(list, 10, err, sizeof err);
    assert_non_null(b);
    for (int i = 0; i < 10; i++)
        assert_int_equal(mcc_get_lease(b, "u", "d", "batch", 100), 1);
    assert_int_equal(mcc_check(c, &(mcc_check_item){
                                   .op = MCC_OP_WINDOW_CHECK,
                                   .name = "getlease:1:u1:dbatch",
                                   .name_len = 20, .slots = 10, .limit = 100,
                                   .cost = 1, .period_ns = 1000000000ull },
                               true, -1, &r), MCC_OK);
    /* An allowed peek counts its own cost in used; a slow machine may
     * have let an allowance run out (100 ms) and charged another 10. */
    assert_true(r.check.used % 10 == 1);
    /* Six taken exactly: the batch of 10 does not fit, the 4 left do. */
    for (int i = 0; i < 6; i++)
        assert_int_equal(mcc_get_lease(c, "u", "d", "left", 10), 1);
    assert_int_equal(mcc_get_lease(b, "u", "d", "left", 10), 1);
    assert_int_equal(mcc_get_lease(c, "u", "d", "left", 10), 0);

    /* Refusals before sending. */
    memset(big, 'u', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(mcc_get_lease(c, big, "d", "o", 1), MCC_ERR_NAME);
    assert_int_equal(mcc_get_lease(c, NULL, "d", "o", 1), MCC_ERR_INVALID);
    assert_int_equal(mcc_get_lease(NULL, "u", "d", "o", 1), MCC_ERR_INVALID);
    assert_int_equal(mcc_client_set_max_lease(c, 0), MCC_ERR_INVALID);
    assert_null(mcc_quota_init(list, 0, err, sizeof err));
    assert_non_null(strstr(err, "max_lease"));
    assert_null(mcc_quota_init("127.0.0.1:0:x:y", 1, err, sizeof err));
    assert_true(err[0] != '\0');
    mcc_client_free(b);
    mcc_client_free(c);
}

/* Seconds on the monotonic clock. */
static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* K clients of max_lease B hammer one identity: in any 0.9 s at most
 * quota + K*(B-1) calls are admitted (the bound of doc/clients.md). */
static void test_live_get_lease_bound(void **state)
{
    enum { K = 4, B = 10, QUOTA = 40, MAX_ADMITTED = 4096 };
    static double admitted[MAX_ADMITTED];
    mcc_client *cs[K];
    size_t n = 0, worst = 0, j = 0;
    long calls = 0;
    char list[64];
    double end;

    (void)state;
    if (!the_live.port)
        skip();
    snprintf(list, sizeof list, "127.0.0.1:%u", (unsigned)the_live.port);
    for (int i = 0; i < K; i++) {
        cs[i] = mcc_quota_init(list, B, NULL, 0);
        assert_non_null(cs[i]);
    }
    end = mono_s() + 2.5;
    while (mono_s() < end && n < MAX_ADMITTED) {
        for (int i = 0; i < K && n < MAX_ADMITTED; i++) {
            int rc = mcc_get_lease(cs[i], "guest", "X", "bound", QUOTA);

            assert_true(rc >= 0);
            calls++;
            if (rc == 1)
                admitted[n++] = mono_s();
        }
    }
    for (int i = 0; i < K; i++)
        mcc_client_free(cs[i]);
    assert_true(n > QUOTA);
    assert_true(calls > (long)n);
    for (size_t i = 0; i < n; i++) {
        while (admitted[j] <= admitted[i] - 0.9)
            j++;
        if (i - j + 1 > worst)
            worst = i - j + 1;
    }
    assert_true(worst <= QUOTA + K * (B - 1));
}

int main(void)
{
    const struct CMUnitTest online[] = {
        cmocka_unit_test(test_live_get_lease),
        cmocka_unit_test(test_live_get_lease_bound),
        cmocka_unit_test(test_live_blocking),
        cmocka_unit_test(test_live_auth_user),
        cmocka_unit_test(test_live_async),
        cmocka_unit_test(test_live_events),
        cmocka_unit_test(test_live_lease),
        cmocka_unit_test(test_live_pipeline),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests_name("client (mchost)", online, live_setup,
                                       live_teardown) ? 1 : 0;
}
