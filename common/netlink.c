/* The rtnetlink connection: one socket per namespace, kernel errnos, extended acks, dumps. */
#include "netlink.h"

#include <ctype.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>

#include "log.h"
#include "netns.h"
#include "netlink-private.h"

/* The kernel reports errno values below 4096; anything else is garbage. */
#define KERNEL_ERRNO_MAX 4095
/* Our receive buffer: replies are read once, into this (no MSG_PEEK to size
 * each one first). The kernel sizes dump datagrams to the reader's buffer,
 * and a single link message is far below it. */
#define RECV_BUF (64 * 1024)
/* A dump the kernel marks inconsistent (the table changed under it) is taken
 * again, this many times at most. */
#define DUMP_TRIES 8

/* Changes made through this layer, process-wide: a connection's address
 * dump is good until the next one. */
static atomic_ulong changes;

void netlink_changed(void) {
    atomic_fetch_add(&changes, 1);
}

unsigned long netlink_generation(void) {
    return atomic_load(&changes);
}

int netlink_errno(int nlerr) {
    static const int map[] = {
        [NLE_SUCCESS] = 0,
        [NLE_FAILURE] = EIO,
        [NLE_INTR] = EINTR,
        [NLE_BAD_SOCK] = EBADF,
        [NLE_AGAIN] = EAGAIN,
        [NLE_NOMEM] = ENOMEM,
        [NLE_EXIST] = EEXIST,
        [NLE_INVAL] = EINVAL,
        [NLE_RANGE] = ERANGE,
        [NLE_MSGSIZE] = EMSGSIZE,
        [NLE_OPNOTSUPP] = EOPNOTSUPP,
        [NLE_AF_NOSUPPORT] = EAFNOSUPPORT,
        [NLE_OBJ_NOTFOUND] = ENOENT,
        [NLE_NOATTR] = ENODATA,
        [NLE_MISSING_ATTR] = EINVAL,
        [NLE_AF_MISMATCH] = EAFNOSUPPORT,
        [NLE_SEQ_MISMATCH] = EILSEQ,
        [NLE_MSG_OVERFLOW] = EOVERFLOW,
        [NLE_MSG_TRUNC] = EMSGSIZE,
        [NLE_NOADDR] = EADDRNOTAVAIL,
        [NLE_SRCRT_NOSUPPORT] = EOPNOTSUPP,
        [NLE_MSG_TOOSHORT] = EBADMSG,
        [NLE_MSGTYPE_NOSUPPORT] = EOPNOTSUPP,
        [NLE_OBJ_MISMATCH] = EINVAL,
        [NLE_NOCACHE] = ENOENT,
        [NLE_BUSY] = EBUSY,
        [NLE_PROTO_MISMATCH] = EPROTONOSUPPORT,
        [NLE_NOACCESS] = EACCES,
        [NLE_PERM] = EPERM,
        [NLE_PKTLOC_FILE] = ENOENT,
        [NLE_PARSE_ERR] = EBADMSG,
        [NLE_NODEV] = ENODEV,
        [NLE_IMMUTABLE] = EPERM,
        [NLE_DUMP_INTR] = EAGAIN, /* a dump still inconsistent after DUMP_TRIES */
        [NLE_ATTRSIZE] = EBADMSG,
    };
    int e = nlerr < 0 ? -nlerr : nlerr;

    if (e == 0)
        return 0;
    if ((size_t)e >= ELEMENTSOF(map) || map[e] == 0)
        return -EIO;
    return -map[e];
}

bool netlink_ifname_valid(const char *name) {
    if (!name || !name[0] || strlen(name) >= IF_NAMESIZE || streq(name, ".") || streq(name, ".."))
        return false;
    for (const char *p = name; *p; p++)
        if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
            return false;
    return true;
}

/* The kernel's reason text, present when NETLINK_EXT_ACK is on. libnl hands
 * us the nlmsgerr, which sits right behind the NLMSG_ERROR header. */
static void keep_ext_ack(Netlink *nl, const struct nlmsgerr *e, int err) {
    const struct nlmsghdr *h = (const void *)((const uint8_t *)e - NLMSG_HDRLEN);
    size_t off = sizeof(*e);
    const struct nlattr *a;

    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
        return;
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
        if (e->msg.nlmsg_len < NLMSG_HDRLEN)
            return;
        off += e->msg.nlmsg_len - NLMSG_HDRLEN;
    }
    off = NLMSG_HDRLEN + NLMSG_ALIGN(off);
    if (off >= h->nlmsg_len)
        return;
    a = nla_find((const struct nlattr *)((const uint8_t *)h + off), (int)(h->nlmsg_len - off),
                 NLMSGERR_ATTR_MSG);
    if (!a || nla_len(a) <= 0)
        return;
    size_t len = strnlen(nla_data(a), (size_t)nla_len(a));
    log_emit(LOG_LVL_DEBUG, NULL, NULL, -err, "rtnetlink: %.*s", (int)len,
             (const char *)nla_data(a));
    snprintf(nl->ext_ack, sizeof(nl->ext_ack), "%.*s", (int)len, (const char *)nla_data(a));
    nl->ext_ack_errno = err;
}

