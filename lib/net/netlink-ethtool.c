/* SPDX-License-Identifier: Apache-2.0 */
/* A NIC's ethtool state read and set through ethtool's generic netlink family (libnl-genl). */
#include "ethtool.h"

#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/param.h>

#include "ethtool-private.h"
#include "netlink-private.h"

/* Every ETHTOOL_MSG_* request nests its header in attribute 1 (ETHTOOL_A_*_HEADER). */
#define ETHTOOL_A_HEADER 1
/* Genl command numbers are u8: a bit for each says whether the family serves it. */
#define OPS_WORDS (256 / 64)
/* The most attributes a reply we read holds at the top level (RSS's newest: 8). */
#define REPLY_ATTR_MAX 40

struct EthtoolConn {
    Netlink *nl;
    int family;
    uint64_t ops[OPS_WORDS];
};

static bool family_serves(const EthtoolConn *c, unsigned cmd) {
    return cmd < 256 && (c->ops[cmd / 64] & (1ull << (cmd % 64)));
}

/* ---- the family --------------------------------------------------------- */

typedef struct FamilyReply {
    int id;
    uint64_t ops[OPS_WORDS];
} FamilyReply;

static int on_family(struct nl_msg *msg, void *arg) {
    FamilyReply *f = arg;
    struct nlattr *tb[CTRL_ATTR_MAX + 1], *op;
    int rem;

    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CTRL_ATTR_MAX, NULL) < 0 || !tb[CTRL_ATTR_FAMILY_ID] ||
        nla_len(tb[CTRL_ATTR_FAMILY_ID]) < 2)
        return NL_SKIP;
    f->id = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
    if (!tb[CTRL_ATTR_OPS])
        return NL_OK;
    nla_for_each_nested(op, tb[CTRL_ATTR_OPS], rem) {
        struct nlattr *o[CTRL_ATTR_OP_MAX + 1];
        uint32_t id;

        if (nla_parse_nested(o, CTRL_ATTR_OP_MAX, op, NULL) < 0 || !o[CTRL_ATTR_OP_ID] ||
            nla_len(o[CTRL_ATTR_OP_ID]) < 4)
            continue;
        id = nla_get_u32(o[CTRL_ATTR_OP_ID]);
        if (id < 256)
            f->ops[id / 64] |= 1ull << (id % 64);
    }
    return NL_OK;
}

/* The family's id and the commands this kernel has (6.1 has no RSS_GET). */
static int family_resolve(EthtoolConn *c) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc();
    FamilyReply f = {.id = -1};
    int r;

    if (!m ||
        !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, GENL_ID_CTRL, 0, 0, CTRL_CMD_GETFAMILY, 1) ||
        nla_put_string(m, CTRL_ATTR_FAMILY_NAME, ETHTOOL_GENL_NAME) < 0)
        return -ENOMEM;
    r = netlink_get(c->nl, m, on_family, &f);
    if (r == -ENOENT)
        return -EOPNOTSUPP;
    if (r < 0)
        return r;
    if (f.id < 0)
        return -EBADMSG;
    c->family = f.id;
    memcpy(c->ops, f.ops, sizeof(c->ops));
    return 0;
}

int ethtool_open(int netns_fd, EthtoolConn **ret) {
    _cleanup_(ethtool_closep) EthtoolConn *c = calloc(1, sizeof(*c));
    int r;

    if (!c)
        return -ENOMEM;
    r = netlink_open_protocol(netns_fd, NETLINK_GENERIC, &c->nl);
    r = r ?: family_resolve(c);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(c);
    return 0;
}

void ethtool_close(EthtoolConn *c) {
    if (!c)
        return;
    netlink_close(c->nl);
    free(c);
}

/* A GET's request is its header alone: no page of its own (a batch holds
 * one per piece per link); a SET's grows with what it sets. */
#define GET_REQUEST_SIZE 256

