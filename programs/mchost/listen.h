/* listen.h: mchost's memcache listening sockets (-l, -p), the connection
 * limit (-c) and the accept back-off when file descriptors run out. */
#ifndef MCH_LISTEN_H
#define MCH_LISTEN_H

struct event_base;

/* Binds and listens on every address of the comma-separated list at
 * port (0 = the kernel picks); 0 or -1 (logged). Not accepting yet. */
int mch_listen_open(struct event_base *base, const char *addresses,
                    int port);

/* The port of the first listening socket (useful with port 0). */
int mch_listen_port(void);

/* Fires ON_CONNECT for each listening socket (main thread, before any
 * client is accepted), then starts accepting. */
void mch_listen_start(void);

/* Closes every listening socket. */
void mch_listen_close(void);

#endif /* MCH_LISTEN_H */
