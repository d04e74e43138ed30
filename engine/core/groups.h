/* groups.h: the server-defined groups (counter.group.NAME): counter names
 * whose maximum, default wait and default lease the server's settings give
 * rather than the client. Built once from the configuration, then only
 * read: every worker thread looks names up at once without a lock, which
 * is safe because nothing changes the set after it is built and a lookup
 * writes nothing. */
#ifndef CNT_ENGINE_GROUPS_H
#define CNT_ENGINE_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One group's settings. */
typedef struct cnt_group {
    uint32_t maximum;               /* >= 1: the counter's maximum */
    uint32_t wait_ms;               /* default wait; 0 = do not queue */
    uint32_t lease_ms;              /* default lease; 0 = no lease */
} cnt_group;

/* A set of groups keyed by name (any bytes). */
typedef struct cnt_groups cnt_groups;

/* Returns an empty set, or NULL when memory is short. */
cnt_groups *cnt_groups_new(void);

/* Frees the set and its names; g may be NULL. */
void cnt_groups_free(cnt_groups *g);

/* Returns a new set with the same groups as g (an empty one for NULL), or
 * NULL when memory is short. */
cnt_groups *cnt_groups_copy(const cnt_groups *g);

/* Adds the group name[0..len) with settings *v, or replaces the settings
 * of the group of that name; false (g unchanged) when memory is short. */
bool cnt_groups_set(cnt_groups *g, const uint8_t *name, uint16_t len,
                    const cnt_group *v);

/* Returns the settings of the group name[0..len), or NULL when there is
 * none or g is NULL. O(log n); reads only, so any number of threads may
 * call it at once on a set nobody changes any more. */
const cnt_group *cnt_groups_find(const cnt_groups *g, const uint8_t *name,
                                 uint16_t len);

/* Returns how many groups g holds (0 for NULL). */
size_t cnt_groups_count(const cnt_groups *g);

/* Returns the settings of group number i (0 <= i < count, in byte order
 * of the names, shorter first on a common prefix) and sets *name and *len
 * to its name; NULL when i is out of range. For logging and tests. */
const cnt_group *cnt_groups_at(const cnt_groups *g, size_t i,
                               const uint8_t **name, uint16_t *len);

#endif
