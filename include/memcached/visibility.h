/* visibility.h: MEMCACHED_PUBLIC_API, the attribute that keeps a symbol
 * exported from a library built with -fvisibility=hidden (an extension's
 * entry point, for one). Same name and meaning as in memcached's set. */
#ifndef MEMCACHED_VISIBILITY_H
#define MEMCACHED_VISIBILITY_H 1

#if defined(__GNUC__)
#define MEMCACHED_PUBLIC_API __attribute__((visibility("default")))
#else
#define MEMCACHED_PUBLIC_API
#endif

#endif /* MEMCACHED_VISIBILITY_H */
