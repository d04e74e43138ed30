/* servers.h: TEMPORARY STUB of the server-list parser (the ketama branch
 * provides the real one; the interface below is the agreed one). */
#ifndef MCC_SERVERS_H
#define MCC_SERVERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct mcc_server_spec { char host[256]; uint16_t port; uint32_t weight; } mcc_server_spec;
/* Parses "HOST:PORT[:WEIGHT],..." (IPv6 as [addr]:port[:w]); weight default 1;
   returns count (>=1) or -1 with a message naming the bad item in err[0..errlen). */
int mcc_servers_parse(const char *list, mcc_server_spec *out, size_t max, char *err, size_t errlen);

#endif
