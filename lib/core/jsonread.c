/* SPDX-License-Identifier: Apache-2.0 */
/* JSON paths in messages, typed members, and the string rules values are held to. */
#include "jsonread.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "cidr.h"
#include "strv.h"

#define TOKEN_MAX_LEN 63

JPath jpath_key(const char *base, const char *key) {
    JPath p;

    if (snprintf(p.s, sizeof(p.s), "%s.%s", base, key) < 0)
        p.s[0] = 0;
    return p;
}

JPath jpath_index(const char *base, size_t i) {
    JPath p;

    if (snprintf(p.s, sizeof(p.s), "%s[%zu]", base, i) < 0)
        p.s[0] = 0;
    return p;
}

int jr_fail(const JsonReader *p, const char *path, const char *fmt, ...) {
    char reason[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    return rg_error(p->err, -EINVAL, 0, "%s: %s: %s", p->name, path, reason);
}

int jr_missing(const JsonReader *p, const char *path, const char *key) {
    JPath at = jpath_key(path, key);

    return jr_fail(p, at.s, "is required");
}

int jr_oom(const JsonReader *p) {
    return rg_error(p->err, -ENOMEM, 0, "%s: out of memory", p->name);
}

/* ---- string rules ------------------------------------------------------- */

static bool is_lower_alnum(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alnum(char ch) {
    return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

static bool is_letter(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

bool all_chars(const char *s, size_t n, const char *extra, bool upper) {
    for (size_t i = 0; i < n; i++)
        if (!(upper ? is_alnum(s[i]) : is_lower_alnum(s[i])) && !strchr(extra, s[i]))
            return false;
    return true;
}

/* RFC 1123 label of n characters at s, as Kubernetes names require. */
static bool dns_label_n(const char *s, size_t n) {
    return n >= 1 && n <= 63 && is_lower_alnum(s[0]) && is_lower_alnum(s[n - 1]) &&
           all_chars(s, n, "-", false);
}

static bool dns_label_valid(const char *s) {
    return dns_label_n(s, strlen(s));
}

static bool dns_subdomain_n(const char *s, size_t n) {
    const char *end = s + n;

    if (n == 0 || n > 253)
        return false;
    for (const char *l = s; l <= end;) {
        const char *dot = memchr(l, '.', (size_t)(end - l));
        size_t len = dot ? (size_t)(dot - l) : (size_t)(end - l);

        if (!dns_label_n(l, len))
            return false;
        l += len + 1;
    }
    return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);

    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Kubernetes keeps names under kubernetes.io (and "requests.") for itself. */
static bool resource_domain_n(const char *s, size_t n) {
    return dns_subdomain_n(s, n) && !ends_with(s, n, "kubernetes.io") &&
           !(n >= 9 && memcmp(s, "requests.", 9) == 0);
}

static bool domain_valid(const char *s) {
    return resource_domain_n(s, strlen(s));
}

/* The name half of a qualified name: [A-Za-z0-9._-], alphanumeric at both ends. */
static bool qualified_name_valid(const char *s) {
    size_t n = strlen(s);

    return n >= 1 && n <= 63 && is_alnum(s[0]) && is_alnum(s[n - 1]) &&
           all_chars(s, n, "._-", true);
}

static bool resource_valid(const char *s) {
    const char *slash = strchr(s, '/');

    return slash && resource_domain_n(s, (size_t)(slash - s)) && qualified_name_valid(slash + 1);
}

/* CDI vendor and class: a letter first, a letter or digit last. */
static bool cdi_part_n(const char *s, size_t n) {
    return n >= 1 && n <= 63 && is_letter(s[0]) && is_alnum(s[n - 1]) &&
           all_chars(s, n, "._-", true);
}

static bool cdi_kind_valid(const char *s) {
    const char *slash = strchr(s, '/');

    return slash && cdi_part_n(s, (size_t)(slash - s)) && cdi_part_n(slash + 1, strlen(slash + 1));
}

static bool path_valid(const char *s) {
    return s[0] == '/' && strlen(s) < PATH_MAX;
}

static bool path_or_empty_valid(const char *s) {
    return !s[0] || path_valid(s);
}

/* The kernel's dev_valid_name(): what it refuses, we refuse before moving a NIC. */
static bool netdev_name_valid(const char *s) {
    size_t n = strlen(s);

    if (n == 0 || n > 15 || streq(s, ".") || streq(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == ':' || s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
            return false;
    return true;
}

/* Names that end up in device ids and sysfs paths: no '/', no spaces. */
static bool token_valid(const char *s) {
    size_t n = strlen(s);

    return n >= 1 && n <= TOKEN_MAX_LEN && all_chars(s, n, "._:-", true);
}

static bool hex_digits(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* sysfs spells PCI addresses "dddd:bb:dd.f" in lowercase; lookups compare names. */
static bool pci_valid(const char *s) {
    return strlen(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.' && hex_digits(s, 4) &&
           hex_digits(s + 5, 2) && hex_digits(s + 8, 2) && strtoul(s + 8, NULL, 16) <= 0x1f &&
           s[11] >= '0' && s[11] <= '7';
}

int ip_family(const char *s) {
    unsigned char buf[sizeof(struct in6_addr)];

    if (inet_pton(AF_INET, s, buf) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, s, buf) == 1)
        return AF_INET6;
    return AF_UNSPEC;
}

static bool ip_valid(const char *s) {
    return ip_family(s) != AF_UNSPEC;
}

static bool cidr_valid(const char *s) {
    Cidr c;

    return cidr_parse(s, false, &c) >= 0;
}

/* A route prefix with host bits set is refused by the kernel at ADD time. */
static bool prefix_valid(const char *s) {
    char net[64];
    Cidr c, n;

    return cidr_parse(s, false, &c) >= 0 && cidr_format_network(&c, net, sizeof(net)) >= 0 &&
           cidr_parse(net, false, &n) >= 0 && memcmp(&c.addr, &n.addr, sizeof(c.addr)) == 0;
}

const Check CHECK_DOMAIN = {
    domain_valid, "must be a DNS subdomain (lowercase alphanumerics, '-' and '.'), neither "
                  "ending in kubernetes.io nor starting with \"requests.\""};
const Check CHECK_DNS_LABEL = {
    dns_label_valid, "must be a DNS label: 1 to 63 lowercase alphanumerics or '-', alphanumeric "
                     "at both ends"};
const Check CHECK_RESOURCE = {
    resource_valid, "must be an extended resource name \"<domain>/<name>\": a DNS subdomain not "
                    "ending in kubernetes.io, and a name of 1 to 63 [A-Za-z0-9._-], alphanumeric "
                    "at both ends"};
const Check CHECK_CDI_KIND = {cdi_kind_valid,
                              "must be a CDI kind \"vendor/class\" (e.g. \"nvidia.com/gpu\")"};
const Check CHECK_PATH = {path_valid, "must be an absolute path"};
const Check CHECK_PATH_OR_EMPTY = {path_or_empty_valid,
                                   "must be \"\" (the real /dev) or an absolute path"};
const Check CHECK_NETDEV = {
    netdev_name_valid,
    "must be a network interface name: 1 to 15 characters, no '/', ':' or whitespace, "
    "not \".\" or \"..\""};
const Check CHECK_TOKEN = {token_valid, "must be 1 to 63 characters of [A-Za-z0-9._:-]"};
const Check CHECK_PCI = {pci_valid, "must be a PCI address like \"0000:17:00.0\" (lowercase hex)"};
const Check CHECK_CIDR = {cidr_valid, "must be an IPv4 or IPv6 address with prefix length, like "
                                      "\"10.0.0.11/24\""};
const Check CHECK_PREFIX = {prefix_valid, "must be an IPv4 or IPv6 prefix without host bits, like "
                                          "\"10.0.0.0/16\""};
const Check CHECK_IP = {ip_valid, "must be an IPv4 or IPv6 address without prefix length"};

/* ---- typed members ------------------------------------------------------ */

/*
 * Each getter looks up obj[key] and returns 0 when it is absent (nothing
 * written), 1 when it is present and valid, or -EINVAL with a message.
 */

int jr_check_keys(const JsonReader *p, json_t *obj, const char *path, const char *const *known) {
    for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
        const char *key = json_object_iter_key(it);
        char list[256] = "";
        size_t i;

        for (i = 0; known[i] && !streq(known[i], key); i++)
            ;
        if (known[i])
            continue;
        for (i = 0; known[i]; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     known[i]);
        return jr_fail(p, path, "unknown key \"%.64s\" (known keys: %s)", key, list);
    }
    return 0;
}

int jr_get_object(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  json_t **ret) {
    json_t *v = json_object_get(obj, key);
    JPath at = jpath_key(path, key);

    if (!v)
        return 0;
    if (!json_is_object(v))
        return jr_fail(p, at.s, "must be an object");
    *ret = v;
    return 1;
}

int jr_get_array(const JsonReader *p, json_t *obj, const char *path, const char *key, size_t max,
                 json_t **ret) {
    json_t *v = json_object_get(obj, key);
    JPath at = jpath_key(path, key);

    if (!v)
        return 0;
    if (!json_is_array(v))
        return jr_fail(p, at.s, "must be an array");
    if (json_array_size(v) > max)
        return jr_fail(p, at.s, "has %zu entries, at most %zu are allowed", json_array_size(v),
                       max);
    *ret = v;
    return 1;
}

int jr_get_bool(const JsonReader *p, json_t *obj, const char *path, const char *key, bool *ret) {
    json_t *v = json_object_get(obj, key);
    JPath at = jpath_key(path, key);

    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return jr_fail(p, at.s, "must be true or false");
    *ret = json_is_true(v);
    return 1;
}

int jr_get_int(const JsonReader *p, json_t *obj, const char *path, const char *key, long long min,
               long long max, long long *ret) {
    json_t *v = json_object_get(obj, key);
    JPath at = jpath_key(path, key);

    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return jr_fail(p, at.s, "must be an integer from %lld to %lld", min, max);
    *ret = json_integer_value(v);
    return 1;
}

int jr_check_string(const JsonReader *p, json_t *v, const char *path, const Check *check) {
    if (!json_is_string(v))
        return jr_fail(p, path, "must be a string");
    /* jansson refuses "\u0000" unless asked to, so strlen() is the whole string */
    if (check && !check->valid(json_string_value(v)))
        return jr_fail(p, path, "%s", check->what);
    return 0;
}

int jr_get_string(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  const Check *check, const char **ret) {
    json_t *v = json_object_get(obj, key);
    JPath at = jpath_key(path, key);
    int r;

    if (!v)
        return 0;
    r = jr_check_string(p, v, at.s, check);
    if (r < 0)
        return r;
    *ret = json_string_value(v);
    return 1;
}

/* Copy obj[key], or def where it is absent (def NULL: field stays NULL). */
int jr_set_string(const JsonReader *p, json_t *obj, const char *path, const char *key,
                  const Check *check, const char *def, char **field) {
    const char *s = def;
    int r = jr_get_string(p, obj, path, key, check, &s);

    if (r < 0 || !s)
        return r;
    *field = strdup(s);
    return *field ? r : jr_oom(p);
}

int jr_get_enum(const JsonReader *p, json_t *obj, const char *path, const char *key,
                const EnumName *names, int *ret) {
    JPath at = jpath_key(path, key);
    char list[128] = "";
    const char *s = NULL;
    int r = jr_get_string(p, obj, path, key, NULL, &s);

    if (r <= 0)
        return r;
    for (size_t i = 0; names[i].name; i++)
        if (streq(names[i].name, s)) {
            *ret = names[i].value;
            return 1;
        }
    for (size_t i = 0; names[i].name; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"", i ? ", " : "",
                 names[i].name);
    return jr_fail(p, at.s, "must be one of %s", list);
}

/* A list of distinct strings: a repeated entry is a mistake (a repeated route fails at ADD). */
int jr_get_strv(const JsonReader *p, json_t *obj, const char *path, const char *key,
                const Check *check, size_t max, char ***ret, size_t *ret_n) {
    _cleanup_(strv_freep) char **l = NULL;
    JPath at = jpath_key(path, key);
    json_t *a = NULL;
    size_t n;
    int r = jr_get_array(p, obj, path, key, max, &a);

    if (r <= 0)
        return r;
    n = json_array_size(a);
    for (size_t i = 0; i < n; i++) {
        JPath el = jpath_index(at.s, i);
        const char *s = NULL;

        r = jr_check_string(p, json_array_get(a, i), el.s, check);
        if (r < 0)
            return r;
        s = json_string_value(json_array_get(a, i));
        if (strv_contains(l, s))
            return jr_fail(p, el.s, "\"%s\" is listed twice", s);
        if (strv_push(&l, s) < 0)
            return jr_oom(p);
    }
    *ret = TAKE_PTR(l);
    *ret_n = n;
    return 1;
}
