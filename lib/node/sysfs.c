/* SPDX-License-Identifier: Apache-2.0 */
/* sysfs and procfs lookups: plain POSIX reads of bounded paths under a root. */
#include "sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "fileio.h"
#include "macro.h"
#include "strv.h"

/* Entries looked at per directory: a PF has at most a few hundred VFs and
 * a node a few hundred uverbs devices. */
#define MAX_DIR_ENTRIES 65536
/* sysfs attributes are one page at most; the NVIDIA information file is
 * a dozen short lines. */
#define MAX_FILE 16384
/* PCIe SR-IOV TotalVFs is a 16-bit field. */
#define MAX_NUMVFS 65535
/* minor numbers are 20 bits (MINORMASK) */
#define MAX_MINOR ((1 << 20) - 1)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* One path component from a caller: never empty, never a way out of the
 * directory it is joined to. */
static bool name_valid(const char *s) {
    return s && s[0] && strlen(s) <= NAME_MAX && !strchr(s, '/') && !streq(s, ".") &&
           !streq(s, "..");
}

static bool root_valid(const char *root) {
    return root && root[0];
}

static bool out_valid(const char *ret, size_t n) {
    return ret && n > 0;
}

static bool hex_run(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* "dddd:bb:dd.f"; the domain may be wider than 4 digits (VMD). */
static bool pci_address_valid(const char *s) {
    size_t dom = strspn(s, "0123456789abcdefABCDEF");
    const char *p = s + dom;

    if (dom < 4 || dom > 8 || strlen(p) != 8)
        return false;
    return p[0] == ':' && hex_run(p + 1, 2) && p[3] == ':' && hex_run(p + 4, 2) && p[6] == '.' &&
           p[7] >= '0' && p[7] <= '7';
}

_printf_(3, 4) static int pathf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -EINVAL;
    if ((size_t)k >= n)
        return -ENAMETOOLONG;
    return 0;
}

static int copy_out(char *ret, size_t n, const char *s) {
    size_t len = strlen(s);

    if (len >= n)
        return -ENAMETOOLONG;
    memcpy(ret, s, len + 1);
    return 0;
}

static void trim_trailing(char *s) {
    size_t len = strlen(s);

    while (len > 0 && strchr(" \t\r\n", s[len - 1]))
        s[--len] = 0;
}

/* The whole of a small file, NUL-terminated; -EFBIG if it does not fit. */
static int read_small(const char *path, char *buf, size_t size) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    size_t len = 0;

    if (fd < 0)
        return -errno;
    for (;;) {
        ssize_t k = fileio_read_some(fd, buf + len, size - 1 - len);

        if (k < 0)
            return (int)k;
        if (k == 0)
            break;
        len += (size_t)k;
        if (len == size - 1)
            return -EFBIG;
    }
    buf[len] = 0;
    /* an embedded NUL would cut the text short without notice */
    if (strlen(buf) != len)
        return -EBADMSG;
    return 0;
}

/* Last component of the symlink at path. */
static int link_basename(const char *path, char *ret, size_t n) {
    char target[PATH_MAX];
    const char *base;
    ssize_t k = readlink(path, target, sizeof(target));

    if (k < 0)
        return errno == EINVAL ? -EBADMSG : -errno; /* EINVAL: not a symlink */
    if ((size_t)k >= sizeof(target))
        return -ENAMETOOLONG;
    target[k] = 0;
    base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (!name_valid(base))
        return -EBADMSG;
    return copy_out(ret, n, base);
}

typedef bool (*entry_match_fn)(const char *dir, const char *name, const void *arg);

/* The entry of dir starting with prefix (and accepted by match) that sorts
 * first in version order, so that "first" does not depend on readdir order. */
