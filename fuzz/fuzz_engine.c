/* fuzz_engine.c: libFuzzer target for the counter table: scripted steps over
 * four simulated connections, checked against a shadow model after each. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "engine/core/clock.h"
#include "engine/core/gc.h"
#include "engine/core/holdings.h"
#include "engine/core/table.h"
#include "protocol/decode.h"

/* Steps: wire requests, connection ends, clock moves, GC sweeps, failed
 * allocations. Invariants: every answer as the model predicts; consumption =
 * sum of the ledgers, never above the largest maximum that admitted it;
 * zero and then collected once every holder is gone. */

#define NCONN 4
#define NNAMES 32
#define INTERVAL 10u
#define START_MS 1700000000000ull

/* What the model knows of one counter name. */
typedef struct shadow {
    uint8_t *name;
    uint16_t len;
    bool exists;                /* the table has it */
    uint64_t held[NCONN];       /* what each connection holds on it */
    uint32_t max_admitted;      /* largest maximum of an admitted Acquire */
    uint64_t last_change_ms;    /* last time its consumption changed */
    uint64_t last_touch_ms;     /* last Acquire/Release attempt on it */
    uint64_t peak;              /* max consumption in window peak_window */
    uint64_t peak_window;
} shadow;

/* The whole simulation for one input. */
typedef struct sim {
    cnt_table *table;
    cnt_gc *gc;
    cnt_holdings conn[NCONN];
    shadow names[NNAMES];
    size_t nnames;
    bool memory_limited;        /* 0x82 may come on any creation */
    /* An incremental Dump that advances a few records per Dump request,
     * paused in between while other steps (GC sweeps included) run. */
    bool dumping;
    cnt_dump_cursor cursor;
    bool seen[NNAMES];          /* reported by the incremental Dump */
    bool steady[NNAMES];        /* existed since it began, never removed */
} sim;

static uint64_t fake_now_ms;
static bool fail_alloc;         /* the next counter allocation fails */

/* The fake clock the table reads. */
static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now_ms;
}

static const cnt_clock fuzz_clock = { fake_clock, NULL };

/* Counter allocator that fails once on request (OOM paths). */
static void *fuzz_alloc(size_t size)
{
    if (fail_alloc) {
        fail_alloc = false;
        return NULL;
    }
    return malloc(size);
}

/* Returns the current window number. */
static uint64_t window_now(void)
{
    return fake_now_ms / 1000 / INTERVAL;
}

/* Returns the sum of all ledgers' holdings on s. */
static uint64_t shadow_sum(const shadow *s)
{
    uint64_t sum = 0;
    for (int i = 0; i < NCONN; i++)
        sum += s->held[i];
    return sum;
}

/* Records a change of consumption from before to the model's new sum. */
static void shadow_changed(shadow *s, uint64_t before)
{
    uint64_t w = window_now();
    if (s->peak_window != w) {
        s->peak_window = w;
        s->peak = before;   /* a new window starts from what is carried over */
    }
    if (shadow_sum(s) > s->peak)
        s->peak = shadow_sum(s);
    s->last_change_ms = fake_now_ms;
    if (shadow_sum(s) == 0)
        s->max_admitted = 0;
}

/* Finds name in the model; NULL if it was never seen. */
static shadow *shadow_find(sim *m, const uint8_t *name, uint16_t len)
{
    for (size_t i = 0; i < m->nnames; i++)
        if (m->names[i].len == len && memcmp(m->names[i].name, name, len) == 0)
            return &m->names[i];
    return NULL;
}

/* Finds or adds name; NULL when the model is full (the step is skipped). */
static shadow *shadow_get(sim *m, const uint8_t *name, uint16_t len)
{
    shadow *s = shadow_find(m, name, len);
    if (s != NULL || m->nnames == NNAMES)
        return s;
    s = &m->names[m->nnames++];
    memset(s, 0, sizeof *s);
    s->name = malloc(len);
    FUZZ_CHECK(s->name != NULL);
    memcpy(s->name, name, len);
    s->len = len;
    return s;
}

/* Acquire on connection c, with the model's prediction checked. */
static void step_acquire(sim *m, int c, const cnt_request *req)
{
    shadow *s = shadow_get(m, req->name, req->name_len);
    if (s == NULL)
        return;
    bool must_fail = fail_alloc && !s->exists;
    uint64_t before = shadow_sum(s);
    cnt_status st = cnt_table_acquire(m->table, &m->conn[c], req->name,
                                      req->name_len, req->resources,
                                      req->maximum);
    s->last_touch_ms = fake_now_ms;
    if (must_fail || (st == CNT_STATUS_OUT_OF_MEMORY && !s->exists &&
                      m->memory_limited)) {
        FUZZ_CHECK(st == CNT_STATUS_OUT_OF_MEMORY);
        fail_alloc = false;
        return;
    }
    if (before + req->resources <= req->maximum) {
        FUZZ_CHECK(st == CNT_STATUS_OK);
        if (!s->exists) {
            s->exists = true;
            s->peak = 0;
            s->peak_window = window_now();
        }
        s->held[c] += req->resources;
        if (req->maximum > s->max_admitted)
            s->max_admitted = req->maximum;
        shadow_changed(s, before);
    } else {
        FUZZ_CHECK(st == CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    }
}

/* Release on connection c, with the model's prediction checked. */
static void step_release(sim *m, int c, const cnt_request *req)
{
    shadow *s = shadow_find(m, req->name, req->name_len);
    cnt_status st = cnt_table_release(m->table, &m->conn[c], req->name,
                                      req->name_len, req->resources);
    if (s == NULL || !s->exists) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
        return;
    }
    s->last_touch_ms = fake_now_ms;
    if (req->resources > s->held[c] || s->held[c] == 0) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_ACQUIRED);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK);
    uint64_t before = shadow_sum(s);
    s->held[c] -= req->resources;
    if (req->resources > 0)
        shadow_changed(s, before);
}

