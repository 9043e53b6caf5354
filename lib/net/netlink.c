/* SPDX-License-Identifier: Apache-2.0 */
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
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "log.h"
#include "netns.h"
#include "netlink-private.h"

/* The kernel reports errno values below 4096; anything else is garbage. */
#define KERNEL_ERRNO_MAX 4095
/* The socket's receive queue: the largest reply and its ack. */
#define RECV_QUEUE (1024 * 1024)
/* An answer that has not come in this long is not coming (a move takes
 * tens of milliseconds): the command fails instead of hanging. */
#define RECV_TIMEOUT_S 30
/* A dump the kernel marks inconsistent (the table changed under it) is taken
 * again, this many times at most. */
#define DUMP_TRIES 8

/* Changes made through this layer, process-wide: a connection's address
 * dump is good until the next one. */
static atomic_ulong changes;

/* RAILGATE_NL_STATS: requests and sendmsg calls per protocol, written at exit. */
enum { STAT_RTNL_MSGS, STAT_RTNL_SEND, STAT_GENL_MSGS, STAT_GENL_SEND, _STAT_MAX };
static atomic_ulong stats[_STAT_MAX];

void netlink_count(const Netlink *nl, unsigned msgs) {
    int base = nl->protocol == NETLINK_ROUTE     ? STAT_RTNL_MSGS
               : nl->protocol == NETLINK_GENERIC ? STAT_GENL_MSGS
                                                 : -1;

    if (base < 0)
        return;
    atomic_fetch_add_explicit(&stats[base], msgs, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats[base + 1], 1, memory_order_relaxed);
}

__attribute__((destructor)) static void stats_write(void) {
    const char *path = getenv("RAILGATE_NL_STATS");
    char line[160];
    int fd, n;

    if (!path || !*path)
        return;
    n = snprintf(line, sizeof(line),
                 "rtnl_msgs %lu rtnl_sendmsg %lu genl_msgs %lu genl_sendmsg %lu\n",
                 atomic_load(&stats[STAT_RTNL_MSGS]), atomic_load(&stats[STAT_RTNL_SEND]),
                 atomic_load(&stats[STAT_GENL_MSGS]), atomic_load(&stats[STAT_GENL_SEND]));
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) < 0) {
        /* nothing to tell anyone at exit */
    }
    close(fd);
}

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

/* The kernel's reason text, present when NETLINK_EXT_ACK is on: after the
 * nlmsgerr (and the request it echoes, unless capped). */
bool netlink_ext_ack_text(const struct nlmsghdr *h, size_t len, char *buf, size_t n) {
    const struct nlmsgerr *e = nlmsg_data(h);
    size_t off = sizeof(*e);
    const struct nlattr *a;

    if (len > h->nlmsg_len)
        len = h->nlmsg_len;
    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || len < NLMSG_LENGTH(sizeof(*e)))
        return false;
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
        if (e->msg.nlmsg_len < NLMSG_HDRLEN)
            return false;
        off += e->msg.nlmsg_len - NLMSG_HDRLEN;
    }
    off = NLMSG_HDRLEN + NLMSG_ALIGN(off);
    if (off >= len)
        return false;
    a = nla_find((const struct nlattr *)((const uint8_t *)h + off), (int)(len - off),
                 NLMSGERR_ATTR_MSG);
    if (!a || nla_len(a) <= 0)
        return false;
    snprintf(buf, n, "%.*s", (int)strnlen(nla_data(a), (size_t)nla_len(a)),
             (const char *)nla_data(a));
    return true;
}

/* libnl hands us the nlmsgerr, which sits right behind the NLMSG_ERROR header. */
static void keep_ext_ack(Netlink *nl, const struct nlmsgerr *e, int err) {
    const struct nlmsghdr *h = (const void *)((const uint8_t *)e - NLMSG_HDRLEN);

    if (!netlink_ext_ack_text(h, h->nlmsg_len, nl->ext_ack, sizeof(nl->ext_ack)))
        return;
    log_emit(LOG_LVL_DEBUG, NULL, NULL, -err, "netlink: %s", nl->ext_ack);
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

/* Ask the kernel's socket only: a connected netlink socket takes unicast
 * from its peer alone, so a process in the pod (CAP_NET_ADMIN there) cannot
 * slip a forged reply or ack into our conversation. */
static int connect_to_kernel(int fd) {
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

    return connect(fd, (struct sockaddr *)&kernel, sizeof(kernel)) < 0 ? -errno : 0;
}

/* What a batch may send at once (netlink_sendmsg() refuses more than
 * sk_sndbuf - 32), and what its answers may take of the receive queue (a
 * margin below sk_rcvbuf: an answer's room is an estimate). */
static void socket_limits(Netlink *nl, int fd) {
    int snd = 0, rcv = 0;
    socklen_t l1 = sizeof(snd), l2 = sizeof(rcv);

    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &l1) < 0 || snd < 4096)
        snd = 4096;
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &l2) < 0 || rcv < 4096)
        rcv = 4096;
    nl->send_max = (size_t)snd - 32;
    nl->recv_queue = (size_t)rcv / 4 * 3;
}

