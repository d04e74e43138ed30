/* test_config_keys.c: unit tests of the table of configuration keys
 * (engine/glue/configuration.c): every row is documented in
 * doc/configuration.md with the default the row gives, every key the
 * doc's tables list has a row, the default a row shows is the one the
 * layers set, and each row's bounds fit the field it stores into. So a
 * key cannot be added, renamed or given another default without its doc. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/glue/config_int.h"

/* The doc's lines, read once. */
static char **doc_lines;
static size_t doc_nlines;

static int doc_setup(void **state)
{
    (void)state;
    FILE *f = fopen(CONFIG_DOC, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", CONFIG_DOC);
        return -1;
    }
    char buf[8192];
    size_t cap = 0;
    while (fgets(buf, sizeof(buf), f) != NULL) {
        buf[strcspn(buf, "\n")] = '\0';
        if (doc_nlines == cap) {
            cap = cap == 0 ? 512 : cap * 2;
            char **l = realloc(doc_lines, cap * sizeof(*l));
            if (l == NULL)
                return -1;
            doc_lines = l;
        }
        doc_lines[doc_nlines] = strdup(buf);
        if (doc_lines[doc_nlines] == NULL)
            return -1;
        doc_nlines++;
    }
    fclose(f);
    return 0;
}

static int doc_teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < doc_nlines; i++)
        free(doc_lines[i]);
    free(doc_lines);
    doc_lines = NULL;
    doc_nlines = 0;
    return 0;
}

/* The lines [*first, *end) of the doc's section "## title". */
static void doc_section(const char *title, size_t *first, size_t *end)
{
    size_t i = 0;
    for (; i < doc_nlines; i++)
        if (strncmp(doc_lines[i], "## ", 3) == 0 &&
            strcmp(doc_lines[i] + 3, title) == 0)
            break;
    if (i == doc_nlines)
        fail_msg("doc/configuration.md has no section \"## %s\"", title);
    *first = ++i;
    while (i < doc_nlines && strncmp(doc_lines[i], "## ", 3) != 0)
        i++;
    *end = i;
}

/* The key a table line of the doc names ("| `KEY` | ..."), into out;
 * false for other lines. */
static bool doc_row_key(const char *line, char *out, size_t outlen)
{
    if (strncmp(line, "| `", 3) != 0)
        return false;
    const char *k = line + 3;
    size_t n = strcspn(k, "`");
    if (k[n] != '`' || n >= outlen)
        return false;
    memcpy(out, k, n);
    out[n] = '\0';
    return true;
}

/* The doc's cell `col` (0: the key) of a table line, without backquotes
 * and the white space around it, into out. */
static void doc_cell(const char *line, unsigned col, char *out, size_t outlen)
{
    const char *p = line;
    for (unsigned c = 0; c <= col; c++) {
        p = strchr(p, '|');
        assert_non_null(p);
        p++;
    }
    size_t n = 0;
    for (; *p != '\0' && *p != '|' && n + 1 < outlen; p++)
        if (*p != '`')
            out[n++] = *p;
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
    size_t lead = strspn(out, " ");
    memmove(out, out + lead, n - lead + 1);
}

/* How the doc writes a row's key: a prefix key takes a NAME. */
static void row_doc_name(const cnt_config_key *k, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s", k->name, k->prefix ? "NAME" : "");
}

/* Every row is in its doc section's table, with the default it shows. */
static void test_rows_documented(void **state)
{
    (void)state;
    for (size_t r = 0; r < cnt_config_nkeys; r++) {
        const cnt_config_key *k = &cnt_config_keys[r];
        char want[128], key[128], cell[512];
        row_doc_name(k, want, sizeof(want));
        assert_non_null(k->doc);
        size_t first, end, i;
        doc_section(k->doc, &first, &end);
        for (i = first; i < end; i++)
            if (doc_row_key(doc_lines[i], key, sizeof(key)) &&
                strcmp(key, want) == 0)
                break;
        if (i == end)
            fail_msg("key %s is not in the table of \"## %s\" in "
                     "doc/configuration.md", want, k->doc);
        if (k->dflt == NULL)
            continue;
        doc_cell(doc_lines[i], 1, cell, sizeof(cell));
        if (strcmp(cell, k->dflt) != 0)
            fail_msg("key %s: the doc's default is \"%s\", the table's "
                     "\"%s\"", want, cell, k->dflt);
    }
}