static int on_kernel_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg) {
    Netlink *nl = arg;
    int err = e->error < 0 ? -e->error : e->error;

    nl->kernel_errno = err > 0 && err <= KERNEL_ERRNO_MAX ? err : EIO;
    nl->ext_ack[0] = 0;
    keep_ext_ack(nl, e, nl->kernel_errno);
    /* stop here; libnl returns its own code, netlink_status() prefers ours */
    return NL_STOP;
}

bool netlink_kernel_message(Netlink *nl, int r, char *buf, size_t n) {
    /* only the text of this very error: a tolerated failure before it (a
     * lookup answered ENODEV) must not lend it its words */
    bool found = nl && nl->ext_ack[0] && r == -nl->ext_ack_errno;

    if (found)
        snprintf(buf, n, "%s", nl->ext_ack);
    return found;
}

int netlink_status(Netlink *nl, int nlerr) {
    int k = nl->kernel_errno;

    nl->kernel_errno = 0;
    if (nlerr >= 0)
        return 0;
    return k > 0 ? -k : netlink_errno(nlerr);
}

static int socket_make(Netlink *nl) {
    struct nl_sock *sk = nl_socket_alloc();
    int one = 1, r;

    if (!sk)
        return -ENOMEM;
    /* nl_connect() opens the fd with SOCK_CLOEXEC */
    r = nl_connect(sk, NETLINK_ROUTE);
    r = r ?: nl_socket_set_msg_buf_size(sk, RECV_BUF);
    r = r ?: nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_kernel_error, nl);
    if (r < 0) {
        nl_socket_free(sk);
        return netlink_errno(r);
    }
    nl_socket_disable_msg_peek(sk);
    /* best effort: kernels before 4.12 have no extended ack, and the text is
     * all we would lose; strict checking makes a GET by ifindex exact */
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    nl->sk = sk;
    return 0;
}

static int socket_make_here(void *arg) {
    return socket_make(arg);
}

int netlink_open(int netns_fd, Netlink **ret) {
    Netlink *nl = calloc(1, sizeof(*nl));
    int r;

    if (!nl)
        return -ENOMEM;
    if (netns_fd < 0 || (r = netns_is_current(netns_fd)) == 1)
        r = socket_make(nl);
    else if (r == 0)
        r = netns_run(netns_fd, socket_make_here, nl);
    if (r < 0) {
        free(nl);
        return r;
    }
    *ret = nl;
    return 0;
}

void netlink_close(Netlink *nl) {
    if (!nl)
        return;
    nl_socket_free(nl->sk);
    addr_cache_drop(nl);
    free(nl);
}

int netlink_request(Netlink *nl, struct nl_msg *m) {
    /* not nl_send_sync(): it frees m, which stays its owner's */
    int r = nl_send_auto(nl->sk, m);

    r = netlink_status(nl, r < 0 ? r : nl_wait_for_ack(nl->sk));
    netlink_changed();
    return r;
}

static int dump_once(Netlink *nl, int type, const void *hdr, size_t hdrlen, nl_recvmsg_msg_cb_t fn,
                     void *arg) {
    int r;

    r = netlink_status(nl, nl_socket_modify_cb(nl->sk, NL_CB_VALID, NL_CB_CUSTOM, fn, arg));
    r = r ?: netlink_status(nl, nl_send_simple(nl->sk, type, NLM_F_DUMP, (void *)hdr, hdrlen));
    if (r < 0)
        return r;
    /* NLE_DUMP_INTR comes after the whole dump was read: the socket is
     * clean for the next try */
    r = nl_recvmsgs_default(nl->sk);
    return r == -NLE_DUMP_INTR ? -EAGAIN : netlink_status(nl, r);
}

int netlink_dump(Netlink *nl, int type, const void *hdr, size_t hdrlen, nl_recvmsg_msg_cb_t fn,
                 void (*reset)(void *arg), void *arg) {
    int r = -EAGAIN;

    for (unsigned i = 0; i < DUMP_TRIES && r == -EAGAIN; i++) {
        if (i > 0 && reset)
            reset(arg);
        r = dump_once(nl, type, hdr, hdrlen, fn, arg);
    }
    return r;
}

int netlink_get(Netlink *nl, struct nl_msg *m, nl_recvmsg_msg_cb_t fn, void *arg) {
    int r;

    r = netlink_status(nl, nl_socket_modify_cb(nl->sk, NL_CB_VALID, NL_CB_CUSTOM, fn, arg));
    r = r ?: netlink_status(nl, nl_send_auto(nl->sk, m));
    r = r ?: netlink_status(nl, nl_recvmsgs_default(nl->sk));
    if (r >= 0)
        /* the reply came before the ack; read the ack too, so that the
         * next request on this socket does not find it first */
        r = netlink_status(nl, nl_wait_for_ack(nl->sk));
    return r;
}
