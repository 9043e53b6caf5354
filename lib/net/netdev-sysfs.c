/* SPDX-License-Identifier: Apache-2.0 */
/* A netdev's NAPI and queue settings, read from and written to sysfs. */
#include "netdev-sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* sysfs shows at most a page */
#define VALUE_MAX 4096
/* queues per direction looked at, and the highest number a key may name */
#define QUEUES_MAX 65536u

static const char *const device_keys[] = {"gro_flush_timeout", "napi_defer_hard_irqs", "threaded"};
static const char *const rx_keys[] = {"rps_cpus", "rps_flow_cnt"};
static const char *const tx_keys[] = {"xps_cpus",
                                      "xps_rxqs",
                                      "tx_maxrate",
                                      "byte_queue_limits/limit_min",
                                      "byte_queue_limits/limit_max",
                                      "byte_queue_limits/hold_time"};

static bool in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (streq(s, list[i]))
            return true;
    return false;
}

/* "rx-<n>" or "tx-<n>" at s: its direction ('r', 't') and the rest after
 * the number in *rest; 0 if it is not one. */
static char queue_dir(const char *s, const char **rest) {
    char *end;
    unsigned long q;

    if ((s[0] != 'r' && s[0] != 't') || s[1] != 'x' || s[2] != '-' || !isdigit((unsigned char)s[3]))
        return 0;
    if (s[3] == '0' && isdigit((unsigned char)s[4]))
        return 0; /* the kernel writes no leading zeros */
    errno = 0;
    q = strtoul(s + 3, &end, 10);
    if (errno || q >= QUEUES_MAX)
        return 0;
    *rest = end;
    return s[0];
}

bool netdev_sysfs_key_valid(const char *key) {
    const char *rest;
    char dir;

    if (!key)
        return false;
    if (in_list(key, device_keys, ELEMENTSOF(device_keys)))
        return true;
    if (strncmp(key, "queues/", 7) != 0)
        return false;
    dir = queue_dir(key + 7, &rest);
    if (!dir || *rest != '/')
        return false;
    return dir == 'r' ? in_list(rest + 1, rx_keys, ELEMENTSOF(rx_keys))
                      : in_list(rest + 1, tx_keys, ELEMENTSOF(tx_keys));
}

static bool value_valid(const char *v) {
    size_t n = strlen(v);

    if (n == 0 || n >= VALUE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)v[i]) && v[i] != ',')
            return false;
    return true;
}

void netdev_sysfs_done(NetdevSysfs *s) {
    for (size_t i = 0; s && i < s->n; i++) {
        free(s->v[i].key);
        free(s->v[i].value);
    }
    if (s) {
        free(s->v);
        *s = (NetdevSysfs){0};
    }
}

/* What the kernel shows at key under dfd, without its newline, into buf. */
static int read_at(int dfd, const char *key, char *buf, size_t n) {
    int fd = openat(dfd, key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t k;

    if (fd < 0)
        return -errno;
    k = read(fd, buf, n - 1);
    if (k < 0)
        k = -errno;
    close(fd);
    if (k < 0)
        return (int)k;
    buf[k] = 0;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

static int write_at(int dfd, const char *key, const char *value) {
    int fd = openat(dfd, key, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW),
        r = 0; /* as a shell writes */
    size_t n = strlen(value);

    if (fd < 0)
        return -errno;
    ssize_t k = write(fd, value, n);
    if (k < 0)
        r = -errno;
    else if ((size_t)k != n)
        r = -EIO;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}

/* The device's directory, once its ifindex says it is the link at ifindex. */
static int dev_open(const char *sys, const char *ifname, int ifindex) {
    char path[PATH_MAX], buf[32];
    int fd, r;

    if (!ifname[0] || strchr(ifname, '/') || streq(ifname, ".") || streq(ifname, ".."))
        return -EINVAL;
    if ((size_t)snprintf(path, sizeof(path), "%s/class/net/%s", sys, ifname) >= sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENODEV : -errno;
    r = read_at(fd, "ifindex", buf, sizeof(buf));
    if (r < 0 || atoi(buf) != ifindex) {
        close(fd);
        return r == -ENOENT || r >= 0 ? -ENODEV : r;
    }
    return fd;
}

static int push(NetdevSysfs *s, const char *key, const char *value) {
    NetdevSetting *v = realloc(s->v, (s->n + 1) * sizeof(*v));

    if (!v)
        return -ENOMEM;
    s->v = v;
    v[s->n].key = strdup(key);
    v[s->n].value = strdup(value);
    if (!v[s->n].key || !v[s->n].value) {
        free(v[s->n].key);
        free(v[s->n].value);
        return -ENOMEM;
    }
    s->n++;
    return 0;
}

/* Keep key's value where the kernel shows one for this device. */
static int keep(NetdevSysfs *s, int dfd, const char *key) {
    _cleanup_free_ char *buf = malloc(VALUE_MAX);
    int r;

    if (!buf)
        return -ENOMEM;
    r = read_at(dfd, key, buf, VALUE_MAX);
    if (r == -ENOENT || r == -EOPNOTSUPP || r == -EINVAL || r == -ENODATA)
        return 0; /* not this device's (no XPS with one queue, no RPS built in) */
    if (r < 0)
        return r;
    if (!value_valid(buf))
        return -EBADMSG;
    return push(s, key, buf);
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const NetdevSetting *)a)->key, ((const NetdevSetting *)b)->key);
}

