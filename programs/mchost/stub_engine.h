/* stub_engine.h: mchost's engine: stores nothing, answers the general
 * `stats` with no lines and every other call with "not supported".
 * Extensions may wrap its get_stats (doc/host-interface.md). */
#ifndef MCH_STUB_ENGINE_H
#define MCH_STUB_ENGINE_H

#include <memcached/engine.h>

/* The engine handle (ENGINE_HANDLE_V1, interface 1); one per process. */
ENGINE_HANDLE *mch_engine_get(void);

/* The handle viewed as version 1, for calling its members. */
ENGINE_HANDLE_V1 *mch_engine_v1(void);

#endif /* MCH_STUB_ENGINE_H */
