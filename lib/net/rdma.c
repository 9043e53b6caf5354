/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink's nldev client on libnl's core: the namespace mode, devices, ports, moves. */
#include "rdma.h"

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>

#include "netlink-private.h"

/* nldev's messages carry no header of their own: the attributes follow the
 * nlmsghdr (the kernel parses them with nlmsg_parse(nlh, 0, ...)). */
#define NLDEV_TYPE(cmd) RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, (cmd))
/* The attributes of the UAPI headers railgate builds with (Debian 12's:
 * 6.1's); a newer kernel's beyond them are skipped by nla_parse(). */
#define NLDEV_ATTR_LAST (RDMA_NLDEV_ATTR_MAX - 1)
/* The RDMA core, loaded or built in (it has parameters: netns_mode). */
#define RDMA_CORE_MODULE "/sys/module/ib_core"
/* More devices than any node has: a dump past it is refused, not grown. */
#define DEV_LIST_MAX 4096
/* A link type's name ("rxe", "siw"), NUL included: the kernel's bound. */
#define LINK_TYPE_MAX 32

/* What the kernel sends (its nldev_policy: u32 indexes, u8 modes, NUL
 * terminated strings); libnl checks sizes, the bound and the NUL. */
static const struct nla_policy nldev_policy[RDMA_NLDEV_ATTR_MAX] = {
    [RDMA_NLDEV_ATTR_DEV_INDEX] = {.type = NLA_U32},
    [RDMA_NLDEV_ATTR_DEV_NAME] = {.type = NLA_STRING, .maxlen = RDMA_DEV_NAME_MAX},
    [RDMA_NLDEV_ATTR_PORT_INDEX] = {.type = NLA_U32},
    [RDMA_NLDEV_ATTR_NDEV_INDEX] = {.type = NLA_U32},
    [RDMA_NLDEV_ATTR_NDEV_NAME] = {.type = NLA_STRING, .maxlen = IF_NAMESIZE},
    [RDMA_NLDEV_ATTR_NODE_GUID] = {.type = NLA_U64},
    [RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = {.type = NLA_U8},
};

const char *rdma_netns_mode_name(RdmaNetnsMode m) {
    return m == RDMA_NETNS_EXCLUSIVE ? "exclusive" : "shared";
}

int rdma_open(int netns_fd, Netlink **ret) {
    /* a NETLINK_RDMA socket of a kernel without ib_core loaded makes the
     * kernel load it (its alias net-pf-16-proto-20): reading never does */
    if (access(RDMA_CORE_MODULE, F_OK) < 0)
        return errno == ENOENT ? -EPROTONOSUPPORT : -errno;
    return netlink_open_protocol(netns_fd, NETLINK_RDMA, ret);
}

/* Only an RDMA connection: a route socket would send the kernel's rtnetlink
 * a type it reads as something else. */
static int conn_check(const Netlink *nl) {
    return nl && nl->protocol == NETLINK_RDMA ? 0 : -EPROTOTYPE;
}

static int msg_new(unsigned cmd, int flags, struct nl_msg **ret) {
    struct nl_msg *m = nlmsg_alloc_simple(NLDEV_TYPE(cmd), flags);

    if (!m)
        return -ENOMEM;
    *ret = m;
    return 0;
}

/* tb of one reply of type cmd (or also_cmd: the kernel answers a PORT_GET
 * with the type of a GET). */
static int reply_parse(const struct nlmsghdr *h, unsigned cmd, unsigned also_cmd,
                       struct nlattr **tb) {
    if (!h || (h->nlmsg_type != NLDEV_TYPE(cmd) && h->nlmsg_type != NLDEV_TYPE(also_cmd)))
        return -EBADMSG;
    if (nlmsg_parse((struct nlmsghdr *)h, 0, tb, NLDEV_ATTR_LAST, nldev_policy) < 0)
        return -EBADMSG;
    return 0;
}

/* A string attribute libnl found NUL-terminated within its bound, non-empty. */
static int copy_name(const struct nlattr *a, char *buf, size_t n) {
    size_t len;

    if (!a || nla_len(a) <= 0)
        return -EBADMSG;
    len = strnlen(nla_data(a), (size_t)nla_len(a));
    if (len == 0 || len >= n)
        return -EBADMSG;
    memcpy(buf, nla_data(a), len);
    buf[len] = 0;
    return 0;
}

/* ---- the mode --------------------------------------------------------------- */

int rdma_parse_sys(const struct nlmsghdr *h, RdmaNetnsMode *ret) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    uint8_t v;

    if (reply_parse(h, RDMA_NLDEV_CMD_SYS_GET, RDMA_NLDEV_CMD_SYS_GET, tb) < 0 ||
        !tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE])
        return -EBADMSG;
    v = nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
    if (v > 1)
        return -EBADMSG;
    *ret = v ? RDMA_NETNS_SHARED : RDMA_NETNS_EXCLUSIVE;
    return 0;
}

