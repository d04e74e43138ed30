/* ketama_map.c: `ketama_map LIST` reads names from stdin, one per line
 * (the line end not part of the name), and prints the HOST:PORT of the
 * server of LIST ("HOST:PORT[:WEIGHT],...") each maps to, one per line.
 * Other clients' tests and t/35-servers.t check their placement against
 * it. `ketama_map -l LIST` reads get_lease identities instead, one per
 * line as USER<TAB>DOMAIN<TAB>OP, and prints the name mcc_get_lease_name
 * makes of each, in hex, a tab and its server. Exit status: 0, 2 for a
 * bad LIST or line, 1 on a read or write error. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ketama.h"
#include "client/mccounter.h"
#include "client/servers.h"

/* Most servers a list may name here. */
#define MAP_SERVERS_MAX 1024

/* Prints the name of one USER<TAB>DOMAIN<TAB>OP line and its server. */
static int map_lease(mcc_ketama *k, const mcc_server_spec *servers,
                     char *line, size_t len)
{
    static char name[MCC_NAME_MAX];
    char text[MCC_SERVER_TEXT_MAX];
    char *tab1, *tab2;
    int n;

    line[len] = '\0';
    tab1 = strchr(line, '\t');
    tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
    if (!tab2) {
        fprintf(stderr, "ketama_map: line without two tabs: %s\n", line);
        return 2;
    }
    *tab1 = *tab2 = '\0';
    n = mcc_get_lease_name(name, sizeof name, line, tab1 + 1, tab2 + 1);
    if (n < 0) {
        fprintf(stderr, "ketama_map: %s: %s\n", line, mcc_strerror(n));
        return 2;
    }
    for (int i = 0; i < n; i++)
        printf("%02x", (unsigned char)name[i]);
    printf("\t%s\n", mcc_server_format(&servers[mcc_ketama_lookup(k, name,
                                                                  (size_t)n)],
                                        text, sizeof text));
    return 0;
}

int main(int argc, char **argv)
{
    static mcc_server_spec servers[MAP_SERVERS_MAX];
    char err[512], text[MCC_SERVER_TEXT_MAX];
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    mcc_ketama *k;
    bool leases = argc == 3 && strcmp(argv[1], "-l") == 0;
    int n, rc = 0;

    if (argc != 2 && !leases) {
        fprintf(stderr, "usage: ketama_map [-l] HOST:PORT[:WEIGHT],... "
                "< names\n");
        return 2;
    }
    n = mcc_servers_parse(argv[argc - 1], servers, MAP_SERVERS_MAX, err, sizeof err);
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
        if (leases) {
            rc = map_lease(k, servers, line, (size_t)len);
            if (rc != 0)
                break;
            continue;
        }
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
