/* settings.h: mchost's settings, filled from the command line and read by
 * stats, get_config and start-up. Written only while options are parsed
 * (single-threaded); read-only afterwards. */
#ifndef MCH_SETTINGS_H
#define MCH_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

/* Everything the command line sets (verbosity lives in logger.c). */
struct mch_settings {
    int port;              /* memcache text port, 0 = kernel picks */
    int udpport;           /* accepted for compatibility, never opened */
    const char *listen;    /* comma-separated listen addresses */
    int maxconns;          /* memcache connections at once */
    int threads;           /* worker threads */
    size_t maxbytes;       /* -m, only reported */
    bool daemonize;        /* -d */
    const char *pidfile;   /* -P */
    const char *portfile;  /* -F */
    const char *user;      /* -u */
};

extern struct mch_settings mch_settings;

/* Resets mch_settings to the defaults. */
void mch_settings_init(void);

#endif /* MCH_SETTINGS_H */
