/* ketama_map.c: `ketama_map LIST` reads names from stdin, one per line
 * (the line end not part of the name), and prints the HOST:PORT of the
 * server of LIST ("HOST:PORT[:WEIGHT],...") each maps to, one per line.
 * Other clients' tests and t/35-servers.t check their placement against
 * it. Exit status: 0, 2 for a bad LIST, 1 on a read or write error. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ketama.h"
#include "client/servers.h"

/* Most servers a list may name here. */
#define MAP_SERVERS_MAX 1024

int main(int argc, char **argv)
{
    static mcc_server_spec servers[MAP_SERVERS_MAX];
    char err[512], text[MCC_SERVER_TEXT_MAX];
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    mcc_ketama *k;
    int n, rc = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: ketama_map HOST:PORT[:WEIGHT],... < names\n");
        return 2;
    }
    n = mcc_servers_parse(argv[1], servers, MAP_SERVERS_MAX, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "ketama_map: %s\n", err);
        return 2;
    }
    k = mcc_ketama_new(servers, (size_t)n);
    if (k == NULL) {
        fprintf(stderr, "ketama_map: out of memory\n");
        return 1;
    }
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            len--;
        puts(mcc_server_format(&servers[mcc_ketama_lookup(k, line,
                                                          (size_t)len)],
                               text, sizeof text));
    }
    if (ferror(stdin)) {
        perror("ketama_map: stdin");
        rc = 1;
    }
    if (fflush(stdout) != 0) {
        perror("ketama_map: stdout");
        rc = 1;
    }
    free(line);
    mcc_ketama_free(k);
    return rc;
}