typedef struct SysReply {
    RdmaNetnsMode mode;
    int n, err;
} SysReply;

static int on_sys(struct nl_msg *msg, void *arg) {
    SysReply *s = arg;
    int r = rdma_parse_sys(nlmsg_hdr(msg), &s->mode);

    if (r < 0)
        s->err = r;
    else
        s->n++;
    return NL_OK;
}

int rdma_netns_mode_get(Netlink *nl, RdmaNetnsMode *ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    SysReply s = {0};
    int r = conn_check(nl);

    r = r ?: msg_new(RDMA_NLDEV_CMD_SYS_GET, 0, &m);
    r = r ?: netlink_get(nl, m, on_sys, &s);
    if (r < 0)
        return r;
    if (s.err < 0)
        return s.err;
    if (s.n != 1)
        return -EBADMSG;
    *ret = s.mode;
    return 0;
}

int rdma_msg_sys_set(RdmaNetnsMode mode, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r;

    if (mode != RDMA_NETNS_EXCLUSIVE && mode != RDMA_NETNS_SHARED)
        return -EINVAL;
    r = msg_new(RDMA_NLDEV_CMD_SYS_SET, 0, &m);
    if (r < 0)
        return r;
    if (nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, (uint8_t)mode) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(m);
    return 0;
}

int rdma_netns_mode_set(Netlink *nl, RdmaNetnsMode mode) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = conn_check(nl);

    r = r ?: rdma_msg_sys_set(mode, &m);
    return r ?: netlink_request(nl, m);
}

/* ---- devices ---------------------------------------------------------------- */

int rdma_parse_dev(const struct nlmsghdr *h, RdmaDevice *ret) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    RdmaDevice d = {0};

    if (reply_parse(h, RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_GET, tb) < 0 ||
        !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
        copy_name(tb[RDMA_NLDEV_ATTR_DEV_NAME], d.name, sizeof(d.name)) < 0)
        return -EBADMSG;
    d.index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
    if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
        d.n_ports = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
    if (tb[RDMA_NLDEV_ATTR_NODE_GUID])
        d.node_guid = nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
    *ret = d;
    return 0;
}

static int on_dev(struct nl_msg *msg, void *arg) {
    NetlinkArray *l = arg;
    RdmaDevice d;
    int r = rdma_parse_dev(nlmsg_hdr(msg), &d);

    if (r < 0 || l->err < 0)
        l->err = l->err ?: r;
    else
        (void)netlink_array_add(l, &d);
    return NL_OK;
}

int rdma_dev_list(Netlink *nl, RdmaDevice **ret, size_t *ret_n) {
    NetlinkArray l = NETLINK_ARRAY_INIT(RdmaDevice, DEV_LIST_MAX);
    int r = conn_check(nl);

    /* no family header: the request is the nlmsghdr alone */
    r = r
            ?: netlink_dump(nl, NLDEV_TYPE(RDMA_NLDEV_CMD_GET), "", 0, on_dev, netlink_array_reset,
                            &l);
    r = netlink_array_result(&l, r);
    if (r < 0)
        return r;
    *ret = l.v;
    *ret_n = l.n;
    return 0;
}

/* ---- ports ------------------------------------------------------------------ */

int rdma_msg_port_get(uint32_t dev_index, uint32_t port, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = msg_new(RDMA_NLDEV_CMD_PORT_GET, 0, &m);

    if (r < 0)
        return r;
    if (nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) < 0 ||
        nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, port) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(m);
    return 0;
}