static int request_new(const EthtoolConn *c, unsigned cmd, int ifindex, uint32_t flags, bool get,
                       struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m =
        get ? nlmsg_alloc_size(GET_REQUEST_SIZE) : nlmsg_alloc();
    struct nlattr *h;

    if (!m || !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, 0, (uint8_t)cmd,
                           ETHTOOL_GENL_VERSION))
        return -ENOMEM;
    h = nla_nest_start(m, ETHTOOL_A_HEADER);
    if (!h || nla_put_u32(m, ETHTOOL_A_HEADER_DEV_INDEX, (uint32_t)ifindex) < 0 ||
        (flags && nla_put_u32(m, ETHTOOL_A_HEADER_FLAGS, flags) < 0))
        return -ENOMEM;
    nla_nest_end(m, h);
    *ret = TAKE_PTR(m);
    return 0;
}

/* ---- reading: the kernel's replies are input like any other ------------- */

static int attr_uint(const struct nlattr *a, unsigned width, uint32_t *ret) {
    if (nla_len(a) < (int)width)
        return -EBADMSG;
    *ret = width == 1 ? nla_get_u8((struct nlattr *)a) : nla_get_u32((struct nlattr *)a);
    return 0;
}

static int bit_parse(struct nlattr *bit, bool nomask, EthtoolBitset *ret) {
    struct nlattr *tb[ETHTOOL_A_BITSET_BIT_MAX + 1];
    char name[ETHTOOL_NAME_MAX];
    uint32_t index = 0;

    if (nla_type(bit) != ETHTOOL_A_BITSET_BITS_BIT ||
        nla_parse_nested(tb, ETHTOOL_A_BITSET_BIT_MAX, bit, NULL) < 0)
        return -EBADMSG;
    if (tb[ETHTOOL_A_BITSET_BIT_INDEX] && attr_uint(tb[ETHTOOL_A_BITSET_BIT_INDEX], 4, &index) < 0)
        return -EBADMSG;
    if (tb[ETHTOOL_A_BITSET_BIT_NAME]) {
        struct nlattr *n = tb[ETHTOOL_A_BITSET_BIT_NAME];
        size_t len = strnlen(nla_data(n), (size_t)nla_len(n));

        if (len >= ETHTOOL_NAME_MAX)
            return -EBADMSG;
        memcpy(name, nla_data(n), len);
        name[len] = 0;
    } else
        name[0] = 0;
    /* a bit the kernel has no name for (some feature bits are "") goes by its index */
    if (!name[0] && !tb[ETHTOOL_A_BITSET_BIT_INDEX])
        return -EBADMSG;
    if (!name[0])
        snprintf(name, sizeof(name), "#%u", index);
    return ethtool_bits_add(ret, name, nomask || tb[ETHTOOL_A_BITSET_BIT_VALUE]);
}

/* A verbose bitset (we never ask for compact ones): the bits it lists, each on or off;
 * with NOMASK, the list is the bits that are on. */
static int bitset_parse(struct nlattr *a, EthtoolBitset *ret) {
    struct nlattr *tb[ETHTOOL_A_BITSET_MAX + 1], *bit;
    int rem, r;

    if (nla_parse_nested(tb, ETHTOOL_A_BITSET_MAX, a, NULL) < 0 || tb[ETHTOOL_A_BITSET_VALUE])
        return -EBADMSG;
    ret->exact = tb[ETHTOOL_A_BITSET_NOMASK];
    if (!tb[ETHTOOL_A_BITSET_BITS])
        return 0;
    nla_for_each_nested(bit, tb[ETHTOOL_A_BITSET_BITS], rem) {
        r = bit_parse(bit, ret->exact, ret);
        if (r < 0)
            return r == -E2BIG || r == -ENAMETOOLONG ? -EBADMSG : r;
    }
    return 0;
}

/* The features a SET may change (hw_features less never-change) with their wanted
 * values: the active ones follow from them and from the device's state. */
static int features_parse(struct nlattr **tb, EthtoolBitset *ret) {
    EthtoolBitset hw = {0}, wanted = {0}, nochange = {0};
    int r = -EBADMSG;

    if (tb[ETHTOOL_A_FEATURES_HW] && tb[ETHTOOL_A_FEATURES_WANTED] &&
        tb[ETHTOOL_A_FEATURES_NOCHANGE])
        r = 0;
    r = r ?: bitset_parse(tb[ETHTOOL_A_FEATURES_HW], &hw);
    r = r ?: bitset_parse(tb[ETHTOOL_A_FEATURES_WANTED], &wanted);
    r = r ?: bitset_parse(tb[ETHTOOL_A_FEATURES_NOCHANGE], &nochange);
    for (size_t i = 0; r >= 0 && i < hw.n; i++) {
        const EthtoolBit *w = ethtool_bit_find(&wanted, hw.bits[i].name);

        if (!hw.bits[i].on || ethtool_bit_find(&nochange, hw.bits[i].name))
            continue;
        r = ethtool_bits_add(ret, hw.bits[i].name, w && w->on);
    }
    free(hw.bits);
    free(wanted.bits);
    free(nochange.bits);
    return r;
}

