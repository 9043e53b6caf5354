/* SPDX-License-Identifier: Apache-2.0 */
/* Many requests in one sendmsg: the answers read together, each mapped by its seq to its entry. */
#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "failpoint.h"
#include "log.h"
#include "netlink-private.h"

/* The kernel reports errno values below 4096; anything else is garbage. */
#define KERNEL_ERRNO_MAX 4095
/* Room an ack takes in the receive queue: the kernel counts an skb's true
 * size (its buffer and bookkeeping), not the 36 bytes of the message, and
 * an ack may carry the kernel's words. */
#define ACK_ROOM 2048
/* Entries per sendmsg at most (an iovec each). */
#define CHUNK_MAX 256

typedef struct BatchItem {
    NetlinkBatchEntry e;
    struct nl_msg *m;
    nl_recvmsg_msg_cb_t fn; /* a GET's: each reply */
    void *arg;
    size_t reply_max;
    bool get, answered;
} BatchItem;

struct NetlinkBatch {
    Netlink *nl;
    BatchItem *v;
    size_t n, cap;
    uint32_t seq0; /* entry i's seq: seq0 + i */
    bool committed;
};

int netlink_batch_new(Netlink *nl, NetlinkBatch **ret) {
    NetlinkBatch *b = calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    b->nl = nl;
    *ret = b;
    return 0;
}

void netlink_batch_free(NetlinkBatch *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        nlmsg_free(b->v[i].m);
    free(b->v);
    free(b);
}

size_t netlink_batch_n(const NetlinkBatch *b) {
    return b->n;
}

struct nl_msg *netlink_batch_msg(const NetlinkBatch *b, size_t i) {
    return i < b->n ? b->v[i].m : NULL;
}

const NetlinkBatchEntry *netlink_batch_entry(const NetlinkBatch *b, size_t i) {
    return i < b->n ? &b->v[i].e : NULL;
}

const NetlinkBatchEntry *netlink_batch_first_error(const NetlinkBatch *b) {
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].e.err < 0)
            return &b->v[i].e;
    return NULL;
}

static int item_add(NetlinkBatch *b, struct nl_msg *m, const char *what, const void *tag,
                    BatchItem **ret) {
    if (!m)
        return -ENOMEM;
    if (b->committed) {
        nlmsg_free(m);
        return -EALREADY;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        BatchItem *v = realloc(b->v, cap * sizeof(*v));

        if (!v) {
            nlmsg_free(m);
            return -ENOMEM;
        }
        b->v = v;
        b->cap = cap;
    }
    BatchItem *it = &b->v[b->n];
    *it = (BatchItem){.e = {.what = what, .tag = tag}, .m = m};
    *ret = it;
    return (int)b->n++;
}

int netlink_batch_add(NetlinkBatch *b, struct nl_msg *m, const char *what, const void *tag) {
    BatchItem *it;

    return item_add(b, m, what, tag, &it);
}

int netlink_batch_add_get(NetlinkBatch *b, struct nl_msg *m, nl_recvmsg_msg_cb_t fn, void *arg,
                          size_t reply_max, const char *what, const void *tag) {
    BatchItem *it;
    int r = item_add(b, m, what, tag, &it);

    if (r < 0)
        return r;
    it->get = true;
    it->fn = fn;
    it->arg = arg;
    it->reply_max = reply_max;
    return r;
}

/* One answer closes each entry, whatever the kernel made of it: a change
 * asks for its ack; a GET (one object, never a dump) is answered by its
 * reply, or by an error when there is none, and asks for no ack after the
 * reply (half the messages and reads of a batch of GETs). */
void netlink_batch_stamp(NetlinkBatch *b, uint32_t seq0) {
    b->seq0 = seq0;
    for (size_t i = 0; i < b->n; i++) {
        struct nlmsghdr *h = nlmsg_hdr(b->v[i].m);

        h->nlmsg_seq = seq0 + (uint32_t)i;
        h->nlmsg_pid = 0;
        if (b->v[i].get)
            h->nlmsg_flags = (uint16_t)((h->nlmsg_flags | NLM_F_REQUEST) & ~NLM_F_ACK);
        else
            h->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
    }
}

static size_t msg_len(const BatchItem *it) {
    return NLMSG_ALIGN(nlmsg_hdr(it->m)->nlmsg_len);
}

/* What an entry's answer takes of the receive queue: a change's ack, a
 * GET's reply (its buffer rounded up to a power of two at worst) or error. */
static size_t answer_room(const BatchItem *it) {
    return it->get ? 2 * it->reply_max + ACK_ROOM : ACK_ROOM;
}

size_t netlink_batch_chunk_end(const NetlinkBatch *b, size_t lo, size_t send_max, size_t recv_max) {
    size_t bytes = 0, room = 0, i;

    for (i = lo; i < b->n && i - lo < CHUNK_MAX; i++) {
        size_t len = msg_len(&b->v[i]), ans = answer_room(&b->v[i]);

        /* the first entry goes alone whatever it needs: the kernel takes
         * one answer into an empty queue, and refuses a request too long */
        if (i > lo && (bytes + len > send_max || room + ans > recv_max))
            break;
        bytes += len;
        room += ans;
    }
    return i;
}

static int ack_take(BatchItem *it, const struct nlmsghdr *h) {
    const struct nlmsgerr *e;
    int err;

    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
        return -EBADMSG;
    e = nlmsg_data(h);
    err = e->error < 0 ? -e->error : e->error;
    if (err > KERNEL_ERRNO_MAX)
        err = EIO;
    it->e.err = -err;
    it->e.ext_ack[0] = 0;
    if (err && netlink_ext_ack_text(h, h->nlmsg_len, it->e.ext_ack, sizeof(it->e.ext_ack)))
        log_emit(LOG_LVL_DEBUG, NULL, NULL, err, "netlink: %s", it->e.ext_ack);
    it->answered = true;
    return 0;
}

