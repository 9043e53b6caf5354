/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a JSON document strictly, with the JSON path of every mistake in
 * the message ("node.json: $.rails[2].nic.pci: must be a PCI address ..."),
 * and the string rules values are held to. The node config's schema
 * (config.c) is written with these.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "macro.h"

/* A JSON path for messages ("$.rails[2].nic"); a path too long is cut, not refused. */
typedef struct JPath {
    char s[160];
} JPath;
JPath jpath_key(const char *base, const char *key);
JPath jpath_index(const char *base, size_t i);

typedef struct JsonReader {
    const char *name; /* what messages call the document */
    RgError *err;
} JsonReader;

/* -EINVAL with "<name>: <path>: <reason>" in the reader's error. */
int jr_fail(const JsonReader *p, const char *path, const char *fmt, ...) _printf_(3, 4);
/* "<path>.<key>: is required" */
int jr_missing(const JsonReader *p, const char *path, const char *key);
int jr_oom(const JsonReader *p);

/* A string rule and what the message says when a value breaks it. */
typedef struct Check {
    bool (*valid)(const char *s);
    const char *what;
} Check;
extern const Check CHECK_DOMAIN;        /* DNS subdomain usable as a resource domain */
extern const Check CHECK_DNS_LABEL;     /* RFC 1123 label */
extern const Check CHECK_RESOURCE;      /* "<domain>/<name>" extended resource */
extern const Check CHECK_CDI_KIND;      /* "vendor/class" */
extern const Check CHECK_PATH;          /* absolute path */
extern const Check CHECK_PATH_OR_EMPTY; /* "" or an absolute path */
extern const Check CHECK_NETDEV;        /* what the kernel takes as an interface name */
extern const Check CHECK_TOKEN;         /* 1-63 of [A-Za-z0-9._:-] */
extern const Check CHECK_PCI;           /* "0000:17:00.0" */
extern const Check CHECK_CIDR;          /* address with prefix length */
extern const Check CHECK_PREFIX;        /* prefix without host bits */
extern const Check CHECK_IP;            /* address without prefix length */
/* Every one of the n bytes of s is a lowercase letter or digit (uppercase
 * too, if upper) or one of extra. */
bool all_chars(const char *s, size_t n, const char *extra, bool upper);
/* AF_INET, AF_INET6, or 0 when s is no address (a prefix length is allowed). */
int ip_family(const char *s);

/*
 * Typed members of obj, at JSON path path. Each getter returns 0 when
 * obj[key] is absent (nothing written), 1 when it is present and valid, or
 * -EINVAL with the message in the reader's error.
 */
/* Every key of obj is one of known (NULL-terminated). */
int jr_check_keys(const JsonReader *p, json_t *obj, const char *path, const char *const *known);
int jr_get_object(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  json_t **ret);
int jr_get_array(const JsonReader *p, json_t *obj, const char *path, const char *key, size_t max,
                 json_t **ret);
int jr_get_bool(const JsonReader *p, json_t *obj, const char *path, const char *key, bool *ret);
int jr_get_int(const JsonReader *p, json_t *obj, const char *path, const char *key, long long min,
               long long max, long long *ret);
/* v (at path) is a string that passes check (NULL: any string); 0 or -EINVAL. */
int jr_check_string(const JsonReader *p, json_t *v, const char *path, const Check *check);
int jr_get_string(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  const Check *check, const char **ret);
/* strdup(obj[key]) into *field, or def where it is absent (def NULL: *field stays). */
int jr_set_string(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  const Check *check, const char *def, char **field);
typedef struct EnumName {
    const char *name;
    int value;
} EnumName;
/* One of names (terminated by a NULL name). */
int jr_get_enum(const JsonReader *p, json_t *obj, const char *path, const char *key,
                const EnumName *names, int *ret);
/* A list of at most max distinct strings, each passing check. */
int jr_get_strv(const JsonReader *p, json_t *obj, const char *path, const char *key,
                const Check *check, size_t max, char ***ret, size_t *ret_n);
