/* SPDX-License-Identifier: Apache-2.0 */
/* A bump allocator for building protobuf-c messages that are freed at once. */
#pragma once

#include <stddef.h>

#include "macro.h"

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head;
    int failed; /* an allocation failed: the message is incomplete */
} Arena;

/* Zeroed memory that lives until arena_done(); NULL (and a->failed) on ENOMEM. */
void *arena_alloc(Arena *a, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) _printf_(2, 3);
void arena_done(Arena *a);
#define _cleanup_arena_ _cleanup_(arena_done)
#define arena_new(a, type) ((type *)arena_alloc((a), sizeof(type)))
#define arena_array(a, type, n) ((type *)arena_alloc((a), sizeof(type) * ((n) ? (n) : 1)))
