/* SPDX-License-Identifier: Apache-2.0 */
/* Bump allocator: one malloc per allocation, all freed together. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>

struct ArenaBlock {
    ArenaBlock *next;
    max_align_t data[];
};

void *arena_alloc(Arena *a, size_t size) {
    ArenaBlock *b = calloc(1, sizeof(ArenaBlock) + size);

    if (!b) {
        a->failed = 1;
        return NULL;
    }
    b->next = a->head;
    a->head = b;
    return b->data;
}

char *arena_strdup(Arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(a, n);

    if (d)
        memcpy(d, s, n);
    return d;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    char *s, *d;

    va_start(ap, fmt);
    int r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0) {
        a->failed = 1;
        return NULL;
    }
    d = arena_strdup(a, s);
    free(s);
    return d;
}

void arena_done(Arena *a) {
    while (a->head) {
        ArenaBlock *n = a->head->next;
        free(a->head);
        a->head = n;
    }
}
