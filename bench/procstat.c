/* procstat.c: reads a server's CPU time and RSS from /proc for the
 * benchmark report. The stat line is parsed after the last ')' because the
 * command name in parentheses may itself contain spaces or parentheses. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/procstat.h"

/* Opens /proc/PID/WHAT for reading; NULL when the process is gone. */
static FILE *procstat_open(pid_t pid, const char *what)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, what);
    return fopen(path, "r");
}

bool cnt_procstat_cpu(pid_t pid, double *seconds)
{
    char line[1024];
    FILE *f = procstat_open(pid, "stat");
    if (f == NULL)
        return false;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    char *p = strrchr(line, ')');
    if (p == NULL)
        return false;
    /* After ") " come field 3 (state) .. ; utime and stime are fields 14
     * and 15, i.e. the 12th and 13th tokens after the parenthesis. */
    unsigned long long utime = 0, stime = 0;
    char *save = NULL;
    char *tok = strtok_r(p + 1, " ", &save);
    for (int field = 3; tok != NULL && field <= 15; field++) {
        if (field == 14)
            utime = strtoull(tok, NULL, 10);
        else if (field == 15)
            stime = strtoull(tok, NULL, 10);
        tok = strtok_r(NULL, " ", &save);
    }
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    *seconds = (double)(utime + stime) / (double)hz;
    return true;
}

bool cnt_procstat_rss(pid_t pid, uint64_t *kib)
{
    char line[256];
    FILE *f = procstat_open(pid, "status");
    if (f == NULL)
        return false;
    bool found = false;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            *kib = strtoull(line + 6, NULL, 10);
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}