/* Every key the doc's tables list has its row. */
static void test_doc_keys_have_rows(void **state)
{
    (void)state;
    static const struct {
        const char *section;
        cnt_config_source source;
        size_t least;           /* keys the section lists at least */
    } sections[] = {
        {"Keys", CNT_CONFIG_SETTINGS, 20},
        {"Throttle settings", CNT_CONFIG_THROTTLE_FILE, 3},
    };
    for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
        size_t first, end, found = 0;
        doc_section(sections[s].section, &first, &end);
        for (size_t i = first; i < end; i++) {
            char key[128], name[128];
            if (!doc_row_key(doc_lines[i], key, sizeof(key)))
                continue;
            found++;
            const cnt_config_key *k =
                cnt_config_key_find(sections[s].source, key);
            if (k == NULL)
                fail_msg("doc/configuration.md lists %s under \"## %s\", "
                         "the table of keys has no row for it", key,
                         sections[s].section);
            row_doc_name(k, name, sizeof(name));
            if (strcmp(name, key) != 0)
                fail_msg("doc/configuration.md lists %s, the table's row "
                         "is %s", key, name);
        }
        /* The doc's table was found at all (its format is what the
         * lookup expects). */
        assert_true(found >= sections[s].least);
    }
}

/* Each row is found by its own name, settings rows are counter.* keys,
 * and the bounds fit the field the row stores into. */
static void test_rows_consistent(void **state)
{
    (void)state;
    for (size_t r = 0; r < cnt_config_nkeys; r++) {
        const cnt_config_key *k = &cnt_config_keys[r];
        char name[128];
        snprintf(name, sizeof(name), "%s%s", k->name, k->prefix ? "x" : "");
        assert_ptr_equal(cnt_config_key_find(k->source, name), k);
        assert_non_null(k->parse);
        if (k->source == CNT_CONFIG_SETTINGS)
            assert_memory_equal(k->name, "counter.", 8);
        assert_true(k->at + k->size <= sizeof(cnt_config));
        if (k->parse == cnt_config_key_number) {
            assert_true(k->size >= 1 && k->size <= 8);
            assert_true(k->min <= k->max);
            if (k->size < 8)
                assert_true(k->max < (UINT64_C(1) << (8 * k->size)));
        }
        if (k->parse == cnt_config_key_duration) {
            assert_non_null(k->span);
            assert_true(k->size >= 1 && k->size <= 8);
            if (k->size < 8)
                assert_true(k->span->max < (UINT64_C(1) << (8 * k->size)));
        }
        if (k->parse == cnt_config_key_bool)
            assert_int_equal(k->size, sizeof(bool));
    }
}

/* A default the table shows as a value is what the layers set: parsing
 * it gives the field the bytes cnt_config_defaults gives it. The others
 * are words ("none", "online CPUs, at most 4"), which do not parse. */
static void test_defaults_true(void **state)
{
    (void)state;
    for (size_t r = 0; r < cnt_config_nkeys; r++) {
        const cnt_config_key *k = &cnt_config_keys[r];
        if (k->source != CNT_CONFIG_SETTINGS || k->dflt == NULL)
            continue;
        char setting[256], err[256];
        snprintf(setting, sizeof(setting), "%s%s=%s", k->name,
                 k->prefix ? "NAME" : "", k->dflt);
        cnt_config d, c;
        cnt_config_defaults(&d);
        cnt_config_defaults(&c);
        /* A number's or boolean's field starts elsewhere, so the parse
         * must write it (pointers stay: the configuration owns them). */
        if (k->parse == cnt_config_key_number ||
            k->parse == cnt_config_key_bool ||
            k->parse == cnt_config_key_bytes ||
            k->parse == cnt_config_key_duration ||
            k->parse == cnt_config_key_value_size)
            memset((unsigned char *)&c + k->at, 0x5a, k->size);
        bool ok = cnt_config_parse_string(&c, setting, err, sizeof(err));
        if (ok) {
            if (k->size == 0 ||
                memcmp((unsigned char *)&c + k->at,
                       (unsigned char *)&d + k->at, k->size) != 0)
                fail_msg("%s: the documented default is not the layer's",
                         setting);
        } else if (strcmp(k->dflt, "none") != 0 &&
                   strchr(k->dflt, ' ') == NULL) {
            fail_msg("%s: the documented default does not parse: %s",
                     setting, err);
        }
        cnt_config_free(&c);
        cnt_config_free(&d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_documented),
        cmocka_unit_test(test_doc_keys_have_rows),
        cmocka_unit_test(test_rows_consistent),
        cmocka_unit_test(test_defaults_true),
    };
    return cmocka_run_group_tests(tests, doc_setup, doc_teardown);
}
