/* The XDP BPF links of a device, found by id and detached (bpf(2)). */
#include "bpflink.h"

#include <errno.h>
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
