/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the rtnetlink layer: the connection and what its files share. */
#pragma once

#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#include "netlink.h"

struct nl_cache;

/* A connection of another netlink protocol (NETLINK_GENERIC), with the same
 * namespace, ack and extended-ack handling as netlink_open()'s. */
int netlink_open_protocol(int netns_fd, int protocol, Netlink **ret);

struct Netlink {
    struct nl_sock *sk;
    int protocol;      /* NETLINK_ROUTE, or NETLINK_GENERIC for a genl family's wrapper */
    int netns_fd;      /* where sk lives (a dup), -1: the opener's namespace */
    bool broken;       /* the last exchange left sk out of step: open a new one */
    int kernel_errno;  /* of the last NLMSG_ERROR, until netlink_status() takes it */
    char ext_ack[256]; /* the kernel's text for ext_ack_errno */
    int ext_ack_errno;
    struct nl_cache *addrs;         /* addr_list()'s dump */
    int addrs_ifindex;              /* the link it is of; 0: every link's */
    unsigned long addrs_generation; /* netlink_generation() when it was taken */
    uint32_t batch_seq; /* the next batch's first seq (its own space, see netlink-batch.c) */
    size_t send_max;    /* the longest sendmsg the kernel takes (sk_sndbuf - 32) */
    size_t recv_queue;  /* the socket's receive queue (sk_rcvbuf) */
};

/* Our read buffer: replies are read once, into this (no MSG_PEEK to size
 * each one first). The kernel sizes dump datagrams to the reader's buffer;
 * the largest single message is a link with hundreds of alternative names
 * (about 70 KB). One that does not fit breaks the conversation (see
 * exchange_begin()), it is never read in part. */
#define NETLINK_RECV_BUF (256 * 1024)

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_msg *, nlmsg_free);

/* 0, the kernel's errno of the request, or libnl's code translated; takes
 * the kernel errno, so the next request starts clean. */
int netlink_status(Netlink *nl, int nlerr);
/* Before a libnl-route call that converses on nl->sk itself (rtnl_*_add,
 * caches): start the exchange (a broken socket is replaced). */
int netlink_ready(Netlink *nl);
/* After it: its result as -errno; netlink_call() counts a change. */
int netlink_call(Netlink *nl, int nlerr);
int netlink_read(Netlink *nl, int nlerr);
/* Send m and wait for the kernel's ack: a change (a batch of one: the
 * kernel's words of a refusal in nl->ext_ack, as netlink_kernel_message() reads). */
int netlink_request(Netlink *nl, struct nl_msg *m);
/* Before an exchange: the last one's words forgotten, a broken socket replaced. */
int netlink_exchange_begin(Netlink *nl);
/* The kernel's extended-ack text of NLMSG_ERROR h (len bytes from h) into
 * buf; false when it gave none. */
bool netlink_ext_ack_text(const struct nlmsghdr *h, size_t len, char *buf, size_t n);
/* One sendmsg of msgs netlink requests on nl's protocol, for RAILGATE_NL_STATS. */
void netlink_count(const Netlink *nl, unsigned msgs);

/* ---- batches (netlink-batch.c) ---- */

/* A change: the batch takes m (also on failure). The entry's index, or -errno. */
int netlink_batch_add(NetlinkBatch *b, struct nl_msg *m, const char *what, const void *tag);
/* A GET (never a dump): fn is called with its reply, which closes the entry
 * (it asks for no ack; an error closes one that has none); reply_max: the
 * largest reply expected, so that a chunk's answers fit the receive queue.
 * The batch takes m. The entry's index, or -errno. */
int netlink_batch_add_get(NetlinkBatch *b, struct nl_msg *m, nl_recvmsg_msg_cb_t fn, void *arg,
                          size_t reply_max, const char *what, const void *tag);
/* For tests, the parts of netlink_batch_commit() that need no socket: the
 * entries numbered from seq0 (seq, flags); the end of the chunk that starts
 * at lo within send_max request bytes and recv_max answer bytes; one datagram
 * of answers to the chunk [lo, hi) taken, *pending counting down the
 * answers still due (-EPROTO, -EBADMSG, -ENOMEM: the conversation is
 * broken); entry i's request. */
