/* proto_helpers.h: helpers shared by the protocol unit tests (test_wire,
 * test_request, test_response): hex fixtures, byte comparison, a runner of
 * one cmocka test per table row, and encoders only the tests need (the
 * server and clients have no use for them, so they stay out of the
 * library). Include after <cmocka.h>. */
#ifndef CNT_TESTS_PROTO_HELPERS_H
#define CNT_TESTS_PROTO_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

/* The largest hex fixture, in bytes. */
#define FIXTURE_MAX 256

/* Converts a hex fixture (spaces allowed) into bytes; returns the count. */
size_t hex_to_bytes(const char *hex, uint8_t *out, size_t cap);

/* Returns a heap copy of a hex fixture, exactly as long as its bytes, so
 * that a read past the end shows up under valgrind or ASan. */
uint8_t *hex_dup(const char *hex, size_t *len);

/* Compares an encoder's output with a hex fixture. */
void assert_bytes_hex(const uint8_t *got, size_t got_len, const char *hex);

/* Runs one test function over every row of a table, one named test per
 * row: the name is the const char * found what_offset bytes into a row,
 * the row itself is the test's state. Returns the number of failures. */
int run_rows(const char *group, CMUnitTestFunction fn, const void *rows,
             size_t row_size, size_t n_rows, size_t what_offset);

/* Writes the status-0, empty-body response that ends a Dump series. */
size_t proto_encode_dump_end(uint8_t *out, uint32_t opaque);

/* Room a Stats pair with a decimal u64 value needs at most (20 digits). */
#define PROTO_STATS_U64_PAIR_SIZE(name_len) (4 + (size_t)(name_len) + 20)

/* Writes one Stats pair whose value is v in decimal ASCII and returns its
 * size; with out NULL only returns the size. */
size_t proto_encode_stats_u64(uint8_t *out, const char *name, uint64_t value);

#endif
