/* config_secret.c: reads the admin secret file that
 * counter.admin_secret_file names, and wipes every buffer that held a
 * secret. Messages name the key and the path, never the content. */
#include "config.h"

#include "engine/glue/config_int.h"
#include "engine/core/users.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The secret file: at most the secret, a "\r\n", and one byte to tell a
 * secret that is too long. */
#define CNT_SECRET_READ (CNT_CONFIG_SECRET_MAX + 3u)
#define CNT_SECRET_EXPECTED \
    "a secret of 16..4096 bytes, then at most one line end"

/* Wipes and frees a secret buffer of n bytes (NULL is fine). */
void cnt_config_secret_free(uint8_t *secret, size_t n)
{
    if (secret == NULL)
        return;
    cnt_wipe(secret, n);
    free(secret);
}

/* counter.admin_secret_file = PATH: reads the secret now (the file may be
 * unreadable once the host drops its privileges). Read with read(2), not
 * stdio, so no copy of it stays in a stdio buffer; every buffer that held
 * it is wiped. */
bool cnt_config_key_secret(const cnt_config_key *k, void *target,
                           const char *key, const char *v,
                           const cnt_config_errctx *e)
{
    (void)k;
    cnt_config *c = target;
    char p[CNT_CLIP_BUF];
    if (*v == '\0')
        return cnt_config_bad_value(e, key, v, "a file path");
    FILE *f = cnt_config_open_file(key, v, e);
    if (f == NULL)
        return false;
    uint8_t *buf = malloc(CNT_SECRET_READ);
    if (buf == NULL) {
        fclose(f);
        return cnt_config_error(e, "%s: out of memory", key);
    }
    size_t n = 0;
    int errnum = 0;
    while (n < CNT_SECRET_READ) {
        ssize_t r = read(fileno(f), buf + n, CNT_SECRET_READ - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            errnum = errno;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    fclose(f);
    bool ok = false;
    if (errnum != 0) {
        cnt_config_error(e, "%s: cannot read file \"%s\": %s", key,
                         cnt_config_clip_path(p, v), strerror(errnum));
        goto out;
    }
    /* One final "\n" or "\r\n" goes: editors add it, nobody means it. */
    if (n > 0 && buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    if (n == 0) {
        cnt_config_error(e, "%s: file \"%s\" is empty (expected "
                         CNT_SECRET_EXPECTED ")", key,
                         cnt_config_clip_path(p, v));
        goto out;
    }
    /* A short secret falls to guessing however slowly failures go. */
    if (n < CNT_CONFIG_SECRET_MIN) {
        cnt_config_error(e, "%s: file \"%s\" holds a secret of %zu bytes, "
                         "shorter than the %u required (expected "
                         CNT_SECRET_EXPECTED ")", key,
                         cnt_config_clip_path(p, v), n,
                         CNT_CONFIG_SECRET_MIN);
        goto out;
    }
    if (n > CNT_CONFIG_SECRET_MAX) {
        cnt_config_error(e, "%s: file \"%s\" holds more than %u bytes "
                         "(expected " CNT_SECRET_EXPECTED ")", key,
                         cnt_config_clip_path(p, v), CNT_CONFIG_SECRET_MAX);
        goto out;
    }
    uint8_t *secret = malloc(n);
    if (secret == NULL) {
        cnt_config_error(e, "%s: out of memory", key);
        goto out;
    }
    memcpy(secret, buf, n);
    /* A later key replaces the secret; the old one is this parse's own
     * copy (see parse_begin in configuration.c). */
    cnt_config_secret_free(c->admin_secret, c->admin_secret_len);
    c->admin_secret = secret;
    c->admin_secret_len = n;
    ok = true;
out:
    cnt_config_secret_free(buf, CNT_SECRET_READ);
    return ok;
}