void netlink_batch_stamp(NetlinkBatch *b, uint32_t seq0);
struct nl_msg *netlink_batch_msg(const NetlinkBatch *b, size_t i);
size_t netlink_batch_chunk_end(const NetlinkBatch *b, size_t lo, size_t send_max, size_t recv_max);
int netlink_batch_take(NetlinkBatch *b, size_t lo, size_t hi, const void *buf, size_t len,
                       size_t *pending);
/* Every entry not answered: -ECONNABORTED (its outcome unknown). */
void netlink_batch_abort(NetlinkBatch *b);
/* The fd of nl's socket now (tests shrink its queue). */
int netlink_socket_fd(Netlink *nl);

/* Request builders (each sender is a batch of one of them): *ret a new message. */
int link_change_msg(int ifindex, const LinkChange *c, struct nl_msg **ret);
int link_get_msg(int ifindex, const char *name, int target_nsid, struct nl_msg **ret);
int addr_add_msg(int ifindex, const char *cidr, struct nl_msg **ret);
int route_add_msg(int ifindex, const RouteSpec *r, struct nl_msg **ret);
int rule_msg(const char *src_cidr, uint32_t table, uint32_t prio, bool add, struct nl_msg **ret);
/* Send m (a GET) and hand its answer to fn. */
int netlink_get(Netlink *nl, struct nl_msg *m, nl_recvmsg_msg_cb_t fn, void *arg);
/* A dump of type with header hdr, each message to fn; taken again when the
 * kernel marks it interrupted, after reset(arg) forgets the partial one. */
int netlink_dump(Netlink *nl, int type, const void *hdr, size_t hdrlen, nl_recvmsg_msg_cb_t fn,
                 void (*reset)(void *arg), void *arg);
/* The same of the namespace with id target_nsid as nl's names it
 * (IFLA_TARGET_NETNSID, an rtnetlink attribute; LINK_NETNSID_SELF: nl's). */
int netlink_dump_in(Netlink *nl, int type, const void *hdr, size_t hdrlen, int target_nsid,
                    nl_recvmsg_msg_cb_t fn, void (*reset)(void *arg), void *arg);

/* A dump's answers collected in an array: elements of size bytes, at most
 * max of them; err the first failure (the answers after it may be dropped). */
typedef struct NetlinkArray {
    void *v;
    size_t n, size, max;
    int err;
} NetlinkArray;
#define NETLINK_ARRAY_INIT(type, limit)                                                            \
    { .size = sizeof(type), .max = (limit) }
/* A copy of *elem appended: 0, or -E2BIG (max reached) or -ENOMEM, also in a->err. */
int netlink_array_add(NetlinkArray *a, const void *elem);
/* netlink_dump()'s reset: the partial answers forgotten. arg is a
 * NetlinkArray, or a struct that begins with one. */
void netlink_array_reset(void *arg);
/* The dump's result r, or a->err where the dump itself succeeded; on a
 * failure the array is freed (a->v NULL, a->n 0). */
int netlink_array_result(NetlinkArray *a, int r);

/* Every change through this layer counts one. */
void netlink_changed(void);
unsigned long netlink_generation(void);
void addr_cache_drop(Netlink *nl);

/* Attributes of kernels newer than the UAPI headers railgate builds with
 * (Debian 12's are 6.1's): their numbers are fixed by the kernel's ABI. */
#define RG_IFLA_GSO_IPV4_MAX_SIZE 63 /* 6.3 */
#define RG_IFLA_GRO_IPV4_MAX_SIZE 64 /* 6.3 */
#define RG_IFLA_MAX 64
#define RG_IFLA_MACVLAN_BC_CUTOFF 9 /* 6.4 */
#define RG_IFLA_MACVLAN_MAX 9

/* netlink-settings.c: a link's LinkSettings from its RTM_NEWLINK (tb parsed
 * to RG_IFLA_MAX) and a macvlan's IFLA_INFO_DATA; the ones a link_change()
 * request carries. */
struct ifinfomsg;
void link_settings_parse(const struct ifinfomsg *ifi, struct nlattr **tb, LinkSettings *s);
void link_settings_parse_macvlan(struct nlattr *data, LinkSettings *s);
int link_settings_put(struct nl_msg *m, const LinkSettings *s);

struct Cidr;
struct nl_addr;
/* c as libnl's address with prefix length prefix (full length: one host). */
int netlink_nl_addr(const struct Cidr *c, unsigned prefix, struct nl_addr **ret);
#define NETLINK_HOST_PREFIX(c) ((c)->family == AF_INET ? 32u : 128u)
