/* replay.c: main() for the fuzz targets where libFuzzer is absent (gcc,
 * valgrind): replays the committed corpus as a regression test. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz.h"

#ifndef CNT_FUZZ_TARGET
#error "CNT_FUZZ_TARGET must name the corpus directory"
#endif

/* Every file under fuzz/corpus/<target>/ -- seeds and inputs that once found
 * bugs -- goes through LLVMFuzzerTestOneInput, so `make check` keeps them. */

/* Runs one file; returns 0, or -1 if it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0, n;
    uint8_t *buf = malloc(cap);
    while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

/* Runs a file, or every regular file of a directory; returns the count run
 * or -1 on a read error. */
static long replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) == 0 ? 1 : -1;
    DIR *d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    long count = 0;
    struct dirent *e;
    while (count >= 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        count = replay_file(sub) == 0 ? count + 1 : -1;
    }
    closedir(d);
    return count;
}

/* Replays the arguments, or the target's corpus under $srcdir. */
int main(int argc, char **argv)
{
    long total = 0;
    if (argc > 1) {
        for (int i = 1; i < argc && total >= 0; i++) {
            long n = replay_path(argv[i]);
            total = n < 0 ? -1 : total + n;
        }
    } else {
        const char *srcdir = getenv("srcdir");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s",
                 srcdir != NULL ? srcdir : ".", CNT_FUZZ_TARGET);
        total = replay_path(dir);
    }
    if (total <= 0) {
        fprintf(stderr, "replay: no input replayed\n");
        return 1;
    }
    printf("%s: %ld inputs replayed, all invariants held\n", CNT_FUZZ_TARGET,
           total);
    return 0;
}
