/* servers.h: server lists as users write them, "HOST:PORT[:WEIGHT],...",
 * parsed into the specs that ketama (client/ketama.h) places names on and
 * that clients connect to. */
#ifndef MCC_CLIENT_SERVERS_H
#define MCC_CLIENT_SERVERS_H

#include <stddef.h>
#include <stdint.h>

/* One server of a list: host as written (an IPv6 address without its
 * brackets), port, and its weight in the ketama placement (1 unless
 * given). */
typedef struct mcc_server_spec {
    char host[256];
    uint16_t port;
    uint32_t weight;
} mcc_server_spec;

/* Room mcc_server_format needs: "[", the longest host, "]:", a port. */
#define MCC_SERVER_TEXT_MAX (sizeof ((mcc_server_spec *)0)->host + 9)

/* Parses "HOST:PORT[:WEIGHT],..." (IPv6 as [addr]:port[:w]); weight default 1;
 * returns count (>=1) or -1 with a message naming the bad item in err[0..errlen). */
int mcc_servers_parse(const char *list, mcc_server_spec *out, size_t max,
                      char *err, size_t errlen);

/* Writes s as "HOST:PORT" ("[ADDR]:PORT" for an IPv6 address) into buf of
 * len bytes (MCC_SERVER_TEXT_MAX is always enough); returns buf. */
char *mcc_server_format(const mcc_server_spec *s, char *buf, size_t len);

#endif
