/* throttr.h: the codec of the Throttr v5 binary protocol, the second
 * front the server offers beside the counter protocol: four request types
 * (insert, query, update, purge) whose numbers take a "dynamic value
 * size" of 1, 2, 4 or 8 bytes, little-endian, fixed per listener, and
 * answers of one status byte (a query's success adds the record). Pure
 * functions: no I/O, no allocation. The server front (engine/server/
 * session_throttr.c) decodes with it, clients and tests encode with it. */
#ifndef CNT_PROTOCOL_THROTTR_H
#define CNT_PROTOCOL_THROTTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Request types: the first byte of every request. */
enum cnt_throttr_type {
    CNT_THROTTR_INSERT = 0x01,
    CNT_THROTTR_QUERY  = 0x02,
    CNT_THROTTR_UPDATE = 0x03,
    CNT_THROTTR_PURGE  = 0x04
};

/* The status byte every answer starts with. */
#define CNT_THROTTR_FAILURE 0x00u
#define CNT_THROTTR_SUCCESS 0x01u

/* TTL types (0x01 ns ... 0x06 h); the core's units are these minus one. */
#define CNT_THROTTR_TTL_NS  0x01u
#define CNT_THROTTR_TTL_H   0x06u

/* UPDATE's attribute and change bytes. */
#define CNT_THROTTR_ATTR_QUOTA 0x00u
#define CNT_THROTTR_ATTR_TTL   0x01u
#define CNT_THROTTR_PATCH      0x00u
#define CNT_THROTTR_INCREASE   0x01u
#define CNT_THROTTR_DECREASE   0x02u

/* The largest request (an INSERT with 8-byte values and a 255-byte key)
 * and the largest answer (a QUERY's success with 8-byte values). */
#define CNT_THROTTR_KEY_MAX 255u
#define CNT_THROTTR_REQUEST_MAX (1u + 8u + 1u + 8u + 1u + CNT_THROTTR_KEY_MAX)
#define CNT_THROTTR_ANSWER_MAX (1u + 8u + 1u + 8u)

/* Whether n is a value size the protocol defines (1, 2, 4 or 8). */
static inline bool cnt_throttr_value_size_ok(unsigned n)
{
    return n == 1 || n == 2 || n == 4 || n == 8;
}

/* Whether v fits in n bytes. */
static inline bool cnt_throttr_fits(unsigned n, uint64_t v)
{
    return n >= 8 || v < ((uint64_t)1 << (8 * n));
}

/* The core's TTL unit (0 ns ... 5 h) of a TTL type, or -1 if unknown. */
static inline int cnt_throttr_unit_of(uint8_t ttl_type)
{
    return ttl_type >= CNT_THROTTR_TTL_NS && ttl_type <= CNT_THROTTR_TTL_H
               ? (int)ttl_type - 1 : -1;
}

/* The TTL type of a core unit (0..5). */
static inline uint8_t cnt_throttr_type_of_unit(uint8_t unit)
{
    return (uint8_t)(unit + 1);
}

/* One decoded request. key points into the decoded buffer. valid is false
 * for a request that is framed but cannot succeed (a key length of 0, an
 * unknown TTL type, attribute or change): it is answered with the failure
 * byte and the connection goes on. */
typedef struct cnt_throttr_request {
    uint8_t type;
    bool valid;
    uint8_t ttl_type;           /* INSERT */
    uint8_t attribute, change;  /* UPDATE */
    uint64_t quota, ttl;        /* INSERT */
    uint64_t value;             /* UPDATE */
    uint8_t key_len;
    const uint8_t *key;
    size_t size;                /* bytes the request took */
} cnt_throttr_request;

typedef enum cnt_throttr_decode_result {
    CNT_THROTTR_NEED_MORE,      /* incomplete; *need says how many bytes
                                   the buffer must hold at least */
    CNT_THROTTR_OK,             /* *req is filled */
    CNT_THROTTR_BAD_FRAMING     /* unknown request type: nothing after it
                                   can be framed */
} cnt_throttr_decode_result;

/* Decodes the request at the front of in[0..len) with values of vsize
 * bytes (1, 2, 4 or 8). */
cnt_throttr_decode_result cnt_throttr_decode(const uint8_t *in, size_t len,
                                             unsigned vsize,
                                             cnt_throttr_request *req,
                                             size_t *need);

/* Answer encoders; each returns the bytes written at p. */

/* A status byte (INSERT, UPDATE, PURGE and a QUERY's failure). */
size_t cnt_throttr_encode_status(uint8_t *p, bool success);

/* A QUERY's success: status, quota, TTL type, TTL left; the failure byte
 * alone when quota or ttl does not fit in vsize bytes (the only honest
 * answer a client of that size can read). */
size_t cnt_throttr_encode_query_answer(uint8_t *p, unsigned vsize,
                                       uint64_t quota, uint8_t ttl_type,
                                       uint64_t ttl);

/* Request encoders (clients, tests, the benchmark); each returns the bytes
 * written at p (at most CNT_THROTTR_REQUEST_MAX), or 0 when a value does
 * not fit in vsize bytes or the key is longer than 255 bytes. Nothing
 * checks the TTL type, attribute or change: tests send wrong ones. */
size_t cnt_throttr_encode_insert(uint8_t *p, unsigned vsize, uint64_t quota,
                                 uint8_t ttl_type, uint64_t ttl,
                                 const void *key, size_t key_len);
size_t cnt_throttr_encode_query(uint8_t *p, const void *key, size_t key_len);
size_t cnt_throttr_encode_update(uint8_t *p, unsigned vsize,
                                 uint8_t attribute, uint8_t change,
                                 uint64_t value, const void *key,
                                 size_t key_len);
size_t cnt_throttr_encode_purge(uint8_t *p, const void *key, size_t key_len);

/* Reads the answer at the front of in[0..len) to a request of type:
 * NEED_MORE (with *need), or OK with *success and, for a QUERY's success,
 * *quota, *ttl_type and *ttl; *size is the answer's length. */
cnt_throttr_decode_result cnt_throttr_decode_answer(const uint8_t *in,
                                                    size_t len,
                                                    unsigned vsize,
                                                    uint8_t type,
                                                    bool *success,
                                                    uint64_t *quota,
                                                    uint8_t *ttl_type,
                                                    uint64_t *ttl,
                                                    size_t *size,
                                                    size_t *need);

#endif
