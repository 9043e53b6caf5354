/* SPDX-License-Identifier: Apache-2.0 */
/* NULL-terminated string vectors. */
#include "strv.h"

#include <stdarg.h>
#include <stdio.h>

void strv_free(char **l) {
    if (!l)
        return;
    for (char **p = l; *p; p++)
        free(*p);
    free(l);
}

size_t strv_length(char *const *l) {
    size_t n = 0;

    while (l && l[n])
        n++;
    return n;
}

bool strv_contains(char *const *l, const char *s) {
    for (size_t i = 0; l && l[i]; i++)
        if (streq(l[i], s))
            return true;
    return false;
}

static int strv_push_take(char ***l, char *s) {
    size_t n = strv_length(*l);
    char **m = realloc(*l, (n + 2) * sizeof(char *));

    if (!m) {
        free(s);
        return -ENOMEM;
    }
    m[n] = s;
    m[n + 1] = NULL;
    *l = m;
    return 0;
}

int strv_push(char ***l, const char *s) {
    char *c = strdup(s);

    if (!c)
        return -ENOMEM;
    return strv_push_take(l, c);
}

int strv_pushf(char ***l, const char *fmt, ...) {
    char *s;
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -ENOMEM;
    return strv_push_take(l, s);
}

char *strv_join(char *const *l, const char *sep) {
    size_t len = 1, sl = strlen(sep);
    char *s, *p;

    for (size_t i = 0; l && l[i]; i++)
        len += strlen(l[i]) + (i ? sl : 0);
    s = p = malloc(len);
    if (!s)
        return NULL;
    *p = 0;
    for (size_t i = 0; l && l[i]; i++) {
        if (i)
            p = stpcpy(p, sep);
        p = stpcpy(p, l[i]);
    }
    return s;
}

static int version_cmp(const void *a, const void *b) {
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **l) {
    if (l)
        qsort(l, strv_length(l), sizeof(char *), version_cmp);
}
