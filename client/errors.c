/* errors.c: the texts of the client's error codes and of the wire
 * statuses (the latter from the protocol codec, so they match what the
 * server sends as an error body). */
#include "config.h"

#include "client/mccounter.h"
#include "protocol/wire.h"

/* Returns a short text for an MCC_* code. */
const char *mcc_strerror(mcc_error error)
{
    switch (error) {
    case MCC_OK: return "success";
    case MCC_ERR_INVALID: return "invalid argument";
    case MCC_ERR_NAME: return "name empty or longer than 65535 bytes";
    case MCC_ERR_RESOURCES: return "resources zero or above the maximum";
    case MCC_ERR_NOMEM: return "out of memory";
    case MCC_ERR_CONNECT: return "cannot connect to the server";
    case MCC_ERR_IO: return "connection lost";
    case MCC_ERR_TIMEOUT: return "timed out";
    case MCC_ERR_PROTOCOL: return "protocol error (the server's bytes make no sense)";
    case MCC_ERR_SERVER_DOWN: return "the name's server is down";
    case MCC_ERR_STATUS: return "the server refused the request";
    case MCC_ERR_CROSS_SERVER: return "multi-check items on different servers";
    case MCC_ERR_BUSY: return "too many requests queued (or called from a callback)";
    case MCC_ERR_AUTH: return "authentication refused";
    case MCC_ERR_MEMCACHE_PORT: return "this is a memcache port, not the counter port";
    default: return "unknown error";
    }
}

/* Returns the server's text for a wire status. */
const char *mcc_status_text(uint8_t status)
{
    const char *t = cnt_status_text((cnt_status)status);

    return t ? t : "Unknown status";
}