static int blob_parse(const struct nlattr *a, size_t want, EthtoolPart *ret) {
    size_t n = (size_t)nla_len(a);

    if (n == 0)
        return 0;
    if (n > ETHTOOL_BLOB_MAX || (want && n != want))
        return -EBADMSG;
    ret->blob = malloc(n);
    if (!ret->blob)
        return -ENOMEM;
    memcpy(ret->blob, nla_data(a), n);
    ret->blob_len = n;
    return 0;
}

static int table_parse(const struct nlattr *a, EthtoolPart *ret) {
    size_t n = (size_t)nla_len(a) / 4;

    if (nla_len(a) % 4 || n > ETHTOOL_RSS_TABLE_MAX)
        return -EBADMSG;
    if (n == 0)
        return 0;
    ret->table = malloc(n * 4);
    if (!ret->table)
        return -ENOMEM;
    memcpy(ret->table, nla_data(a), n * 4);
    ret->table_len = n;
    return 0;
}

typedef struct GetCall {
    EthtoolPiece piece;
    EthtoolPart *part;
    int r;
    bool got;
} GetCall;

static int part_parse(EthtoolPiece p, struct nlattr **tb, EthtoolPart *part) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];
    int r = 0;

    for (size_t i = 0; r >= 0 && i < info->n_attrs; i++) {
        const EthtoolAttr *a = &info->attrs[i];

        if (!tb[a->attr])
            continue;
        r = attr_uint(tb[a->attr], a->width, &part->v[a->attr]);
        part->has |= 1ull << a->attr;
    }
    if (r >= 0 && p == ETHTOOL_FEATURES)
        r = features_parse(tb, &part->bits);
    else if (r >= 0 && info->bits_attr && tb[info->bits_attr])
        r = bitset_parse(tb[info->bits_attr], &part->bits);
    if (r >= 0 && info->blob_attr && tb[info->blob_attr])
        r = blob_parse(tb[info->blob_attr], info->blob_len, part);
    if (r >= 0 && info->table_attr && tb[info->table_attr])
        r = table_parse(tb[info->table_attr], part);
    return r;
}

static int on_get_reply(struct nl_msg *msg, void *arg) {
    GetCall *g = arg;
    struct nlattr *tb[REPLY_ATTR_MAX + 1];

    if (g->got)
        return NL_SKIP;
    g->got = true;
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, REPLY_ATTR_MAX, NULL) < 0)
        g->r = -EBADMSG;
    else
        g->r = part_parse(g->piece, tb, g->part);
    return NL_OK;
}

/* The largest reply of a piece's GET we plan receive room for: the
 * features' four verbose bitsets, RSS's table; the others are small. */
static size_t reply_max(EthtoolPiece p) {
    return p == ETHTOOL_FEATURES ? 16384 : p == ETHTOOL_RSS ? 20480 : 2048;
}

/* A piece this kernel cannot read over netlink: none, or unreadable (one
 * it sets another way, RSS); false when it can. */
static bool piece_unserved(const EthtoolConn *c, EthtoolPiece p, EthtoolPart *ret) {
    if (family_serves(c, ethtool_piece_info[p].get_cmd))
        return false;
    /* a kernel that can neither read nor set it over netlink (MAC merge,
     * PLCA before 6.4): none; one that sets it another way (RSS): unread */
    bool settable =
        !ethtool_piece_info[p].set_cmd || family_serves(c, ethtool_piece_info[p].set_cmd);
    *ret = (EthtoolPart){.have = settable ? ETHTOOL_UNREADABLE : ETHTOOL_NONE};
    return true;
}

