/* vbucket.h: memcached's virtual-bucket states. Unused here, but the real
 * engine.h declares these names in every file including it, so ours does
 * too and code built against our set cannot reuse them by accident. */
#ifndef MEMCACHED_VBUCKET_H
#define MEMCACHED_VBUCKET_H 1

#ifdef __cplusplus
extern "C" {
#endif

/* State of a vbucket; the values are part of the interface. */
typedef enum {
    active = 1,
    replica,
    pending,
    dead
} vbucket_state_t;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_VBUCKET_H */
