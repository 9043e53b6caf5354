/* SPDX-License-Identifier: Apache-2.0 */
/* The XDP BPF links and the tcx programs of a device, found and detached (bpf(2)). */
#include "bpflink.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* more links than a node holds; the walk stops there whatever it found */
#define LINK_IDS_MAX 65536

static int bpf(int cmd, union bpf_attr *attr) {
    int r = (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
    return r < 0 ? -errno : r;
}

/* Is the link at fd an XDP link of prog_id on ifindex? */
static int xdp_link_of(int fd, int ifindex, uint32_t prog_id) {
    struct bpf_link_info info;
    union bpf_attr a;
    int r;

    memset(&info, 0, sizeof(info));
    memset(&a, 0, sizeof(a));
    a.info.bpf_fd = (uint32_t)fd;
    a.info.info_len = sizeof(info);
    a.info.info = (uint64_t)(uintptr_t)&info;
    r = bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
    if (r < 0)
        return r;
    return info.type == BPF_LINK_TYPE_XDP && info.prog_id == prog_id &&
           (int)info.xdp.ifindex == ifindex;
}

int xdp_bpf_links_detach(int ifindex, uint32_t prog_id, unsigned *ret_n) {
    uint32_t id = 0;
    unsigned n = 0;
    int r = 0;

    for (unsigned k = 0; k < LINK_IDS_MAX; k++) {
        union bpf_attr a;
        int fd;

        memset(&a, 0, sizeof(a));
        a.start_id = id;
        r = bpf(BPF_LINK_GET_NEXT_ID, &a);
        if (r == -ENOENT) {
            r = 0; /* the last one */
            break;
        }
        if (r < 0)
            break;
        id = a.next_id;
        memset(&a, 0, sizeof(a));
        a.link_id = id;
        fd = bpf(BPF_LINK_GET_FD_BY_ID, &a);
        if (fd == -ENOENT)
            continue; /* gone meanwhile */
        if (fd < 0) {
            r = fd;
            break;
        }
        r = xdp_link_of(fd, ifindex, prog_id);
        if (r > 0) {
            memset(&a, 0, sizeof(a));
            a.link_detach.link_fd = (uint32_t)fd;
            r = bpf(BPF_LINK_DETACH, &a);
            n += r >= 0;
        }
        close(fd);
        if (r < 0)
            break;
    }
    if (r < 0)
        return r;
    *ret_n = n;
    return 0;
}

/* tcx, newer than the 6.1 headers this builds with: enum bpf_attach_type's
 * values, and BPF_PROG_QUERY's attributes as 6.6 laid them out */
#define RG_BPF_TCX_INGRESS 46
#define RG_BPF_TCX_EGRESS 47
/* what one tcx hook holds at most (the kernel's bpf_mprog) */
#define TCX_MAX 64

typedef struct TcxQuery {
    uint32_t target_ifindex;
    uint32_t attach_type;
    uint32_t query_flags;
    uint32_t attach_flags;
    uint64_t prog_ids;
    uint32_t count;
    uint32_t pad;
    uint64_t prog_attach_flags;
    uint64_t link_ids;
    uint64_t link_attach_flags;
    uint64_t revision;
} TcxQuery;

/* The programs on one hook: their ids, and their BPF links' (0: none). */
static int tcx_query(int ifindex, uint32_t type, uint32_t *prog_ids, uint32_t *link_ids,
                     uint32_t *ret_n) {
    union {
        union bpf_attr a;
        TcxQuery q;
    } u;
    int r;

    _Static_assert(sizeof(TcxQuery) <= sizeof(union bpf_attr), "BPF_PROG_QUERY fits");
    memset(&u, 0, sizeof(u));
    u.q.target_ifindex = (uint32_t)ifindex;
    u.q.attach_type = type;
    u.q.prog_ids = (uint64_t)(uintptr_t)prog_ids;
    u.q.link_ids = (uint64_t)(uintptr_t)link_ids;
    u.q.count = TCX_MAX;
    r = bpf(BPF_PROG_QUERY, &u.a);
    if (r == -EINVAL) {
        *ret_n = 0; /* no tcx in this kernel */
        return 0;
    }
    if (r < 0)
        return r;
    *ret_n = u.q.count < TCX_MAX ? u.q.count : TCX_MAX;
    return 0;
}

/* One program off a hook: through its BPF link where it has one. */
static int tcx_detach_one(int ifindex, uint32_t type, uint32_t prog_id, uint32_t link_id) {
    union bpf_attr a;
    int fd, r;

    memset(&a, 0, sizeof(a));
    if (link_id) {
        a.link_id = link_id;
        fd = bpf(BPF_LINK_GET_FD_BY_ID, &a);
        if (fd < 0)
            return fd == -ENOENT ? 0 : fd; /* gone meanwhile */
        memset(&a, 0, sizeof(a));
        a.link_detach.link_fd = (uint32_t)fd;
        r = bpf(BPF_LINK_DETACH, &a);
    } else {
        a.prog_id = prog_id;
        fd = bpf(BPF_PROG_GET_FD_BY_ID, &a);
        if (fd < 0)
            return fd == -ENOENT ? 0 : fd;
        memset(&a, 0, sizeof(a));
        a.target_fd = (uint32_t)ifindex; /* target_ifindex, for tcx */
        a.attach_bpf_fd = (uint32_t)fd;
        a.attach_type = type;
        r = bpf(BPF_PROG_DETACH, &a);
    }
    close(fd);
    return r < 0 ? r : 1;
}

/* Each program on both hooks counted, or (detach) detached: how many. */
static int tcx_walk(int ifindex, bool detach, unsigned *ret_n) {
    static const uint32_t hooks[] = {RG_BPF_TCX_INGRESS, RG_BPF_TCX_EGRESS};
    uint32_t progs[TCX_MAX], links[TCX_MAX];
    unsigned n = 0;

    for (size_t h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++) {
        uint32_t k = 0;
        int r;

        memset(links, 0, sizeof(links));
        r = tcx_query(ifindex, hooks[h], progs, links, &k);
        for (uint32_t i = 0; r >= 0 && i < k; i++) {
            r = detach ? tcx_detach_one(ifindex, hooks[h], progs[i], links[i]) : 1;
            n += r > 0;
        }
        if (r < 0)
            return r;
    }
    *ret_n = n;
    return 0;
}

int tcx_count(int ifindex, unsigned *ret_n) {
    return tcx_walk(ifindex, false, ret_n);
}

int tcx_detach_all(int ifindex, unsigned *ret_n) {
    return tcx_walk(ifindex, true, ret_n);
}
