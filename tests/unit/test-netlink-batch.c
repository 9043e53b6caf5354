/* SPDX-License-Identifier: Apache-2.0 */
/* A netlink batch maps the kernel's answers to its entries by seq, and breaks on anything else:
 * answers constructed here, as the kernel would send them, no socket. */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "netlink-private.h"

#define SEQ0 1000u

/* A datagram being built: messages appended one after the other. */
typedef struct Gram {
    uint8_t buf[8192] __attribute__((aligned(4)));
    size_t len;
} Gram;

static struct nlmsghdr *gram_put(Gram *g, uint16_t type, uint16_t flags, uint32_t seq,
                                 size_t payload) {
    struct nlmsghdr *h = (struct nlmsghdr *)(g->buf + g->len);

    assert_true(g->len + NLMSG_SPACE(payload) <= sizeof(g->buf));
    memset(h, 0, NLMSG_SPACE(payload));
    h->nlmsg_len = NLMSG_LENGTH(payload);
    h->nlmsg_type = type;
    h->nlmsg_flags = flags;
    h->nlmsg_seq = seq;
    g->len += NLMSG_SPACE(payload);
    return h;
}

/* The ack of seq: error (0 or -errno) and, with text, the kernel's words
 * (NETLINK_CAP_ACK: the request's header only, then the TLVs). */
static void ack_put(Gram *g, uint32_t seq, int error, const char *text) {
    size_t tlv = text ? NLA_ALIGN(NLA_HDRLEN + strlen(text) + 1) : 0;
    struct nlmsghdr *h = gram_put(g, NLMSG_ERROR, NLM_F_CAPPED | (text ? NLM_F_ACK_TLVS : 0), seq,
                                  sizeof(struct nlmsgerr) + tlv);
    struct nlmsgerr *e = NLMSG_DATA(h);

    e->error = error;
    e->msg.nlmsg_len = NLMSG_HDRLEN;
    e->msg.nlmsg_seq = seq;
    if (text) {
        struct nlattr *a = (struct nlattr *)((uint8_t *)e + NLMSG_ALIGN(sizeof(*e)));
        a->nla_type = NLMSGERR_ATTR_MSG;
        a->nla_len = (uint16_t)(NLA_HDRLEN + strlen(text) + 1);
        memcpy((uint8_t *)a + NLA_HDRLEN, text, strlen(text) + 1);
    }
}

/* An RTM_NEWLINK reply for seq: ifindex with name. */
static void link_reply_put(Gram *g, uint32_t seq, int ifindex, const char *name) {
    struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
    struct nlmsghdr *src, *h;

    assert_non_null(m);
    assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
    assert_int_equal(nla_put_string(m, IFLA_IFNAME, name), 0);
    src = nlmsg_hdr(m);
    h = gram_put(g, RTM_NEWLINK, 0, seq, src->nlmsg_len - NLMSG_HDRLEN);
    memcpy(NLMSG_DATA(h), NLMSG_DATA(src), src->nlmsg_len - NLMSG_HDRLEN);
    nlmsg_free(m);
}

static NetlinkBatch *changes(size_t n) {
    NetlinkBatch *b = NULL;

    assert_int_equal(netlink_batch_new(NULL, &b), 0);
    for (size_t i = 0; i < n; i++) {
        LinkChange c = LINK_CHANGE_INIT;
        c.mtu = 1500;
        assert_int_equal(link_change_batch(b, (int)i + 1, &c, "changing", NULL), (int)i);
    }
    netlink_batch_stamp(b, SEQ0);
    return b;
}

/* Acks in any order land on their entries, each with its own errno and words. */
static void test_acks_by_seq(void **state) {
    NetlinkBatch *b = changes(3);
    Gram g = {0};
    size_t pending = 3;

    ack_put(&g, SEQ0 + 2, -EEXIST, "name taken");
    ack_put(&g, SEQ0 + 0, 0, NULL);
    ack_put(&g, SEQ0 + 1, -EINVAL, NULL);
    assert_int_equal(netlink_batch_take(b, 0, 3, g.buf, g.len, &pending), 0);
    assert_int_equal(pending, 0);
    assert_int_equal(netlink_batch_entry(b, 0)->err, 0);
    assert_int_equal(netlink_batch_entry(b, 1)->err, -EINVAL);
    assert_string_equal(netlink_batch_entry(b, 1)->ext_ack, "");
    assert_int_equal(netlink_batch_entry(b, 2)->err, -EEXIST);
    assert_string_equal(netlink_batch_entry(b, 2)->ext_ack, "name taken");
    /* the first failure in request order, not in answer order */
    assert_ptr_equal(netlink_batch_first_error(b), netlink_batch_entry(b, 1));
    netlink_batch_free(b);
}

