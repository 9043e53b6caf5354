/* SPDX-License-Identifier: Apache-2.0 */
/* GetPreferredAllocation policy over a tenant's available units. */
#include "preferred.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"

typedef bool (*group_key_fn)(const Unit *u, char *buf, size_t n);

static bool key_switch(const Unit *u, char *buf, size_t n) {
    if (!u->switch_id[0])
        return false;
    snprintf(buf, n, "%s", u->switch_id);
    return true;
}

static bool key_numa(const Unit *u, char *buf, size_t n) {
    if (u->numa < 0)
        return false;
    snprintf(buf, n, "%d", u->numa);
    return true;
}

static bool in_list(const Unit *const *l, size_t n, const Unit *u) {
    for (size_t i = 0; i < n; i++)
        if (l[i] == u)
            return true;
    return false;
}

static bool same_key(group_key_fn key, const Unit *u, const char *k) {
    char buf[64];

    return key(u, buf, sizeof(buf)) && streq(buf, k);
}

static size_t count_key(const Unit *const *pool, size_t n, group_key_fn key, const char *k) {
    size_t c = 0;

    for (size_t i = 0; i < n; i++)
        c += same_key(key, pool[i], k);
    return c;
}

/* Everything in one group (switch or NUMA node): the group that fits with
 * the fewest spare units, so that larger requests keep whole groups. */
static size_t pick_one_group(const Unit *const *pool, size_t n_pool, const Unit *const *must,
                             size_t n_must, size_t need, group_key_fn key, const Unit **ret) {
    char best[64] = "", k[64];
    size_t best_count = SIZE_MAX;

    for (size_t i = 0; i < n_must; i++) {
        char mk[64];
        if (!key(must[i], mk, sizeof(mk)) || (i > 0 && !streq(mk, k)))
            return 0;
        snprintf(k, sizeof(k), "%s", mk);
    }
    for (size_t i = 0; i < n_pool; i++) {
        if (!key(pool[i], k, sizeof(k)) || (n_must > 0 && !same_key(key, must[0], k)))
            continue;
        size_t c = count_key(pool, n_pool, key, k);
        if (c >= need && c < best_count) {
            best_count = c;
            snprintf(best, sizeof(best), "%s", k);
        }
    }
    if (best_count == SIZE_MAX)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < n_must; i++)
        ret[n++] = must[i];
    for (size_t i = 0; i < n_pool && n < n_must + need; i++)
        if (same_key(key, pool[i], best))
            ret[n++] = pool[i];
    return n;
}

/* Sort context for spreading over NUMA nodes. */
typedef struct Spread {
    const Unit *u;
    bool must_numa;   /* its NUMA node already holds a must-include unit */
    bool must_switch; /* its switch already holds a must-include unit */
    size_t numa_free; /* available units in its NUMA node */
    size_t sw_free;   /* available units under its switch */
} Spread;

static int spread_cmp(const void *a, const void *b) {
    const Spread *x = a, *y = b;

    if (x->must_numa != y->must_numa)
        return x->must_numa ? -1 : 1;
    if ((x->u->numa < 0) != (y->u->numa < 0))
        return x->u->numa < 0 ? 1 : -1;
    if (x->numa_free != y->numa_free)
        return x->numa_free > y->numa_free ? -1 : 1;
    if (x->u->numa != y->u->numa)
        return x->u->numa < y->u->numa ? -1 : 1;
    if (x->must_switch != y->must_switch)
        return x->must_switch ? -1 : 1;
    if (x->sw_free != y->sw_free)
        return x->sw_free > y->sw_free ? -1 : 1;
    int c = strcmp(x->u->switch_id, y->u->switch_id);
    if (c)
        return c;
    return x->u < y->u ? -1 : x->u > y->u;
}

static size_t pick_fewest_numa(const Unit *const *pool, size_t n_pool, const Unit *const *must,
                               size_t n_must, size_t need, const Unit **ret) {
    Spread *s = calloc(n_pool ? n_pool : 1, sizeof(*s));
    size_t n = 0;

    for (size_t i = 0; i < n_must; i++)
        ret[n++] = must[i];
    if (!s)
        return n;
    for (size_t i = 0; i < n_pool; i++) {
        char k[64];
        s[i].u = pool[i];
        for (size_t j = 0; j < n_must; j++) {
            s[i].must_numa |= pool[i]->numa >= 0 && must[j]->numa == pool[i]->numa;
            s[i].must_switch |=
                pool[i]->switch_id[0] && streq(must[j]->switch_id, pool[i]->switch_id);
        }
        s[i].numa_free = key_numa(pool[i], k, sizeof(k)) ? count_key(pool, n_pool, key_numa, k) : 0;
        s[i].sw_free =
            key_switch(pool[i], k, sizeof(k)) ? count_key(pool, n_pool, key_switch, k) : 0;
    }
    qsort(s, n_pool, sizeof(*s), spread_cmp);
    for (size_t i = 0; i < n_pool && n < n_must + need; i++)
        ret[n++] = s[i].u;
    free(s);
    return n;
}

static int ptr_cmp(const void *a, const void *b) {
    const Unit *x = *(const Unit *const *)a, *y = *(const Unit *const *)b;

    return x < y ? -1 : x > y;
}

size_t preferred_select(const Unit *const *avail, size_t n_avail, const Unit *const *must,
                        size_t n_must, size_t size, const Unit **ret) {
    const Unit **pool = calloc(n_avail ? n_avail : 1, sizeof(*pool));
    size_t n_pool = 0, n;

    if (!pool)
        return 0;
    if (n_must > size)
        n_must = size;
    for (size_t i = 0; i < n_avail; i++)
        if (!in_list(must, n_must, avail[i]))
            pool[n_pool++] = avail[i];
    /* inventory order: units are one array, so pointer order is rail order */
    qsort(pool, n_pool, sizeof(*pool), ptr_cmp);
    size_t need = size - n_must;
    if (need > n_pool)
        need = n_pool;
    n = pick_one_group(pool, n_pool, must, n_must, need, key_switch, ret);
    if (n == 0)
        n = pick_one_group(pool, n_pool, must, n_must, need, key_numa, ret);
    if (n == 0)
        n = pick_fewest_numa(pool, n_pool, must, n_must, need, ret);
    free(pool);
    return n;
}