/* The piece's answer r (its entry's) into *ret: a device without it is no error. */
static int piece_done(GetCall *g, int r, EthtoolPart *ret) {
    if (r >= 0)
        r = g->got ? g->r : -EBADMSG;
    if (r == -EOPNOTSUPP) {
        ethtool_part_done(g->part);
        *ret = (EthtoolPart){.have = ETHTOOL_NONE};
        return 0;
    }
    if (r < 0) {
        ethtool_part_done(g->part);
        return r;
    }
    *ret = *g->part;
    return 0;
}

/* "<piece>: <the kernel's words, or strerror>" into buf. */
static void explain_text(EthtoolPiece p, int r, const char *ack, char *buf, size_t n) {
    if (ack && ack[0])
        snprintf(buf, n, "%s: %s (%s)", ethtool_piece_info[p].name, strerror(-r), ack);
    else
        snprintf(buf, n, "%s: %s", ethtool_piece_info[p].name, strerror(-r));
}

static void explain(EthtoolConn *c, EthtoolPiece p, int r, char *buf, size_t n) {
    char ack[256];

    explain_text(p, r, netlink_kernel_message(c->nl, r, ack, sizeof(ack)) ? ack : NULL, buf, n);
}

/* One link's GETs in a batch: a call and a part per piece. */
typedef struct LinkRead {
    GetCall g[_ETHTOOL_PIECE_MAX];
    EthtoolPart part[_ETHTOOL_PIECE_MAX];
    int entry[_ETHTOOL_PIECE_MAX]; /* its entry; -1: not asked (unserved) */
} LinkRead;

static int link_read_add(EthtoolConn *c, NetlinkBatch *b, int ifindex, LinkRead *lr,
                         EthtoolState *s) {
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        struct nl_msg *m = NULL;
        int r;

        lr->entry[p] = -1;
        lr->part[p] = (EthtoolPart){.have = ETHTOOL_HAVE};
        lr->g[p] = (GetCall){.piece = p, .part = &lr->part[p]};
        if (piece_unserved(c, p, &s->part[p]))
            continue;
        r = request_new(c, ethtool_piece_info[p].get_cmd, ifindex, 0, true, &m);
        r = r
                ?: netlink_batch_add_get(b, m, on_get_reply, &lr->g[p], reply_max(p),
                                         ethtool_piece_info[p].name, NULL);
        if (r < 0)
            return r;
        lr->entry[p] = r;
    }
    return 0;
}

/* One link's answers into s; the first piece that failed, in piece order, into err. */
static int link_read_done(NetlinkBatch *b, int ifindex, LinkRead *lr, EthtoolState *s,
                          RgError *err) {
    int first = 0;
    char why[320];

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        const NetlinkBatchEntry *e;
        int r;

        if (lr->entry[p] < 0)
            continue;
        e = netlink_batch_entry(b, (size_t)lr->entry[p]);
        r = piece_done(&lr->g[p], e->err, &s->part[p]);
        if (r < 0 && first == 0) {
            first = r;
            explain_text(p, r, e->ext_ack, why, sizeof(why));
        }
        /* a failed piece holds nothing: the others are freed with s */
    }
    if (first == 0)
        return 0;
    ethtool_state_done(s);
    return rg_error(err, first, 0, "reading the ethtool state of ifindex %d: %s", ifindex, why);
}

int ethtool_state_get_many(EthtoolConn *c, const int *ifindex, size_t n, EthtoolState *ret,
                           int *ret_r, RgError *errs) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    _cleanup_free_ LinkRead *lr = calloc(n ? n : 1, sizeof(*lr));
    int r, first = 0;

    if (!lr)
        return -ENOMEM;
    r = netlink_batch_new(c->nl, &b);
    for (size_t i = 0; i < n; i++)
        ret[i] = (EthtoolState){0};
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = link_read_add(c, b, ifindex[i], &lr[i], &ret[i]);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            ret_r[i] = rg_error(&errs[i], r, 0, "reading the ethtool state of ifindex %d: %s",
                                ifindex[i], strerror(-r));
        return r;
    }
    /* a conversation that broke leaves its entries -ECONNABORTED: each
     * link not fully answered fails on its first such piece */
    (void)netlink_batch_commit(b);
    for (size_t i = 0; i < n; i++) {
        ret_r[i] = link_read_done(b, ifindex[i], &lr[i], &ret[i], &errs[i]);
        if (ret_r[i] < 0 && first == 0)
            first = ret_r[i];
    }
    return first;
}