/* An answer to no entry of the chunk, or a second ack, breaks the conversation. */
static void test_foreign_seq(void **state) {
    static const uint32_t bad[] = {SEQ0 - 1, SEQ0 + 3, SEQ0 + 2 /* outside the chunk [0, 2) */};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        NetlinkBatch *b = changes(3);
        Gram g = {0};
        size_t pending = 2;

        ack_put(&g, bad[i], 0, NULL);
        assert_int_equal(netlink_batch_take(b, 0, 2, g.buf, g.len, &pending), -EPROTO);
        netlink_batch_abort(b);
        for (size_t k = 0; k < 3; k++)
            assert_int_equal(netlink_batch_entry(b, k)->err, -ECONNABORTED);
        netlink_batch_free(b);
    }
    NetlinkBatch *b = changes(2);
    Gram g = {0};
    size_t pending = 2;
    ack_put(&g, SEQ0, 0, NULL);
    ack_put(&g, SEQ0, 0, NULL);
    assert_int_equal(netlink_batch_take(b, 0, 2, g.buf, g.len, &pending), -EPROTO);
    /* what was answered before the break keeps its answer */
    netlink_batch_abort(b);
    assert_int_equal(netlink_batch_entry(b, 0)->err, 0);
    assert_int_equal(netlink_batch_entry(b, 1)->err, -ECONNABORTED);
    netlink_batch_free(b);
}

/* An ack too short for its nlmsgerr, and a message longer than the datagram. */
static void test_truncated(void **state) {
    NetlinkBatch *b = changes(2);
    Gram g = {0};
    size_t pending = 2;
    struct nlmsghdr *h = gram_put(&g, NLMSG_ERROR, 0, SEQ0, 8);

    (void)h;
    assert_int_equal(netlink_batch_take(b, 0, 2, g.buf, g.len, &pending), -EBADMSG);
    assert_int_equal(pending, 2);
    netlink_batch_free(b);

    b = changes(2);
    g = (Gram){0};
    ack_put(&g, SEQ0, 0, NULL);
    ack_put(&g, SEQ0 + 1, 0, NULL);
    pending = 2;
    /* the second ack cut short by 4 bytes */
    assert_int_equal(netlink_batch_take(b, 0, 2, g.buf, g.len - 4, &pending), -EBADMSG);
    assert_int_equal(pending, 1);
    netlink_batch_free(b);
}

/* A GET's reply closes it (it asks for no ack); a GET answered with an error found nothing. */
static void test_get_reply_then_ack(void **state) {
    NetlinkBatch *b = NULL;
    LinkReply r0, r1, r2;
    Gram g = {0};
    size_t pending = 3;

    assert_int_equal(netlink_batch_new(NULL, &b), 0);
    assert_int_equal(link_get_batch(b, 7, NULL, LINK_NETNSID_SELF, &r0, "reading", NULL), 0);
    assert_int_equal(link_get_batch(b, 0, "rail1", LINK_NETNSID_SELF, &r1, "reading", NULL), 1);
    assert_int_equal(link_get_batch(b, 9, NULL, LINK_NETNSID_SELF, &r2, "reading", NULL), 2);
    netlink_batch_stamp(b, SEQ0);
    for (size_t i = 0; i < 3; i++) /* a GET asks for no ack; a change does */
        assert_int_equal(nlmsg_hdr(netlink_batch_msg(b, i))->nlmsg_flags & NLM_F_ACK, 0);
    link_reply_put(&g, SEQ0 + 1, 12, "rail1");
    link_reply_put(&g, SEQ0, 7, "rail0");
    ack_put(&g, SEQ0 + 2, -ENODEV, NULL);
    assert_int_equal(netlink_batch_take(b, 0, 3, g.buf, g.len, &pending), 0);
    assert_int_equal(pending, 0);
    assert_int_equal(link_reply_result(netlink_batch_entry(b, 0), &r0), 0);
    assert_int_equal(r0.link.ifindex, 7);
    assert_string_equal(r0.link.name, "rail0");
    assert_int_equal(link_reply_result(netlink_batch_entry(b, 1), &r1), 0);
    assert_int_equal(r1.link.ifindex, 12);
    assert_string_equal(r1.link.name, "rail1");
    assert_int_equal(link_reply_result(netlink_batch_entry(b, 2), &r2), -ENODEV);
    assert_false(r2.got);
    netlink_batch_free(b);

    /* an ack after a GET's reply is a second answer: the conversation is broken */
    assert_int_equal(netlink_batch_new(NULL, &b), 0);
    assert_int_equal(link_get_batch(b, 7, NULL, LINK_NETNSID_SELF, &r0, "reading", NULL), 0);
    netlink_batch_stamp(b, SEQ0);
    g = (Gram){0};
    pending = 1;
    link_reply_put(&g, SEQ0, 7, "rail0");
    ack_put(&g, SEQ0, 0, NULL);
    assert_int_equal(netlink_batch_take(b, 0, 1, g.buf, g.len, &pending), -EPROTO);
    assert_int_equal(pending, 0);
    assert_int_equal(netlink_batch_entry(b, 0)->err, 0);
    netlink_batch_free(b);

    /* a change's reply (some SETs answer) is skipped, its ack counts; a
     * control message that is no ack (a dump's end) breaks the conversation */
    b = changes(1);
    assert_int_equal(nlmsg_hdr(netlink_batch_msg(b, 0))->nlmsg_flags & NLM_F_ACK, NLM_F_ACK);
    g = (Gram){0};
    pending = 1;
    link_reply_put(&g, SEQ0, 1, "x");
    ack_put(&g, SEQ0, 0, NULL);
    assert_int_equal(netlink_batch_take(b, 0, 1, g.buf, g.len, &pending), 0);
    assert_int_equal(pending, 0);
    assert_int_equal(netlink_batch_entry(b, 0)->err, 0);
    netlink_batch_free(b);
    b = changes(1);
    g = (Gram){0};
    pending = 1;
    gram_put(&g, NLMSG_DONE, NLM_F_MULTI, SEQ0, 4);
    assert_int_equal(netlink_batch_take(b, 0, 1, g.buf, g.len, &pending), -EPROTO);
    netlink_batch_free(b);
}

