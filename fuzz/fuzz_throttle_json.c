/* fuzz_throttle_json.c: libFuzzer target for the throttle settings
 * documents (protocol/throttle_json.c): one input read as a node document,
 * a tenant document and a whole JSON settings file. Accepted documents
 * must be in range and read back the same once written again; refused
 * ones must say why in one bounded line; nothing may leak. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "protocol/throttle_json.h"

/* Checks one error line: written, NUL-terminated within the buffer. */
static void check_error(const char *err, size_t errlen)
{
    FUZZ_CHECK(memchr(err, '\0', errlen) != NULL);
    FUZZ_CHECK(err[0] != '\0');
    FUZZ_CHECK(strchr(err, '\n') == NULL);
}

/* The file's tenants: a name of len bytes with no NUL inside, and a
 * document that sets something, its hard limit at least its reserve
 * when it gives both. Refuses every fifth, as a caller may. */
static bool on_tenant(void *ctx, const char *name, size_t len,
                      const cnt_tjson_tenant *t, char *err, size_t errlen)
{
    unsigned *n = ctx;
    FUZZ_CHECK(strlen(name) == len);
    FUZZ_CHECK(t->has_reserved || t->has_hard);
    FUZZ_CHECK(!t->has_hard || t->hard == CNT_TJSON_UNLIMITED ||
               t->hard < CNT_TJSON_UNLIMITED);
    FUZZ_CHECK(!(t->has_reserved && t->has_hard) || t->hard >= t->reserved);
    if (++*n % 5 == 0) {
        snprintf(err, errlen, "refused");
        return false;
    }
    return true;
}

/* Input: the bytes of a document, tried as each of the three. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[CNT_TJSON_ERR_SIZE], out[128];
    cnt_tjson_node n = { .capacity = 12345 };
    cnt_tjson_tenant t = { .reserved = 777 };
    cnt_tjson_file f;
    unsigned seen = 0;

    if (cnt_tjson_node_parse(data, size, &n, err, sizeof err)) {
        cnt_tjson_node back;
        size_t len = cnt_tjson_node_format(out, sizeof out, n.capacity);
        FUZZ_CHECK(len < sizeof out);
        FUZZ_CHECK(cnt_tjson_node_parse((const uint8_t *)out, len, &back,
                                        err, sizeof err));
        FUZZ_CHECK(back.capacity == n.capacity);
    } else {
        check_error(err, sizeof err);
        FUZZ_CHECK(n.capacity == 12345);
    }

    if (cnt_tjson_tenant_parse(data, size, &t, err, sizeof err)) {
        cnt_tjson_tenant back;
        uint32_t r = t.has_reserved ? t.reserved : 0;
        uint32_t h = t.has_hard ? t.hard : CNT_TJSON_UNLIMITED;
        FUZZ_CHECK(t.has_reserved || t.has_hard);
        if (h >= r) {
            size_t len = cnt_tjson_tenant_format(out, sizeof out, r, h);
            FUZZ_CHECK(len < sizeof out);
            FUZZ_CHECK(cnt_tjson_tenant_parse((const uint8_t *)out, len,
                                              &back, err, sizeof err));
            FUZZ_CHECK(back.has_reserved && back.has_hard &&
                       back.reserved == r && back.hard == h);
        }
    } else {
        check_error(err, sizeof err);
        FUZZ_CHECK(t.reserved == 777);
    }

    if (!cnt_tjson_file_parse(data, size, &f, on_tenant, &seen, err,
                              sizeof err))
        check_error(err, sizeof err);
    else
        FUZZ_CHECK(!f.has_default_hard ||
                   f.default_hard <= CNT_TJSON_UNLIMITED);
    return 0;
}