int rdma_parse_port(const struct nlmsghdr *h, RdmaPort *ret) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    RdmaPort p = {0};
    uint32_t ifindex;

    if (reply_parse(h, RDMA_NLDEV_CMD_PORT_GET, RDMA_NLDEV_CMD_GET, tb) < 0 ||
        !tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_PORT_INDEX])
        return -EBADMSG;
    p.dev_index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
    p.port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
    /* the kernel sends both or neither (a netdev outside the asker's namespace) */
    if (!tb[RDMA_NLDEV_ATTR_NDEV_INDEX] != !tb[RDMA_NLDEV_ATTR_NDEV_NAME])
        return -EBADMSG;
    if (tb[RDMA_NLDEV_ATTR_NDEV_INDEX]) {
        ifindex = nla_get_u32(tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
        if (ifindex == 0 || ifindex > INT32_MAX ||
            copy_name(tb[RDMA_NLDEV_ATTR_NDEV_NAME], p.ndev_name, sizeof(p.ndev_name)) < 0)
            return -EBADMSG;
        p.ndev_index = (int)ifindex;
    }
    *ret = p;
    return 0;
}

typedef struct PortReply {
    RdmaPort port;
    int n, err;
} PortReply;

static int on_port(struct nl_msg *msg, void *arg) {
    PortReply *p = arg;
    int r = rdma_parse_port(nlmsg_hdr(msg), &p->port);

    if (r < 0)
        p->err = r;
    else
        p->n++;
    return NL_OK;
}

int rdma_port_get(Netlink *nl, uint32_t dev_index, uint32_t port, RdmaPort *ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    PortReply p = {0};
    int r = conn_check(nl);

    r = r ?: rdma_msg_port_get(dev_index, port, &m);
    r = r ?: netlink_get(nl, m, on_port, &p);
    if (r < 0)
        return r;
    if (p.err < 0)
        return p.err;
    /* the answer of another device or port is no answer */
    if (p.n != 1 || p.port.dev_index != dev_index || p.port.port != port)
        return -EBADMSG;
    *ret = p.port;
    return 0;
}

/* ---- changes ---------------------------------------------------------------- */

int rdma_msg_dev_move(uint32_t dev_index, int netns_fd, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r;

    if (netns_fd < 0)
        return -EBADF;
    r = msg_new(RDMA_NLDEV_CMD_SET, 0, &m);
    if (r < 0)
        return r;
    if (nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) < 0 ||
        nla_put_u32(m, RDMA_NLDEV_NET_NS_FD, (uint32_t)netns_fd) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(m);
    return 0;
}

int rdma_dev_move(Netlink *nl, uint32_t dev_index, int netns_fd) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = conn_check(nl);

    r = r ?: rdma_msg_dev_move(dev_index, netns_fd, &m);
    return r ?: netlink_request(nl, m);
}

/* A name the kernel takes as it is: "%" would be a pattern for one of its choosing. */
static bool dev_name_valid(const char *name) {
    return name && *name && strlen(name) < RDMA_DEV_NAME_MAX && !strchr(name, '%');
}

int rdma_msg_dev_rename(uint32_t dev_index, const char *name, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r;

    if (!dev_name_valid(name))
        return -EINVAL;
    r = msg_new(RDMA_NLDEV_CMD_SET, 0, &m);
    if (r < 0)
        return r;
    if (nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) < 0 ||
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(m);
    return 0;
}

int rdma_dev_rename(Netlink *nl, uint32_t dev_index, const char *name) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = conn_check(nl);

    r = r ?: rdma_msg_dev_rename(dev_index, name, &m);
    return r ?: netlink_request(nl, m);
}

int rdma_link_add(Netlink *nl, const char *name, const char *link_type, const char *ndev) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = conn_check(nl);

    if (r < 0)
        return r;
    if (!dev_name_valid(name) || !link_type || !*link_type || strlen(link_type) >= LINK_TYPE_MAX ||
        !netlink_ifname_valid(ndev))
        return -EINVAL;
    /* no NLM_F_CREATE | NLM_F_EXCL: RDMA netlink takes any message with a
     * bit of NLM_F_DUMP (NLM_F_EXCL is NLM_F_MATCH's) for a dump request,
     * and NEWLINK has no dump: EINVAL */
    r = msg_new(RDMA_NLDEV_CMD_NEWLINK, 0, &m);
    if (r < 0)
        return r;
    if (nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name) < 0 ||
        nla_put_string(m, RDMA_NLDEV_ATTR_LINK_TYPE, link_type) < 0 ||
        nla_put_string(m, RDMA_NLDEV_ATTR_NDEV_NAME, ndev) < 0)
        return -ENOMEM;
    return netlink_request(nl, m);
}

int rdma_link_delete(Netlink *nl, uint32_t dev_index) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = conn_check(nl);

    r = r ?: msg_new(RDMA_NLDEV_CMD_DELLINK, 0, &m);
    if (r < 0)
        return r;
    if (nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) < 0)
        return -ENOMEM;
    return netlink_request(nl, m);
}