static int dir_first(const char *dir, const char *prefix, entry_match_fn match, const void *arg,
                     char *ret, size_t n) {
    _cleanup_(closedirp) DIR *d = opendir(dir); /* glibc opens it O_CLOEXEC */
    char best[NAME_MAX + 1] = "";
    struct dirent *de = NULL;

    if (!d)
        return -errno;
    for (unsigned seen = 0; seen < MAX_DIR_ENTRIES; seen++) {
        errno = 0;
        de = readdir(d);
        if (!de)
            break;
        if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (best[0] && strverscmp(de->d_name, best) >= 0)
            continue;
        if (match && !match(dir, de->d_name, arg))
            continue;
        snprintf(best, sizeof(best), "%s", de->d_name);
    }
    if (!de && errno != 0)
        return -errno;
    if (!best[0])
        return -ENOENT;
    return copy_out(ret, n, best);
}

/* First entry of <sys>/bus/pci/devices/<pci>/<sub>/ that starts with prefix. */
static int pci_dir_first(const char *sys, const char *pci, const char *sub, const char *prefix,
                         char *ret, size_t n) {
    char dir[PATH_MAX];
    int r;

    if (!root_valid(sys) || !name_valid(pci) || !out_valid(ret, n))
        return -EINVAL;
    r = pathf(dir, sizeof(dir), "%s/bus/pci/devices/%s/%s", sys, pci, sub);
    if (r < 0)
        return r;
    return dir_first(dir, prefix, NULL, NULL, ret, n);
}

int sysfs_pci_netdev(const char *sys, const char *pci, char *ret, size_t n) {
    return pci_dir_first(sys, pci, "net", "", ret, n);
}

int sysfs_pci_rdma(const char *sys, const char *pci, char *ret, size_t n) {
    return pci_dir_first(sys, pci, "infiniband", "", ret, n);
}

int sysfs_drm_render(const char *sys, const char *pci, char *ret, size_t n) {
    return pci_dir_first(sys, pci, "drm", "renderD", ret, n);
}

int sysfs_pci_root(const char *sys, const char *pci, char *ret, size_t n) {
    char path[PATH_MAX], target[PATH_MAX], root[NAME_MAX + 1];
    const char *at;
    ssize_t k;
    int r;

    if (!root_valid(sys) || !name_valid(pci) || !out_valid(ret, n))
        return -EINVAL;
    r = pathf(path, sizeof(path), "%s/bus/pci/devices/%s", sys, pci);
    if (r < 0)
        return r;
    k = readlink(path, target, sizeof(target));
    if (k < 0)
        return errno == EINVAL ? -EBADMSG : -errno; /* EINVAL: not a symlink */
    if ((size_t)k >= sizeof(target))
        return -ENAMETOOLONG;
    target[k] = 0;
    at = strstr(target, "devices/pci");
    if (!at || (at != target && at[-1] != '/'))
        return -EBADMSG;
    at += strlen("devices/");
    snprintf(root, sizeof(root), "%.*s", (int)strcspn(at, "/"), at);
    /* "pci", then "<domain>:<bus>" (VMD domains have more than 4 digits) */
    size_t dom = strncmp(root, "pci", 3) == 0 ? strspn(root + 3, "0123456789abcdefABCDEF") : 0;
    if (dom < 4 || dom > 8 || strlen(root) != 3 + dom + 3 || root[3 + dom] != ':' ||
        !hex_run(root + 4 + dom, 2))
        return -EBADMSG;
    return copy_out(ret, n, root);
}

int sysfs_netdev_pci(const char *sys, const char *netdev, char *ret, size_t n) {
    char path[PATH_MAX], pci[NAME_MAX + 1];
    int r;

    if (!root_valid(sys) || !name_valid(netdev) || !out_valid(ret, n))
        return -EINVAL;
    r = pathf(path, sizeof(path), "%s/class/net/%s/device", sys, netdev);
    if (r < 0)
        return r;
    r = link_basename(path, pci, sizeof(pci));
    if (r < 0)
        return r;
    /* a netdev on virtio or USB has a device, but no PCI address of its own */
    if (!pci_address_valid(pci))
        return -ENOENT;
    return copy_out(ret, n, pci);
}