int ethtool_state_get(EthtoolConn *c, int ifindex, EthtoolState *ret, RgError *err) {
    EthtoolState s;
    int r, k;

    r = ethtool_state_get_many(c, &ifindex, 1, &s, &k, err);
    if (r < 0)
        return r;
    *ret = s;
    return 0;
}

/* ---- setting back ------------------------------------------------------- */

static int put_bit(struct nl_msg *m, const EthtoolBit *b) {
    struct nlattr *n = nla_nest_start(m, ETHTOOL_A_BITSET_BITS_BIT);
    int r;

    if (!n)
        return -ENOMEM;
    /* "#<index>": the kernel gave the bit no name */
    if (b->name[0] == '#')
        r = nla_put_u32(m, ETHTOOL_A_BITSET_BIT_INDEX, (uint32_t)strtoul(b->name + 1, NULL, 10));
    else
        r = nla_put_string(m, ETHTOOL_A_BITSET_BIT_NAME, b->name);
    if (r >= 0 && b->on)
        r = nla_put_flag(m, ETHTOOL_A_BITSET_BIT_VALUE);
    if (r < 0)
        return -ENOMEM;
    nla_nest_end(m, n);
    return 0;
}

/* The bits of rec that differ in now, as a bitset with a mask: only the bits listed
 * change. An exact set also turns off the bits now on that rec does not list. (Not
 * NOMASK: kernels before the fix of 2023 did not clear the unlisted bits of one.) */
static int put_bits(struct nl_msg *m, unsigned attr, const EthtoolBitset *rec,
                    const EthtoolBitset *now) {
    struct nlattr *set = nla_nest_start(m, (int)attr), *bits;
    int r = 0;

    if (!set || !(bits = nla_nest_start(m, ETHTOOL_A_BITSET_BITS)))
        return -ENOMEM;
    for (size_t i = 0; r >= 0 && i < rec->n; i++)
        if (ethtool_bit_differs(now, &rec->bits[i]))
            r = put_bit(m, &rec->bits[i]);
    for (size_t i = 0; r >= 0 && rec->exact && i < now->n; i++)
        if (now->bits[i].on && !ethtool_bit_find(rec, now->bits[i].name)) {
            EthtoolBit off = now->bits[i];

            off.on = false;
            r = put_bit(m, &off);
        }
    if (r < 0)
        return r;
    nla_nest_end(m, bits);
    nla_nest_end(m, set);
    return 0;
}

static int put_attrs(struct nl_msg *m, EthtoolPiece p, const EthtoolPart *rec,
                     const EthtoolPart *now) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];

    for (size_t i = 0; i < info->n_attrs; i++) {
        const EthtoolAttr *a = &info->attrs[i];
        int r;

        /* an attribute the device reports only now has no recorded value to send */
        if (!(rec->has & (1ull << a->attr)) || !ethtool_attr_differs(p, rec, now, a->attr))
            continue;
        r = a->width == 1 ? nla_put_u8(m, a->attr, (uint8_t)rec->v[a->attr])
                          : nla_put_u32(m, a->attr, rec->v[a->attr]);
        if (r < 0)
            return -ENOMEM;
    }
    return 0;
}

static bool blob_differs(const EthtoolPart *rec, const EthtoolPart *now) {
    return rec->blob_len != now->blob_len ||
           (rec->blob_len && memcmp(rec->blob, now->blob, rec->blob_len) != 0);
}

/* One SET request for piece p, with what differs between rec and now. */
static int piece_set(EthtoolConn *c, int ifindex, EthtoolPiece p, const EthtoolPart *rec,
                     const EthtoolPart *now) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r;

    /* no reply: what the kernel made of it is read back after every piece */
    r = request_new(c, info->set_cmd, ifindex, ETHTOOL_FLAG_OMIT_REPLY, false, &m);
    r = r ?: put_attrs(m, p, rec, now);
    if (r >= 0 && info->bits_attr && ethtool_bits_differ(&rec->bits, &now->bits))
        r = put_bits(m, info->bits_attr, &rec->bits, &now->bits);
    if (r >= 0 && info->blob_attr && rec->blob_len && blob_differs(rec, now) &&
        nla_put(m, info->blob_attr, (int)rec->blob_len, rec->blob) < 0)
        r = -ENOMEM;
    return r < 0 ? r : netlink_request(c->nl, m);
}

