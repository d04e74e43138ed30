/* fuzz_config.c: libFuzzer target for the configuration parser (the -X
 * string and the file format): no crash or leak, clear errors, sane results. */
#include "config.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "engine/configuration.h"

/* A failure must leave the settings untouched and write a message that
 * starts "counter:"; a success must leave every setting in its range. */

/* Checks the settings a successful parse produced. */
static void check_ranges(const cnt_config *c)
{
    FUZZ_CHECK(c->nbinds >= 1 && c->nbinds <= CNT_CONFIG_MAX_BINDS);
    for (unsigned i = 0; i < c->nbinds; i++) {
        uint8_t a[sizeof(struct in6_addr)];
        FUZZ_CHECK(memchr(c->binds[i], '\0', CNT_CONFIG_ADDR_MAX) != NULL);
        FUZZ_CHECK(inet_pton(AF_INET, c->binds[i], a) == 1 ||
                   inet_pton(AF_INET6, c->binds[i], a) == 1);
    }
    FUZZ_CHECK(c->buckets >= 1);
    FUZZ_CHECK(c->interval >= 1);
    FUZZ_CHECK(c->threads >= 1);
}

/* True when an error message says which setting is wrong: the key, or the
 * kind of problem for messages about no particular key. */
static bool names_setting(const char *err)
{
    static const char *const marks[] = {
        "counter.", "malformed setting", "unknown key", "cannot read file",
        "out of memory",
    };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(err, marks[i]) != NULL)
            return true;
    return false;
}

/* Checks one parse's outcome against the state before it. */
static void check_outcome(bool ok, const cnt_config *before,
                          const cnt_config *after, const char *err,
                          size_t errlen)
{
    if (ok) {
        check_ranges(after);
        return;
    }
    /* A failed parse changes nothing and says why, in one terminated line
     * that names the setting ("counter: ..."). */
    FUZZ_CHECK(memcmp(before, after, sizeof *before) == 0);
    FUZZ_CHECK(memchr(err, '\0', errlen) != NULL);
    FUZZ_CHECK(strncmp(err, "counter:", errlen < 8 ? errlen - 1 : 8) == 0);
    FUZZ_CHECK(errlen < 10 || strlen(err) > strlen("counter: "));
    /* Messages print the value before the key, so a value longer than the
     * buffer pushes the key out (found by this target, 2026-11-22). */
    if (errlen >= 256)
        FUZZ_TODO(names_setting(err),
                  "a long value hides the key in configuration errors");
}

/* Parses the input as a -X string, with a roomy and a tiny error buffer. */
static void fuzz_string(const char *s)
{
    /* counter.config opens whatever path it names (/dev/zero included):
     * the file format is fuzzed through fuzz_file instead. */
    if (strstr(s, "counter.config") != NULL)
        return;
    static const size_t lens[] = { 256, 12 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        cnt_config before, c;
        char err[256];
        memset(err, 'x', sizeof err);
        cnt_config_defaults(&c);
        before = c;
        bool ok = cnt_config_parse_string(&c, s, err, lens[i]);
        check_outcome(ok, &before, &c, err, lens[i]);
    }
}

/* Parses the input as a configuration file (through a memfd). */
static void fuzz_file(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_config", 0);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, data, size) == (ssize_t)size);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    cnt_config before, c;
    char err[256];
    memset(err, 'x', sizeof err);
    cnt_config_defaults(&c);
    before = c;
    bool ok = cnt_config_parse_file(&c, path, err, sizeof err);
    check_outcome(ok, &before, &c, err, sizeof err);
    close(fd);
}

/* Input: a mode byte (even: -X string, odd: file), then the text. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    if (data[0] & 1) {
        fuzz_file(data + 1, size - 1);
        return 0;
    }
    char *s = malloc(size);
    FUZZ_CHECK(s != NULL);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    fuzz_string(s);
    free(s);
    return 0;
}