/* r < 0: s freed and r; else s sorted by key into *ret. */
static int finish(NetdevSysfs *s, int r, NetdevSysfs *ret) {
    if (r < 0) {
        netdev_sysfs_done(s);
        return r;
    }
    if (s->n)
        qsort(s->v, s->n, sizeof(*s->v), by_key);
    *ret = *s;
    return 0;
}

int netdev_sysfs_get(const char *sys, const char *ifname, int ifindex, NetdevSysfs *ret) {
    _cleanup_close_ int dfd = dev_open(sys, ifname, ifindex);
    NetdevSysfs s = {0};
    DIR *d = NULL;
    int qfd, r = 0;

    if (dfd < 0)
        return dfd;
    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(device_keys); i++)
        r = keep(&s, dfd, device_keys[i]);
    qfd = r >= 0 ? openat(dfd, "queues", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (qfd >= 0) {
        d = fdopendir(qfd);
        if (!d) {
            r = -errno;
            close(qfd);
        }
    }
    for (struct dirent *e; r >= 0 && d && (errno = 0, e = readdir(d));) {
        const char *rest;
        char dir = queue_dir(e->d_name, &rest), key[96];
        const char *const *list = dir == 'r' ? rx_keys : tx_keys;
        size_t n = dir == 'r' ? ELEMENTSOF(rx_keys) : ELEMENTSOF(tx_keys);

        if (!dir || *rest)
            continue;
        for (size_t i = 0; r >= 0 && i < n; i++) {
            snprintf(key, sizeof(key), "queues/%.16s/%s", e->d_name, list[i]);
            r = keep(&s, dfd, key);
        }
    }
    if (d)
        closedir(d);
    return finish(&s, r, ret);
}

#define SEP (k ? ", " : "")

int netdev_sysfs_restore(const char *sys, const char *ifname, int ifindex, const NetdevSysfs *want,
                         char *what, size_t n_what) {
    _cleanup_close_ int dfd = dev_open(sys, ifname, ifindex);
    _cleanup_free_ char *buf = malloc(VALUE_MAX);
    size_t k = 0;

    if (dfd < 0)
        return dfd;
    if (!buf)
        return -ENOMEM;
    what[0] = 0;
    for (size_t i = 0; i < want->n; i++) {
        const NetdevSetting *s = &want->v[i];
        int r = read_at(dfd, s->key, buf, VALUE_MAX), w = 0;

        if (r >= 0 && streq(buf, s->value))
            continue;
        w = write_at(dfd, s->key, s->value);
        if (w >= 0)
            r = read_at(dfd, s->key, buf, VALUE_MAX);
        if (w >= 0 && r >= 0 && streq(buf, s->value))
            continue;
        if (k < n_what) {
            int m;
            if (w < 0)
                m = snprintf(what + k, n_what - k, "%s%s not set back to %s: %s", SEP, s->key,
                             s->value, strerror(-w));
            else if (r < 0)
                m = snprintf(what + k, n_what - k, "%s%s unreadable: %s", SEP, s->key,
                             strerror(-r));
            else
                m = snprintf(what + k, n_what - k, "%s%s %s (was %s)", SEP, s->key, buf, s->value);
            k += m > 0 ? (size_t)m : 0;
        } else
            k++;
    }
    return k ? -EIO : 0;
}

#undef SEP

int netdev_sysfs_to_json(const NetdevSysfs *s, json_t **ret) {
    json_t *o = json_object();

    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        if (json_object_set_new(o, s->v[i].key, json_string(s->v[i].value)) < 0) {
            json_decref(o);
            return -ENOMEM;
        }
    *ret = o;
    return 0;
}

int netdev_sysfs_from_json(const json_t *j, NetdevSysfs *ret) {
    NetdevSysfs s = {0};
    const char *key;
    json_t *v;
    int r = 0;

    if (!json_is_object(j))
        return -EBADMSG;
    json_object_foreach((json_t *)j, key, v) {
        if (!netdev_sysfs_key_valid(key) || !json_is_string(v) ||
            !value_valid(json_string_value(v))) {
            r = -EBADMSG;
            break;
        }
        r = push(&s, key, json_string_value(v));
        if (r < 0)
            break;
    }
    return finish(&s, r, ret);
}