typedef struct Report {
    char text[sizeof(((RgError *)0)->msg)];
    size_t at;
    int r; /* the first SET refusal, else -EIO, else ETHTOOL_CANNOT_RESTORE */
} Report;

static void report_add(Report *rep, int r, const char *fmt, ...) _printf_(3, 4);
static void report_add(Report *rep, int r, const char *fmt, ...) {
    size_t left = sizeof(rep->text) - rep->at;
    va_list ap;
    int k;

    if (rep->r == 0 || rep->r == ETHTOOL_CANNOT_RESTORE ||
        (rep->r == -EIO && r != -EIO && r != ETHTOOL_CANNOT_RESTORE))
        rep->r = r;
    if (rep->at > 0 && left > 2) {
        memcpy(rep->text + rep->at, "; ", 3);
        rep->at += 2;
        left -= 2;
    }
    va_start(ap, fmt);
    k = vsnprintf(rep->text + rep->at, left, fmt, ap);
    va_end(ap);
    /* a message cut short stays cut: the pieces named first are the first tried */
    if (k > 0)
        rep->at += MIN((size_t)k, left - 1);
}

static bool settable(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now) {
    return ethtool_piece_info[p].set_cmd && rec->have == ETHTOOL_HAVE && now->have == ETHTOOL_HAVE;
}

/* Set each piece of now that differs from recorded; the refusals into rep. */
static void pieces_set(EthtoolConn *c, int ifindex, const EthtoolState *recorded,
                       const EthtoolState *now, Report *rep, unsigned *ret_set) {
    unsigned differ = ethtool_state_diff(recorded, now), set = 0;

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        const EthtoolPart *rec = &recorded->part[p], *cur = &now->part[p];
        int r;

        if (rec->have == ETHTOOL_HAVE && cur->have == ETHTOOL_UNREADABLE) {
            /* recorded on a kernel that could read it: this one cannot tell */
            report_add(rep, ETHTOOL_CANNOT_RESTORE,
                       "%s: cannot be restored (this kernel cannot read it to compare)",
                       ethtool_piece_info[p].name);
            continue;
        }
        if (!(differ & (1u << p)))
            continue;
        if (!settable(p, rec, cur)) {
            report_add(rep, ETHTOOL_CANNOT_RESTORE, "%s: cannot be restored (%s)",
                       ethtool_piece_info[p].name,
                       !ethtool_piece_info[p].set_cmd ? "read-only over netlink"
                       : rec->have == ETHTOOL_HAVE    ? "the device no longer has it"
                                                      : "the device did not have it");
            continue;
        }
        r = piece_set(c, ifindex, p, rec, cur);
        if (r >= 0)
            set |= 1u << p;
        else {
            char why[320];

            explain(c, p, r, why, sizeof(why));
            report_add(rep, r, "%s", why);
        }
    }
    *ret_set = set;
}

int ethtool_state_restore(EthtoolConn *c, int ifindex, const EthtoolState *recorded, RgError *err) {
    EthtoolState now = {0}, after = {0};
    Report rep = {0};
    unsigned set = 0, still;
    int r;

    r = ethtool_state_get(c, ifindex, &now, err);
    if (r < 0)
        return r;
    pieces_set(c, ifindex, recorded, &now, &rep, &set);
    ethtool_state_done(&now);
    if (set == 0 && rep.r == 0)
        return 0;
    r = ethtool_state_get(c, ifindex, &after, err);
    if (r < 0)
        return r;
    /* accepted, yet not as recorded: a driver that adjusted or ignored a value */
    still = ethtool_state_diff(recorded, &after) & set;
    ethtool_state_done(&after);
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        if (still & (1u << p))
            report_add(&rep, -EIO, "%s: still differs after it was set",
                       ethtool_piece_info[p].name);
    if (rep.r == 0)
        return 0;
    return rg_error(err, rep.r, 0, "restoring the ethtool state of ifindex %d: %s", ifindex,
                    rep.text);
}
