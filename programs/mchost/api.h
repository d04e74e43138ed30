/* api.h: the SERVER_HANDLE_V1 mchost gives to extensions, with its
 * extension registry (daemons, logger) and event callbacks. */
#ifndef MCH_API_H
#define MCH_API_H

#include <memcached/engine.h>

/* The GET_SERVER_API function: always the same static handle. */
SERVER_HANDLE_V1 *mch_api_get(void);

/* Publishes the engine handle (NULL until the engine exists). */
void mch_api_set_engine(ENGINE_HANDLE *engine);

/* Fires every callback registered for type (SERVER_CALLBACK_API). */
void mch_api_perform_callbacks(ENGINE_EVENT_TYPE type, const void *data,
                               const void *cookie);

/* Calls fn with the name of each registered daemon extension. */
void mch_api_foreach_daemon(void (*fn)(const char *name, void *arg),
                            void *arg);

#endif /* MCH_API_H */