/* 1: the reply closed its entry (a GET's), 0: skipped, < 0: a broken conversation. */
static int reply_take(BatchItem *it, const struct nlmsghdr *h) {
    struct nl_msg *m;

    /* a control message other than an ack (a dump's end, an overrun) is
     * none a batch asks for */
    if (h->nlmsg_type < NLMSG_MIN_TYPE)
        return -EPROTO;
    /* a change's reply (a SET some family answers anyway) is skipped, as
     * libnl's wait for an ack did: only its ack counts */
    if (!it->get)
        return 0;
    if (it->fn) {
        m = nlmsg_convert((struct nlmsghdr *)h);
        if (!m)
            return -ENOMEM;
        it->fn(m, it->arg);
        nlmsg_free(m);
    }
    it->e.err = 0;
    it->e.ext_ack[0] = 0;
    it->answered = true;
    return 1;
}

int netlink_batch_take(NetlinkBatch *b, size_t lo, size_t hi, const void *buf, size_t len,
                       size_t *pending) {
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    int rem = (int)len, r;

    if (len > (size_t)NETLINK_RECV_BUF)
        return -EBADMSG;
    for (; nlmsg_ok(h, rem); h = nlmsg_next(h, &rem)) {
        uint32_t k = h->nlmsg_seq - b->seq0;
        BatchItem *it;

        /* only an answer to an entry of this chunk still due is one */
        if (k < lo || k >= hi || b->v[k].answered)
            return -EPROTO;
        it = &b->v[k];
        if (h->nlmsg_type == NLMSG_ERROR) {
            r = ack_take(it, h);
            if (r < 0)
                return r;
            (*pending)--;
        } else if ((r = reply_take(it, h)) < 0)
            return r;
        else if (r > 0)
            (*pending)--;
    }
    /* bytes left over: a message cut short */
    return rem == 0 ? 0 : -EBADMSG;
}

void netlink_batch_abort(NetlinkBatch *b) {
    for (size_t i = 0; i < b->n; i++)
        if (!b->v[i].answered) {
            b->v[i].e.err = -ECONNABORTED;
            b->v[i].e.ext_ack[0] = 0;
        }
}

static int chunk_send(NetlinkBatch *b, size_t lo, size_t hi) {
    struct iovec iov[CHUNK_MAX];
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = hi - lo};
    ssize_t n;

    for (size_t i = lo; i < hi; i++)
        iov[i - lo] =
            (struct iovec){.iov_base = nlmsg_hdr(b->v[i].m), .iov_len = msg_len(&b->v[i])};
    do
        n = sendmsg(nl_socket_get_fd(b->nl->sk), &mh, 0);
    while (n < 0 && errno == EINTR);
    netlink_count(b->nl, (unsigned)(hi - lo));
    return n < 0 ? -errno : 0;
}

static int chunk_receive(NetlinkBatch *b, size_t lo, size_t hi, uint8_t *buf) {
    size_t pending = hi - lo;
    int r;

    while (pending > 0) {
        struct iovec iov = {.iov_base = buf, .iov_len = NETLINK_RECV_BUF};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = recvmsg(nl_socket_get_fd(b->nl->sk), &mh, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            /* SO_RCVTIMEO: the answer is not coming */
            return errno == EAGAIN ? -ETIMEDOUT : -errno;
        if (n == 0 || (mh.msg_flags & MSG_TRUNC))
            return -EMSGSIZE;
        r = netlink_batch_take(b, lo, hi, buf, (size_t)n, &pending);
        if (r < 0)
            return r;
    }
    return 0;
}

static bool any_change(const NetlinkBatch *b) {
    for (size_t i = 0; i < b->n; i++)
        if (!b->v[i].get)
            return true;
    return false;
}

/* One entry per sendmsg: a test build's switch, so that a kill between two
 * requests still falls between two NICs' moves. */
static bool one_per_send(void) {
    return failpoint_enabled("nl-batch-one");
}

int netlink_batch_commit(NetlinkBatch *b) {
    Netlink *nl = b->nl;
    _cleanup_free_ uint8_t *buf = NULL;
    bool one = one_per_send();
    int r;

    if (b->committed)
        return -EALREADY;
    b->committed = true;
    if (b->n == 0)
        return 0;
    r = netlink_exchange_begin(nl);
    if (r >= 0 && !(buf = malloc(NETLINK_RECV_BUF)))
        r = -ENOMEM;
    if (r < 0) {
        netlink_batch_abort(b);
        return r;
    }
    /* a space of our own: libnl's counters stay in step for its own calls */
    netlink_batch_stamp(b, nl->batch_seq);
    nl->batch_seq += (uint32_t)b->n;
    for (size_t lo = 0, hi; r >= 0 && lo < b->n; lo = hi) {
        hi = one ? lo + 1 : netlink_batch_chunk_end(b, lo, nl->send_max, nl->recv_queue);
        r = chunk_send(b, lo, hi);
        if (r >= 0)
            r = chunk_receive(b, lo, hi, buf);
    }
    if (r < 0) {
        /* what is left on the socket would be read as the next answer */
        nl->broken = true;
        netlink_batch_abort(b);
    }
    if (any_change(b))
        netlink_changed();
    return r;
}