int netlink_socket_fd(Netlink *nl) {
    return nl->sk ? nl_socket_get_fd(nl->sk) : -EBADF;
}

static int socket_make(Netlink *nl) {
    struct nl_sock *sk = nl_socket_alloc();
    struct timeval timeout = {.tv_sec = RECV_TIMEOUT_S};
    int one = 1, rcvbuf = RECV_QUEUE, r;

    if (!sk)
        return -ENOMEM;
    /* nl_connect() opens the fd with SOCK_CLOEXEC */
    r = nl_connect(sk, nl->protocol);
    r = r ?: nl_socket_set_msg_buf_size(sk, NETLINK_RECV_BUF);
    r = r ?: nl_socket_set_buffer_size(sk, RECV_QUEUE, 0);
    r = r ?: nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_kernel_error, nl);
    r = r < 0 ? netlink_errno(r) : connect_to_kernel(nl_socket_get_fd(sk));
    if (r >= 0 &&
        setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0)
        r = -errno;
    if (r < 0) {
        nl_socket_free(sk);
        return r;
    }
    nl_socket_disable_msg_peek(sk);
    /* above net.core.rmem_max where we may (root): a reply as large as a
     * link with hundreds of alternative names, and its ack, both fit */
    (void)setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
    socket_limits(nl, nl_socket_get_fd(sk));
    /* best effort: kernels before 4.12 have no extended ack, and the text is
     * all we would lose */
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    nl->sk = sk;
    return 0;
}

static int socket_make_here(void *arg) {
    return socket_make(arg);
}

/* A new socket in nl's namespace. */
static int socket_open(Netlink *nl) {
    int r;

    if (nl->netns_fd < 0 || (r = netns_is_current(nl->netns_fd)) == 1)
        return socket_make(nl);
    if (r < 0)
        return r;
    return netns_run(nl->netns_fd, socket_make_here, nl);
}

int netlink_open_protocol(int netns_fd, int protocol, Netlink **ret) {
    Netlink *nl = calloc(1, sizeof(*nl));
    int r = 0;

    if (!nl)
        return -ENOMEM;
    nl->protocol = protocol;
    nl->batch_seq = 1;
    nl->netns_fd = -EBADF;
    /* kept, to open the socket again there should a conversation break */
    if (netns_fd >= 0 && (nl->netns_fd = fcntl(netns_fd, F_DUPFD_CLOEXEC, 3)) < 0)
        r = -errno;
    r = r ?: socket_open(nl);
    if (r < 0) {
        netlink_close(nl);
        return r;
    }
    *ret = nl;
    return 0;
}

int netlink_open(int netns_fd, Netlink **ret) {
    return netlink_open_protocol(netns_fd, NETLINK_ROUTE, ret);
}

void netlink_close(Netlink *nl) {
    if (!nl)
        return;
    nl_socket_free(nl->sk);
    if (nl->netns_fd >= 0)
        close(nl->netns_fd);
    addr_cache_drop(nl);
    free(nl);
}

/*
 * Before an exchange: forget the last one's kernel words, and if it broke
 * (a reply lost to an overrun, cut short, out of sequence, or not come in
 * time), start over on a new socket, so nothing left of it is read as the
 * answer to this one.
 */
int netlink_exchange_begin(Netlink *nl) {
    nl->kernel_errno = 0;
    nl->ext_ack[0] = 0;
    nl->ext_ack_errno = 0;
    if (!nl->broken)
        return 0;
    nl_socket_free(TAKE_PTR(nl->sk));
    nl->broken = false;
    return socket_open(nl);
}

/* An exchange's result; a failure that is not the kernel's answer marks
 * the conversation broken. */
static int exchange_end(Netlink *nl, int nlerr) {
    if (nlerr < 0 && nl->kernel_errno == 0)
        nl->broken = true;
    return netlink_status(nl, nlerr);
}

/* Receive until the exchange ends, with fn (NULL: none) for the answers
 * and a callback set of this call only: nothing of it stays on the socket. */
static int receive(Netlink *nl, nl_recvmsg_msg_cb_t fn, nl_recvmsg_msg_cb_t finish, void *arg) {
    struct nl_cb *base = nl_socket_get_cb(nl->sk), *cb = base ? nl_cb_clone(base) : NULL;
    int r;

    nl_cb_put(base);
    if (!cb)
        return -NLE_NOMEM;
    if (fn)
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, fn, arg);
    if (finish)
        nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, finish, arg);
    r = nl_recvmsgs(nl->sk, cb);
    nl_cb_put(cb);
    return r;
}

int netlink_request(Netlink *nl, struct nl_msg *m) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    const NetlinkBatchEntry *e;
    int r = netlink_batch_new(nl, &b);

    /* the batch takes a copy: m stays its owner's */
    r = r ?: netlink_batch_add(b, nlmsg_convert(nlmsg_hdr(m)), NULL, NULL);
    r = r < 0 ? r : netlink_batch_commit(b);
    if (r < 0)
        return r;
    e = netlink_batch_entry(b, 0);
    /* the kernel's words where netlink_kernel_message() looks for them */
    if (e->err < 0 && e->ext_ack[0]) {
        snprintf(nl->ext_ack, sizeof(nl->ext_ack), "%s", e->ext_ack);
        nl->ext_ack_errno = -e->err;
    }
    return e->err;
}

