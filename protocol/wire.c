/* wire.c: the protocol's tables. The status texts are part of the wire
 * contract: clients compare them byte for byte, so they live in one place
 * and carry no trailing NUL on the wire. The opcode table describes each
 * request body once, for the decoder and for printable names; the TTL
 * opcodes' time units and the throttle reasons get printable names too.
 * The time units' table is the project's only one: every length of a unit
 * and every conversion to nanoseconds comes from it. */
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
    case CNT_STATUS_EXCEEDS_MAXIMUM:
        return "Exceeds maximum";
    case CNT_STATUS_ALREADY_ACTIVE:
        return "Already active";
    case CNT_STATUS_UNKNOWN_GROUP:
        return "Unknown group";
    case CNT_STATUS_TOO_MANY_WAITS:
        return "Too many waits";
    case CNT_STATUS_LEASE_EXPIRED:
        return "Lease expired";
    case CNT_STATUS_EXISTS:
        return "Exists";
    case CNT_STATUS_BELOW_ZERO:
        return "Below zero";
    case CNT_STATUS_NOT_PERMITTED:
        return "Not permitted";
    case CNT_STATUS_AUTH_FAILED:
        return "Auth failed";
    case CNT_STATUS_OVER_CAPACITY:
        return "Over capacity";
    case CNT_STATUS_THROTTLED:
        return "Throttled";
    case CNT_STATUS_UNKNOWN_COMMAND:
        return "Unknown command";
    case CNT_STATUS_OUT_OF_MEMORY:
        return "Out of memory";
    }
    /* A value outside the enum (a status byte read off the wire). */
    return NULL;
}

/* The time units, indexed by their code: length and printable name. */
static const struct {
    uint64_t ns;
    const char *name;
} time_units[CNT_UNIT_MAX + 1] = {
    [CNT_UNIT_NS] = { 1, "ns" },
    [CNT_UNIT_US] = { 1000, "us" },
    [CNT_UNIT_MS] = { 1000000, "ms" },
    [CNT_UNIT_S] = { 1000000000, "s" },
    [CNT_UNIT_MIN] = { 60ull * 1000000000, "min" },
    [CNT_UNIT_H] = { 3600ull * 1000000000, "h" },
};

/* Returns how many nanoseconds one of a time unit lasts, 0 if unknown. */
uint64_t cnt_unit_ns(uint8_t unit)
{
    return unit <= CNT_UNIT_MAX ? time_units[unit].ns : 0;
}

/* Returns a time unit's short name, NULL if unknown. */
const char *cnt_unit_name(uint8_t unit)
{
    return unit <= CNT_UNIT_MAX ? time_units[unit].name : NULL;
}

/* value units in nanoseconds; false when the unit is unknown or the
 * product passes 64 bits. */
bool cnt_unit_to_ns(uint64_t value, uint8_t unit, uint64_t *ns)
{
    uint64_t r;

    if (unit > CNT_UNIT_MAX || __builtin_mul_overflow(value,
                                                      time_units[unit].ns,
                                                      &r))
        return false;
    *ns = r;
    return true;
}

/* The throttle reasons, indexed by their code. */
static const char *const treason_names[CNT_TREASON_MAX + 1] = {
    [CNT_TREASON_NONE] = "none",
    [CNT_TREASON_RESERVE] = "reserve",
    [CNT_TREASON_POOL_EMPTY] = "pool_empty",
    [CNT_TREASON_HARD_LIMIT] = "hard_limit",
};

/* Returns a throttle reason's short name, NULL if unknown. */
const char *cnt_treason_name(uint8_t reason)
{
    return reason <= CNT_TREASON_MAX ? treason_names[reason] : NULL;
}

/* One entry of cnt_opcode_table per row of CNT_OPCODE_ROWS; a code listed
 * twice is an error (-Woverride-init, part of -Wextra). */
#define TABLE_ENTRY(id, ...) [CNT_OP_##id] = { __VA_ARGS__ },

/* Indexed by the opcode byte; rows left out are zero: unknown opcodes. */
const cnt_opcode_row cnt_opcode_table[256] = {
    CNT_OPCODE_ROWS(TABLE_ENTRY)
};

/* Returns a short printable name for an opcode, NULL if unknown. */
const char *cnt_opcode_name(uint8_t opcode)
{
    return cnt_opcode_table[opcode].name;
}