/* Get, checked against the model. */
static void step_get(sim *m, const cnt_request *req)
{
    shadow *s = shadow_find(m, req->name, req->name_len);
    uint32_t v = 0xdeadbeef;
    cnt_status st = cnt_table_get(m->table, req->name, req->name_len, &v);
    if (s == NULL || !s->exists) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK && v == shadow_sum(s));
}

/* Connection c ends: the server releases everything it held. */
static void step_end(sim *m, int c)
{
    cnt_table_release_all(m->table, &m->conn[c]);
    FUZZ_CHECK(m->conn[c].count == 0);
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        if (s->held[c] == 0)
            continue;
        uint64_t before = shadow_sum(s);
        s->held[c] = 0;
        s->last_touch_ms = fake_now_ms;
        shadow_changed(s, before);
    }
}

/* State shared with the Dump callback. */
typedef struct dump_check {
    sim *m;
    bool *seen;                 /* per name: reported already */
    size_t records;
    unsigned budget;            /* records before asking to stop; 0: all */
} dump_check;

/* Checks one Dump record against the model. */
static bool dump_record(void *ctx, const uint8_t *name, uint16_t len,
                        uint32_t current, uint32_t max_in_window)
{
    dump_check *d = ctx;
    shadow *s = shadow_find(d->m, name, len);
    FUZZ_CHECK(s != NULL && s->exists);
    size_t i = (size_t)(s - d->m->names);
    FUZZ_CHECK(!d->seen[i]);
    d->seen[i] = true;
    d->records++;
    FUZZ_CHECK(current == shadow_sum(s));
    uint64_t expect = s->peak_window == window_now() ? s->peak : current;
    FUZZ_CHECK(max_in_window == expect);
    return d->budget == 0 || --d->budget > 0;
}

/* Dump and Stats: every live counter once, with the model's figures. */
static void step_dump(sim *m)
{
    bool seen[NNAMES] = { false };
    dump_check d = { .m = m, .seen = seen, .records = 0 };
    cnt_dump_cursor cur = { 0 };
    size_t live = 0;
    FUZZ_CHECK(cnt_table_dump(m->table, &cur, dump_record, &d));
    for (size_t i = 0; i < m->nnames; i++)
        live += m->names[i].exists;
    FUZZ_CHECK(d.records == live);
    cnt_table_stats ts;
    cnt_table_get_stats(m->table, &ts);
    FUZZ_CHECK(ts.objects == live && ts.total_objects >= live);
}

/* Advances the incremental Dump by 1 to 8 records (starting it if none
 * runs). Invariants: no counter twice, none after its removal (the
 * callback checks it exists), and at the end every counter that existed
 * all the way through was reported. */
static void step_dump_part(sim *m, uint32_t opaque)
{
    if (!m->dumping) {
        m->dumping = true;
        m->cursor = (cnt_dump_cursor){ 0 };
        for (size_t i = 0; i < NNAMES; i++) {
            m->seen[i] = false;
            m->steady[i] = i < m->nnames && m->names[i].exists;
        }
    }
    dump_check d = { .m = m, .seen = m->seen, .budget = 1 + (opaque & 7) };
    if (!cnt_table_dump(m->table, &m->cursor, dump_record, &d))
        return;
    FUZZ_CHECK(!m->cursor.paused);
    for (size_t i = 0; i < m->nnames; i++)
        FUZZ_CHECK(!m->steady[i] || m->seen[i]);
    m->dumping = false;
}

/* A GC sweep: removes exactly the deletable counters. */
static void step_gc(sim *m)
{
    uint64_t start_ms = window_now() * INTERVAL * 1000;
    size_t removed = cnt_gc_run_once(m->gc), gone = 0;
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        uint32_t v;
        if (!s->exists)
            continue;
        cnt_status st = cnt_table_get(m->table, s->name, s->len, &v);
        if (st == CNT_STATUS_NOT_FOUND) {
            /* Only unheld counters untouched in this window may go. */
            FUZZ_CHECK(shadow_sum(s) == 0 && s->last_change_ms < start_ms);
            s->exists = false;
            m->steady[i] = false;
            gone++;
        } else {
            FUZZ_CHECK(st == CNT_STATUS_OK);
            FUZZ_CHECK(shadow_sum(s) > 0 || s->last_touch_ms >= start_ms);
        }
    }
    FUZZ_CHECK(removed == gone);
}

