/* users.c: looks users up by name and frees the list, wiping the secrets
 * it held (see users.h). */
#include "config.h"

#include "engine/core/users.h"

#include <stdlib.h>
#include <string.h>

/* The user called name, or NULL. Every user is compared, every byte,
 * without an early exit: how long a login takes does not tell which
 * names exist or how far one matched. */
const cnt_user *cnt_users_find(const cnt_users *u, const uint8_t *name,
                               size_t len)
{
    const cnt_user *found = NULL;

    if (u == NULL)
        return NULL;
    for (size_t i = 0; i < u->n; i++) {
        const cnt_user *v = &u->v[i];
        size_t n = v->name_len < len ? v->name_len : len;
        unsigned d = v->name_len != len;
        for (size_t j = 0; j < n; j++)
            d |= (unsigned)(v->name[j] ^ name[j]);
        if (d == 0 && found == NULL)
            found = v;
    }
    return found;
}

/* Overwrites n bytes with zeros; see users.h. */
void cnt_wipe(void *p, size_t n)
{
    volatile unsigned char *b = p;
    while (n-- > 0)
        *b++ = 0;
}

/* Wipes the secrets and frees everything. */
void cnt_users_free(cnt_users *u)
{
    if (u == NULL)
        return;
    for (size_t i = 0; i < u->n; i++) {
        free(u->v[i].name);
        free(u->v[i].tenant);
        if (u->v[i].secret != NULL)
            cnt_wipe(u->v[i].secret, u->v[i].secret_len);
        free(u->v[i].secret);
    }
    free(u->v);
    free(u);
}
