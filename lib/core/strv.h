/* SPDX-License-Identifier: Apache-2.0 */
/* NULL-terminated string vectors. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

void strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Append a copy of s; -ENOMEM leaves *l as it was. */
int strv_push(char ***l, const char *s);
int strv_pushf(char ***l, const char *fmt, ...) _printf_(2, 3);
/* Join with sep into a malloc'd string ("" for an empty list); NULL on ENOMEM. */
char *strv_join(char *const *l, const char *sep);
/* Sort in place, numbers in names by value ("rail2" before "rail10"). */
void strv_sort(char **l);