/* The invariants that hold after every step. */
static void check_all(sim *m)
{
    for (int c = 0; c < NCONN; c++) {
        size_t entries = 0;
        for (size_t i = 0; i < m->nnames; i++)
            entries += m->names[i].held[c] > 0;
        FUZZ_CHECK(m->conn[c].count == entries);
    }
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        uint32_t v = 0xdeadbeef;
        cnt_status st = cnt_table_get(m->table, s->name, s->len, &v);
        FUZZ_CHECK(st == (s->exists ? CNT_STATUS_OK : CNT_STATUS_NOT_FOUND));
        if (!s->exists)
            continue;
        FUZZ_CHECK(v == shadow_sum(s));
        FUZZ_CHECK(v <= s->max_admitted || v == 0);
    }
}

/* Runs one wire request for connection c; returns the bytes it used, or 0
 * to end the script (incomplete input or a closed stream). */
static size_t step_request(sim *m, int c, const uint8_t *p, size_t n)
{
    cnt_request req;
    cnt_decode_result r = cnt_request_decode(p, n, &req);
    if (r == CNT_DECODE_ERROR)
        return req.size < n ? (size_t)req.size : n;
    if (r != CNT_DECODE_REQUEST || req.size > n)
        return 0;
    switch (req.opcode) {
    case CNT_OP_GET: step_get(m, &req); break;
    case CNT_OP_ACQUIRE: step_acquire(m, c, &req); break;
    case CNT_OP_RELEASE: step_release(m, c, &req); break;
    case CNT_OP_DUMP: step_dump_part(m, req.opaque); break;
    case CNT_OP_STATS: step_dump(m); break;
    default: break;
    }
    return (size_t)req.size;
}

/* Builds the table and collector; flags pick the table's shape. */
static void sim_init(sim *m, uint8_t flags)
{
    memset(m, 0, sizeof *m);
    fake_now_ms = START_MS + (uint64_t)flags * 977;
    fail_alloc = false;
    m->memory_limited = flags & 1;
    cnt_table_config cfg = {
        .buckets = (flags & 2) ? 1 : 64,   /* one bucket: every name collides */
        .interval = INTERVAL,
        .memory_limit = m->memory_limited ? 4096 + (flags >> 2) * 64 : 0,
        .clock = &fuzz_clock,
        .alloc = fuzz_alloc,
        .free = free,
    };
    m->table = cnt_table_new(&cfg);
    FUZZ_CHECK(m->table != NULL);
    m->gc = cnt_gc_new(m->table);
    FUZZ_CHECK(m->gc != NULL);
    for (int c = 0; c < NCONN; c++)
        cnt_holdings_init(&m->conn[c]);
}

/* Ends every connection, checks everything drains and is collected, frees. */
static void sim_finish(sim *m)
{
    if (m->dumping)
        cnt_table_dump_cancel(m->table, &m->cursor);
    for (int c = 0; c < NCONN; c++)
        step_end(m, c);
    check_all(m);
    for (size_t i = 0; i < m->nnames; i++)
        FUZZ_CHECK(shadow_sum(&m->names[i]) == 0);
    fake_now_ms += 2ull * INTERVAL * 1000;
    step_gc(m);
    cnt_table_stats ts;
    cnt_table_get_stats(m->table, &ts);
    FUZZ_CHECK(ts.objects == 0);
    for (size_t i = 0; i < m->nnames; i++) {
        FUZZ_CHECK(!m->names[i].exists);
        free(m->names[i].name);
    }
    for (int c = 0; c < NCONN; c++)
        cnt_holdings_destroy(&m->conn[c]);
    cnt_gc_free(m->gc);
    cnt_table_free(m->table);
}

/* Input: a flags byte, then steps. A step is one byte, conn = b % 4 and
 * kind = b / 4: 0-47 a wire request follows; 48-51 the connection ends;
 * 52-55 the clock moves by the next byte x 250 ms; 56-59 GC; 60-61 the
 * next counter allocation fails; 62-63 Dump and Stats. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sim m;
    if (size < 1)
        return 0;
    sim_init(&m, data[0]);
    for (size_t off = 1; off < size;) {
        int c = data[off] % NCONN, kind = data[off] / NCONN;
        off++;
        if (kind < 48) {
            size_t used = step_request(&m, c, data + off, size - off);
            if (used == 0)
                break;
            off += used;
        } else if (kind < 52) {
            step_end(&m, c);
        } else if (kind < 56) {
            if (off < size)
                fake_now_ms += (uint64_t)data[off++] * 250;
        } else if (kind < 60) {
            step_gc(&m);
        } else if (kind < 62) {
            fail_alloc = true;
        } else {
            step_dump(&m);
        }
        check_all(&m);
    }
    fail_alloc = false;
    sim_finish(&m);
    return 0;
}
