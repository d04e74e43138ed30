/* wire.c: the protocol's name tables. The status texts are part of the wire
 * contract: clients compare them byte for byte, so they live in one place
 * and carry no trailing NUL on the wire. */
#include "config.h"

#include "protocol/wire.h"

/* Returns the exact error body text for a status ("" for OK). */
const char *cnt_status_text(cnt_status status)
{
    switch (status) {
    case CNT_STATUS_OK:
        return "";
    case CNT_STATUS_NOT_FOUND:
        return "Not found";
    case CNT_STATUS_INVALID:
        return "Invalid arguments";
    case CNT_STATUS_RESOURCE_NOT_AVAILABLE:
        return "Resource not available";
    case CNT_STATUS_NOT_ACQUIRED:
        return "Not acquired";
    case CNT_STATUS_UNKNOWN_COMMAND:
        return "Unknown command";
    case CNT_STATUS_OUT_OF_MEMORY:
        return "Out of memory";
    }
    /* A value outside the enum (a status byte read off the wire). */
    return NULL;
}

/* Returns a short printable name for an opcode, NULL if unknown. */
const char *cnt_opcode_name(uint8_t opcode)
{
    switch (opcode) {
    case CNT_OP_NOOP:
        return "noop";
    case CNT_OP_GET:
        return "get";
    case CNT_OP_ACQUIRE:
        return "acquire";
    case CNT_OP_RELEASE:
        return "release";
    case CNT_OP_STATS:
        return "stats";
    case CNT_OP_DUMP:
        return "dump";
    default:
        return NULL;
    }
}
