/* settings.c: mchost's settings and their defaults (memcached's, except
 * that mchost listens on loopback unless told otherwise). */
#include "config.h"

#include "programs/mchost/settings.h"

struct mch_settings mch_settings = {
    .port = 11211,
    .listen = "127.0.0.1",
    .maxconns = 1024,
    .threads = 4,
    .maxbytes = 64 * 1024 * 1024,
};

/* Resets mch_settings to the defaults. */
void mch_settings_init(void)
{
    mch_settings = (struct mch_settings){
        .port = 11211,
        .udpport = 0,
        .listen = "127.0.0.1",
        .maxconns = 1024,
        .threads = 4,
        .maxbytes = 64 * 1024 * 1024,
    };
}