/* The PCI function a link under <sys>/bus/pci/devices/<pci>/ points at. */
static int pci_link(const char *sys, const char *pci, const char *name, char *ret, size_t n) {
    char path[PATH_MAX], target[NAME_MAX + 1];
    int r;

    if (!root_valid(sys) || !name_valid(pci) || !out_valid(ret, n))
        return -EINVAL;
    r = pathf(path, sizeof(path), "%s/bus/pci/devices/%s/%s", sys, pci, name);
    if (r < 0)
        return r;
    r = link_basename(path, target, sizeof(target));
    if (r < 0)
        return r;
    if (!pci_address_valid(target))
        return -EBADMSG;
    return copy_out(ret, n, target);
}

int sysfs_vf_pci(const char *sys, const char *pf_pci, unsigned vf, char *ret, size_t n) {
    char name[32];

    snprintf(name, sizeof(name), "virtfn%u", vf);
    return pci_link(sys, pf_pci, name, ret, n);
}

int sysfs_vf_physfn(const char *sys, const char *vf_pci, char *ret, size_t n) {
    return pci_link(sys, vf_pci, "physfn", ret, n);
}

/* A decimal number alone on its line, at most max. */
static int parse_uint(const char *s, unsigned long max, unsigned long *ret) {
    unsigned long v = 0;

    if (!s[0])
        return -EBADMSG;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EBADMSG;
        v = v * 10 + (unsigned long)(*s - '0');
        if (v > max)
            return -ERANGE;
    }
    *ret = v;
    return 0;
}

int sysfs_pf_numvfs(const char *sys, const char *pf_pci, unsigned *ret) {
    char path[PATH_MAX], buf[64];
    unsigned long v;
    int r;

    if (!root_valid(sys) || !name_valid(pf_pci) || !ret)
        return -EINVAL;
    r = pathf(path, sizeof(path), "%s/bus/pci/devices/%s/sriov_numvfs", sys, pf_pci);
    if (r < 0)
        return r;
    r = read_small(path, buf, sizeof(buf));
    if (r < 0)
        return r;
    trim_trailing(buf);
    r = parse_uint(buf, MAX_NUMVFS, &v);
    if (r < 0)
        return r;
    *ret = (unsigned)v;
    return 0;
}

/* Does dir/name/ibdev (an infiniband_verbs or infiniband_mad entry's) name the RDMA device arg? */
static bool ibdev_is(const char *dir, const char *name, const void *arg) {
    char path[PATH_MAX], ibdev[128];

    if (pathf(path, sizeof(path), "%s/%s/ibdev", dir, name) < 0 ||
        read_small(path, ibdev, sizeof(ibdev)) < 0)
        return false;
    trim_trailing(ibdev);
    return streq(ibdev, (const char *)arg);
}

int sysfs_rdma_uverbs(const char *sys, const char *rdma, char *ret, size_t n) {
    char dir[PATH_MAX];
    int r;

    if (!root_valid(sys) || !name_valid(rdma) || !out_valid(ret, n))
        return -EINVAL;
    r = pathf(dir, sizeof(dir), "%s/class/infiniband_verbs", sys);
    if (r < 0)
        return r;
    return dir_first(dir, "uverbs", ibdev_is, rdma, ret, n);
}

/* The kernel numbers ports from 1 (0 on a switch's management port) in a u32. */
#define MAX_PORT 4294967295UL

typedef struct PortNode {
    unsigned long port;
    char name[NAME_MAX + 1];
} PortNode;

static int port_node_cmp(const void *a, const void *b) {
    const PortNode *x = a, *y = b;

    if (x->port != y->port)
        return x->port < y->port ? -1 : 1;
    return strverscmp(x->name, y->name);
}

/* The port of the umad entry dir/name if it belongs to rdma: 1, 0 when it
 * belongs to another device (or its ibdev is unreadable), -EBADMSG for a
 * port file that is no number. */
static int umad_port_of(const char *dir, const char *name, const char *rdma, unsigned long *ret) {
    char path[PATH_MAX], buf[64];
    int r;

    if (!ibdev_is(dir, name, rdma))
        return 0;
    r = pathf(path, sizeof(path), "%s/%s/port", dir, name);
    if (r < 0)
        return r;
    r = read_small(path, buf, sizeof(buf));
    if (r < 0)
        return r == -EFBIG ? -EBADMSG : r;
    trim_trailing(buf);
    r = parse_uint(buf, MAX_PORT, ret);
    return r < 0 ? -EBADMSG : 1;
}