/* Chunks end where the next request would pass the send limit or its
 * answers the receive queue; the first of a chunk always goes. */
static void test_chunking(void **state) {
    NetlinkBatch *b = changes(300);
    LinkChange c = LINK_CHANGE_INIT;
    struct nl_msg *m = NULL;
    size_t len;

    c.mtu = 1500;
    assert_int_equal(link_change_msg(1, &c, &m), 0);
    len = NLMSG_ALIGN(nlmsg_hdr(m)->nlmsg_len);
    nlmsg_free(m);
    /* plenty of room: 256 requests per sendmsg at most */
    assert_int_equal(netlink_batch_chunk_end(b, 0, 1 << 20, 1 << 30), 256);
    assert_int_equal(netlink_batch_chunk_end(b, 256, 1 << 20, 1 << 30), 300);
    /* exactly 3 requests' bytes, then 3 and a byte short of 4 */
    assert_int_equal(netlink_batch_chunk_end(b, 0, 3 * len, 1 << 30), 3);
    assert_int_equal(netlink_batch_chunk_end(b, 10, 4 * len - 1, 1 << 30), 13);
    /* the receive queue: an ack's room is 2048 bytes */
    assert_int_equal(netlink_batch_chunk_end(b, 0, 1 << 20, 5 * 2048), 5);
    assert_int_equal(netlink_batch_chunk_end(b, 0, 1 << 20, 5 * 2048 - 1), 4);
    /* too small for even one: one alone */
    assert_int_equal(netlink_batch_chunk_end(b, 7, 1, 1), 8);
    assert_int_equal(netlink_batch_chunk_end(b, 299, 1 << 20, 1 << 30), 300);
    netlink_batch_free(b);

    /* a GET's reply takes room too */
    assert_int_equal(netlink_batch_new(NULL, &b), 0);
    LinkReply r[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(link_get_batch(b, i + 1, NULL, LINK_NETNSID_SELF, &r[i], "", NULL), i);
    size_t one = netlink_batch_chunk_end(b, 0, 1 << 20, 1 << 30);
    assert_int_equal(one, 4);
    /* 8 KB reply budget, twice, and room for an error: 18 KB a GET */
    assert_int_equal(netlink_batch_chunk_end(b, 0, 1 << 20, 2 * (2 * 8192 + 2048)), 2);
    netlink_batch_free(b);
}

/* A batch is sent once; an entry the builder refuses is not added. */
static void test_refused_entries(void **state) {
    NetlinkBatch *b = NULL;
    LinkChange bad = LINK_CHANGE_INIT;
    LinkReply r;

    assert_int_equal(netlink_batch_new(NULL, &b), 0);
    bad.name = "a/b";
    assert_int_equal(link_change_batch(b, 1, &bad, "", NULL), -EINVAL);
    assert_int_equal(link_change_batch(b, 0, &(LinkChange)LINK_CHANGE_INIT, "", NULL), -ENODEV);
    assert_int_equal(link_get_batch(b, 0, NULL, LINK_NETNSID_SELF, &r, "", NULL), -ENODEV);
    assert_int_equal(addr_add_batch(b, 1, "10.0.0.1", "", NULL), -EINVAL);
    assert_int_equal(rule_add_batch(b, "10.0.0.1/32", 0, 1000, "", NULL), -EINVAL);
    assert_int_equal(netlink_batch_n(b), 0);
    assert_int_equal(addr_add_batch(b, 1, "10.0.0.1/24", "", NULL), 0);
    assert_int_equal(rule_add_batch(b, "10.0.0.1/32", 100, 1000, "", NULL), 1);
    RouteSpec rs = {.dst = "0.0.0.0/0", .gw = "10.0.0.254", .table = 100};
    assert_int_equal(route_add_batch(b, 1, &rs, "", NULL), 2);
    assert_null(netlink_batch_first_error(b));
    netlink_batch_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acks_by_seq), cmocka_unit_test(test_foreign_seq),
        cmocka_unit_test(test_truncated),   cmocka_unit_test(test_get_reply_then_ack),
        cmocka_unit_test(test_chunking),    cmocka_unit_test(test_refused_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