int netlink_get(Netlink *nl, struct nl_msg *m, nl_recvmsg_msg_cb_t fn, void *arg) {
    int r = netlink_exchange_begin(nl);

    if (r < 0)
        return r;
    r = nl_send_auto(nl->sk, m);
    netlink_count(nl, 1);
    if (r >= 0)
        r = receive(nl, fn, NULL, arg);
    if (r >= 0)
        /* the reply came before the ack; read the ack too, so that the
         * next request on this socket does not find it first */
        r = nl_wait_for_ack(nl->sk);
    return exchange_end(nl, r);
}

/* libnl-route's own calls (rtnl_*_add, caches) send and wait on our
 * socket: the exchange began with the caller's netlink_ready() */
int netlink_call(Netlink *nl, int nlerr) {
    int r = exchange_end(nl, nlerr);

    netlink_changed();
    return r;
}

int netlink_read(Netlink *nl, int nlerr) {
    return exchange_end(nl, nlerr);
}

/* each libnl call that follows sends one request */
int netlink_ready(Netlink *nl) {
    netlink_count(nl, 1);
    return netlink_exchange_begin(nl);
}

typedef struct DumpCall {
    nl_recvmsg_msg_cb_t fn;
    void *arg;
    int done_error; /* the error NLMSG_DONE carried */
} DumpCall;

static int on_dump_msg(struct nl_msg *msg, void *arg) {
    DumpCall *d = arg;

    return d->fn(msg, d->arg);
}

/* A dump the kernel could not finish says so in its NLMSG_DONE. */
static int on_dump_done(struct nl_msg *msg, void *arg) {
    DumpCall *d = arg;
    struct nlmsghdr *h = nlmsg_hdr(msg);

    if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) && *(int *)nlmsg_data(h) < 0)
        d->done_error = *(int *)nlmsg_data(h);
    return NL_STOP;
}

static int dump_once(Netlink *nl, int type, const void *hdr, size_t hdrlen, int target_nsid,
                     nl_recvmsg_msg_cb_t fn, void *arg) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_DUMP);
    DumpCall d = {.fn = fn, .arg = arg};
    int r = netlink_exchange_begin(nl);

    if (r < 0)
        return r;
    if (!m || nlmsg_append(m, (void *)hdr, hdrlen, NLMSG_ALIGNTO) < 0)
        return -ENOMEM;
    /* without a filter the kernel leaves out of a link dump, silently, a
     * link too large for a dump message (hundreds of alternative names) */
    if (type == RTM_GETLINK && nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
        return -ENOMEM;
    if (target_nsid >= 0 && nla_put_s32(m, IFLA_TARGET_NETNSID, target_nsid) < 0)
        return -ENOMEM;
    r = nl_send_auto(nl->sk, m);
    netlink_count(nl, 1);
    if (r >= 0)
        r = receive(nl, on_dump_msg, on_dump_done, &d);
    /* NLE_DUMP_INTR comes after the whole dump was read: the socket is
     * clean for the next try */
    if (r == -NLE_DUMP_INTR)
        return -EAGAIN;
    r = exchange_end(nl, r);
    return r < 0 ? r : d.done_error;
}

int netlink_dump_in(Netlink *nl, int type, const void *hdr, size_t hdrlen, int target_nsid,
                    nl_recvmsg_msg_cb_t fn, void (*reset)(void *arg), void *arg) {
    int r = -EAGAIN;

    for (unsigned i = 0; i < DUMP_TRIES && r == -EAGAIN; i++) {
        if (i > 0 && reset)
            reset(arg);
        r = dump_once(nl, type, hdr, hdrlen, target_nsid, fn, arg);
    }
    return r;
}

int netlink_dump(Netlink *nl, int type, const void *hdr, size_t hdrlen, nl_recvmsg_msg_cb_t fn,
                 void (*reset)(void *arg), void *arg) {
    return netlink_dump_in(nl, type, hdr, hdrlen, LINK_NETNSID_SELF, fn, reset, arg);
}

int netlink_array_add(NetlinkArray *a, const void *elem) {
    void *m;

    if (a->n >= a->max) {
        a->err = -E2BIG;
        return a->err;
    }
    m = realloc(a->v, (a->n + 1) * a->size);
    if (!m) {
        a->err = -ENOMEM;
        return a->err;
    }
    a->v = m;
    memcpy((char *)m + a->n * a->size, elem, a->size);
    a->n++;
    return 0;
}

void netlink_array_reset(void *arg) {
    NetlinkArray *a = arg;

    a->n = 0;
    a->err = 0;
}

int netlink_array_result(NetlinkArray *a, int r) {
    if (r >= 0 && a->err < 0)
        r = a->err;
    if (r < 0) {
        free(a->v);
        a->v = NULL;
        a->n = 0;
    }
    return r;
}