static int umads_collect(const char *dir, const char *rdma, PortNode **ret, size_t *ret_n) {
    _cleanup_(closedirp) DIR *d = opendir(dir);
    _cleanup_free_ PortNode *v = NULL;
    struct dirent *de = NULL;
    size_t n = 0, cap = 0;

    if (!d)
        return -errno;
    for (unsigned seen = 0; seen < MAX_DIR_ENTRIES; seen++) {
        unsigned long port = 0;
        int r;

        errno = 0;
        de = readdir(d);
        if (!de)
            break;
        /* issm<N> are the same ports' SM nodes: never handed out */
        if (strncmp(de->d_name, "umad", 4) != 0 || !name_valid(de->d_name))
            continue;
        r = umad_port_of(dir, de->d_name, rdma, &port);
        if (r < 0)
            return r;
        if (r == 0)
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 4;
            PortNode *m = realloc(v, c * sizeof(*v));
            if (!m)
                return -ENOMEM;
            v = m;
            cap = c;
        }
        v[n].port = port;
        snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
        n++;
    }
    if (!de && errno != 0)
        return -errno;
    *ret = TAKE_PTR(v);
    *ret_n = n;
    return 0;
}

int sysfs_rdma_umads(const char *sys, const char *rdma, char ***ret) {
    _cleanup_free_ PortNode *v = NULL;
    char dir[PATH_MAX], **l = NULL;
    size_t n = 0;
    int r;

    if (!root_valid(sys) || !name_valid(rdma) || !ret)
        return -EINVAL;
    r = pathf(dir, sizeof(dir), "%s/class/infiniband_mad", sys);
    if (r < 0)
        return r;
    r = umads_collect(dir, rdma, &v, &n);
    if (r < 0)
        return r;
    if (n == 0)
        return -ENOENT;
    qsort(v, n, sizeof(*v), port_node_cmp);
    for (size_t i = 0; i < n; i++) {
        r = strv_push(&l, v[i].name);
        if (r < 0) {
            strv_free(l);
            return r;
        }
    }
    *ret = l;
    return 0;
}

/* The value of "key:" on line, leading blanks skipped; NULL for another key. */
static char *line_value(char *line, const char *key) {
    size_t k = strlen(key);

    if (strncmp(line, key, k) != 0 || line[k] != ':')
        return NULL;
    line += k + 1;
    line += strspn(line, " \t");
    trim_trailing(line);
    return line;
}

/* "GPU-8c4d2f9e-..." */
static bool uuid_valid(const char *s) {
    size_t len = strlen(s);

    if (len == 0 || len >= 128)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

int procfs_nvidia_gpu(const char *proc, const char *pci, int *ret_minor, char *uuid, size_t n) {
    char path[PATH_MAX], buf[MAX_FILE], *save = NULL, *minor = NULL, *id = NULL;
    unsigned long m;
    int r;

    if (!root_valid(proc) || !name_valid(pci) || !ret_minor || (uuid && n == 0))
        return -EINVAL;
    r = pathf(path, sizeof(path), "%s/driver/nvidia/gpus/%s/information", proc, pci);
    if (r < 0)
        return r;
    r = read_small(path, buf, sizeof(buf));
    if (r < 0)
        return r;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *v;

        if (!minor && (v = line_value(line, "Device Minor")))
            minor = v;
        else if (!id && (v = line_value(line, "GPU UUID")))
            id = v;
    }
    if (!minor || parse_uint(minor, MAX_MINOR, &m) < 0)
        return -EBADMSG;
    if (id && !uuid_valid(id))
        return -EBADMSG;
    if (uuid) {
        r = copy_out(uuid, n, id ? id : "");
        if (r < 0)
            return r;
    }
    *ret_minor = (int)m;
    return 0;
}
