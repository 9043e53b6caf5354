/* SPDX-License-Identifier: Apache-2.0 */
/* A NIC's ethtool state as data: what its pieces hold, how two states differ, and JSON. */
#include "ethtool.h"

#include <linux/ethtool_netlink.h>
#include <stdio.h>

#include "ethtool-private.h"
#include "jsonread.h"

#define A(attr_, width_, name_)                                                                    \
    { .attr = (attr_), .width = (width_), .name = (name_) }

static const EthtoolAttr channels_attrs[] = {
    A(ETHTOOL_A_CHANNELS_RX_COUNT, 4, "rx"),
    A(ETHTOOL_A_CHANNELS_TX_COUNT, 4, "tx"),
    A(ETHTOOL_A_CHANNELS_OTHER_COUNT, 4, "other"),
    A(ETHTOOL_A_CHANNELS_COMBINED_COUNT, 4, "combined"),
};

static const EthtoolAttr rings_attrs[] = {
    A(ETHTOOL_A_RINGS_RX, 4, "rx"),
    A(ETHTOOL_A_RINGS_RX_MINI, 4, "rxMini"),
    A(ETHTOOL_A_RINGS_RX_JUMBO, 4, "rxJumbo"),
    A(ETHTOOL_A_RINGS_TX, 4, "tx"),
    A(ETHTOOL_A_RINGS_RX_BUF_LEN, 4, "rxBufLen"),
    A(ETHTOOL_A_RINGS_TCP_DATA_SPLIT, 1, "tcpDataSplit"),
    A(ETHTOOL_A_RINGS_CQE_SIZE, 4, "cqeSize"),
    A(ETHTOOL_A_RINGS_TX_PUSH, 1, "txPush"),
    A(ETHTOOL_A_RINGS_RX_PUSH_, 1, "rxPush"),
    A(ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN_, 4, "txPushBufLen"),
    A(ETHTOOL_A_RINGS_HDS_THRESH_, 4, "hdsThresh"),
};

static const EthtoolAttr coalesce_attrs[] = {
    A(ETHTOOL_A_COALESCE_RX_USECS, 4, "rxUsecs"),
    A(ETHTOOL_A_COALESCE_RX_MAX_FRAMES, 4, "rxMaxFrames"),
    A(ETHTOOL_A_COALESCE_RX_USECS_IRQ, 4, "rxUsecsIrq"),
    A(ETHTOOL_A_COALESCE_RX_MAX_FRAMES_IRQ, 4, "rxMaxFramesIrq"),
    A(ETHTOOL_A_COALESCE_TX_USECS, 4, "txUsecs"),
    A(ETHTOOL_A_COALESCE_TX_MAX_FRAMES, 4, "txMaxFrames"),
    A(ETHTOOL_A_COALESCE_TX_USECS_IRQ, 4, "txUsecsIrq"),
    A(ETHTOOL_A_COALESCE_TX_MAX_FRAMES_IRQ, 4, "txMaxFramesIrq"),
    A(ETHTOOL_A_COALESCE_STATS_BLOCK_USECS, 4, "statsBlockUsecs"),
    A(ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, 1, "useAdaptiveRx"),
    A(ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, 1, "useAdaptiveTx"),
    A(ETHTOOL_A_COALESCE_PKT_RATE_LOW, 4, "pktRateLow"),
    A(ETHTOOL_A_COALESCE_RX_USECS_LOW, 4, "rxUsecsLow"),
    A(ETHTOOL_A_COALESCE_RX_MAX_FRAMES_LOW, 4, "rxMaxFramesLow"),
    A(ETHTOOL_A_COALESCE_TX_USECS_LOW, 4, "txUsecsLow"),
    A(ETHTOOL_A_COALESCE_TX_MAX_FRAMES_LOW, 4, "txMaxFramesLow"),
    A(ETHTOOL_A_COALESCE_PKT_RATE_HIGH, 4, "pktRateHigh"),
    A(ETHTOOL_A_COALESCE_RX_USECS_HIGH, 4, "rxUsecsHigh"),
    A(ETHTOOL_A_COALESCE_RX_MAX_FRAMES_HIGH, 4, "rxMaxFramesHigh"),
    A(ETHTOOL_A_COALESCE_TX_USECS_HIGH, 4, "txUsecsHigh"),
    A(ETHTOOL_A_COALESCE_TX_MAX_FRAMES_HIGH, 4, "txMaxFramesHigh"),
    A(ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL, 4, "rateSampleInterval"),
    A(ETHTOOL_A_COALESCE_USE_CQE_MODE_TX, 1, "useCqeModeTx"),
    A(ETHTOOL_A_COALESCE_USE_CQE_MODE_RX, 1, "useCqeModeRx"),
    A(ETHTOOL_A_COALESCE_TX_AGGR_MAX_BYTES_, 4, "txAggrMaxBytes"),
    A(ETHTOOL_A_COALESCE_TX_AGGR_MAX_FRAMES_, 4, "txAggrMaxFrames"),
    A(ETHTOOL_A_COALESCE_TX_AGGR_TIME_USECS_, 4, "txAggrTimeUsecs"),
};

static const EthtoolAttr pause_attrs[] = {
    A(ETHTOOL_A_PAUSE_AUTONEG, 1, "autoneg"),
    A(ETHTOOL_A_PAUSE_RX, 1, "rx"),
    A(ETHTOOL_A_PAUSE_TX, 1, "tx"),
};

static const EthtoolAttr eee_attrs[] = {
    A(ETHTOOL_A_EEE_ENABLED, 1, "enabled"),
    A(ETHTOOL_A_EEE_TX_LPI_ENABLED, 1, "txLpiEnabled"),
    A(ETHTOOL_A_EEE_TX_LPI_TIMER, 4, "txLpiTimer"),
};

static const EthtoolAttr linkmodes_attrs[] = {
    A(ETHTOOL_A_LINKMODES_AUTONEG, 1, "autoneg"),
    A(ETHTOOL_A_LINKMODES_SPEED, 4, "speed"),
    A(ETHTOOL_A_LINKMODES_DUPLEX, 1, "duplex"),
    A(ETHTOOL_A_LINKMODES_MASTER_SLAVE_CFG, 1, "masterSlaveCfg"),
    A(ETHTOOL_A_LINKMODES_LANES, 4, "lanes"),
};

static const EthtoolAttr rss_attrs[] = {
    A(ETHTOOL_A_RSS_HFUNC_, 4, "hfunc"),
    A(ETHTOOL_A_RSS_INPUT_XFRM_, 4, "inputXfrm"),
};

static const EthtoolAttr fec_attrs[] = {
    A(ETHTOOL_A_FEC_AUTO, 1, "auto"),
};

/* the MDI-X control only: the port follows the module plugged in (a cable
 * changed while a pod holds the NIC is no setting of the pod's), and no NIC
 * a rail is takes a PHY address */
static const EthtoolAttr linkinfo_attrs[] = {
    A(ETHTOOL_A_LINKINFO_TP_MDIX_CTRL, 1, "mdixCtrl"),
};

static const EthtoolAttr module_attrs[] = {
    A(ETHTOOL_A_MODULE_POWER_MODE_POLICY, 1, "powerModePolicy"),
};

static const EthtoolAttr mm_attrs[] = {
    A(ETHTOOL_A_MM_PMAC_ENABLED_, 1, "pmacEnabled"),
    A(ETHTOOL_A_MM_TX_ENABLED_, 1, "txEnabled"),
    A(ETHTOOL_A_MM_TX_MIN_FRAG_SIZE_, 4, "txMinFragSize"),
    A(ETHTOOL_A_MM_VERIFY_ENABLED_, 1, "verifyEnabled"),
    A(ETHTOOL_A_MM_VERIFY_TIME_, 4, "verifyTime"),
};

static const EthtoolAttr plca_attrs[] = {
    A(ETHTOOL_A_PLCA_ENABLED_, 1, "enabled"),      A(ETHTOOL_A_PLCA_NODE_CNT_, 4, "nodeCount"),
    A(ETHTOOL_A_PLCA_NODE_ID_, 4, "nodeId"),       A(ETHTOOL_A_PLCA_TO_TMR_, 4, "toTimer"),
    A(ETHTOOL_A_PLCA_BURST_CNT_, 4, "burstCount"), A(ETHTOOL_A_PLCA_BURST_TMR_, 4, "burstTimer"),
};

static const EthtoolAttr pse_attrs[] = {
    A(ETHTOOL_A_PODL_PSE_ADMIN_CONTROL, 4, "podlAdminControl"),
    A(ETHTOOL_A_C33_PSE_ADMIN_CONTROL_, 4, "c33AdminControl"),
};

#define ATTRS(a) .attrs = (a), .n_attrs = ELEMENTSOF(a)

const EthtoolPieceInfo ethtool_piece_info[_ETHTOOL_PIECE_MAX] = {
    [ETHTOOL_FEATURES] = {.name = "features",
                          .get_cmd = ETHTOOL_MSG_FEATURES_GET,
                          .set_cmd = ETHTOOL_MSG_FEATURES_SET,
                          .bits_attr = ETHTOOL_A_FEATURES_WANTED,
                          .bits_name = "wanted"},
    [ETHTOOL_CHANNELS] = {.name = "channels",
                          .get_cmd = ETHTOOL_MSG_CHANNELS_GET,
                          .set_cmd = ETHTOOL_MSG_CHANNELS_SET,
                          ATTRS(channels_attrs)},
    [ETHTOOL_RINGS] = {.name = "rings",
                       .get_cmd = ETHTOOL_MSG_RINGS_GET,
                       .set_cmd = ETHTOOL_MSG_RINGS_SET,
                       ATTRS(rings_attrs)},
    [ETHTOOL_COALESCE] = {.name = "coalesce",
                          .get_cmd = ETHTOOL_MSG_COALESCE_GET,
                          .set_cmd = ETHTOOL_MSG_COALESCE_SET,
                          ATTRS(coalesce_attrs)},
    [ETHTOOL_PAUSE] = {.name = "pause",
                       .get_cmd = ETHTOOL_MSG_PAUSE_GET,
                       .set_cmd = ETHTOOL_MSG_PAUSE_SET,
                       ATTRS(pause_attrs)},
    [ETHTOOL_PRIVFLAGS] = {.name = "privateFlags",
                           .get_cmd = ETHTOOL_MSG_PRIVFLAGS_GET,
                           .set_cmd = ETHTOOL_MSG_PRIVFLAGS_SET,
                           .bits_attr = ETHTOOL_A_PRIVFLAGS_FLAGS,
                           .bits_name = "flags"},
    [ETHTOOL_EEE] = {.name = "eee",
                     .get_cmd = ETHTOOL_MSG_EEE_GET,
                     .set_cmd = ETHTOOL_MSG_EEE_SET,
                     ATTRS(eee_attrs),
                     .bits_attr = ETHTOOL_A_EEE_MODES_OURS,
                     .bits_name = "advertised"},
    [ETHTOOL_LINKMODES] = {.name = "linkModes",
                           .get_cmd = ETHTOOL_MSG_LINKMODES_GET,
                           .set_cmd = ETHTOOL_MSG_LINKMODES_SET,
                           ATTRS(linkmodes_attrs),
                           .bits_attr = ETHTOOL_A_LINKMODES_OURS,
                           .bits_name = "advertised"},
    [ETHTOOL_WOL] = {.name = "wol",
                     .get_cmd = ETHTOOL_MSG_WOL_GET,
                     .set_cmd = ETHTOOL_MSG_WOL_SET,
                     .bits_attr = ETHTOOL_A_WOL_MODES,
                     .bits_name = "modes",
                     .blob_attr = ETHTOOL_A_WOL_SOPASS,
                     .blob_len = 6,
                     .blob_name = "sopass"},
    [ETHTOOL_MSGLEVEL] = {.name = "msglevel",
                          .get_cmd = ETHTOOL_MSG_DEBUG_GET,
                          .set_cmd = ETHTOOL_MSG_DEBUG_SET,
                          .bits_attr = ETHTOOL_A_DEBUG_MSGMASK,
                          .bits_name = "mask"},
    [ETHTOOL_RSS] = {.name = "rss",
                     .get_cmd = ETHTOOL_MSG_RSS_GET_,
                     ATTRS(rss_attrs),
                     .blob_attr = ETHTOOL_A_RSS_HKEY_,
                     .blob_name = "key",
                     .table_attr = ETHTOOL_A_RSS_INDIR_,
                     .table_name = "indir"},
    [ETHTOOL_FEC] = {.name = "fec",
                     .get_cmd = ETHTOOL_MSG_FEC_GET,
                     .set_cmd = ETHTOOL_MSG_FEC_SET,
                     ATTRS(fec_attrs),
                     .bits_attr = ETHTOOL_A_FEC_MODES,
                     .bits_name = "modes"},
    [ETHTOOL_LINKINFO] = {.name = "linkInfo",
                          .get_cmd = ETHTOOL_MSG_LINKINFO_GET,
                          .set_cmd = ETHTOOL_MSG_LINKINFO_SET,
                          ATTRS(linkinfo_attrs)},
    [ETHTOOL_MODULE] = {.name = "module",
                        .get_cmd = ETHTOOL_MSG_MODULE_GET,
                        .set_cmd = ETHTOOL_MSG_MODULE_SET,
                        ATTRS(module_attrs)},
    [ETHTOOL_MM] = {.name = "macMerge",
                    .get_cmd = ETHTOOL_MSG_MM_GET_,
                    .set_cmd = ETHTOOL_MSG_MM_SET_,
                    ATTRS(mm_attrs)},
    [ETHTOOL_PLCA] = {.name = "plca",
                      .get_cmd = ETHTOOL_MSG_PLCA_GET_CFG_,
                      .set_cmd = ETHTOOL_MSG_PLCA_SET_CFG_,
                      ATTRS(plca_attrs)},
    [ETHTOOL_PSE] = {.name = "pse",
                     .get_cmd = ETHTOOL_MSG_PSE_GET,
                     .set_cmd = ETHTOOL_MSG_PSE_SET,
                     ATTRS(pse_attrs)},
};

const char *ethtool_piece_to_string(EthtoolPiece p) {
    return (unsigned)p < _ETHTOOL_PIECE_MAX ? ethtool_piece_info[p].name : NULL;
}

const char *ethtool_pieces_to_string(unsigned pieces, char *buf, size_t n) {
    size_t at = 0;

    if (n == 0)
        return buf;
    buf[0] = 0;
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        int k;

        if (!(pieces & (1u << p)))
            continue;
        k = snprintf(buf + at, n - at, "%s%s", at ? ", " : "", ethtool_piece_info[p].name);
        if (k < 0 || (size_t)k >= n - at)
            break;
        at += (size_t)k;
    }
    return buf;
}

void ethtool_part_done(EthtoolPart *part) {
    free(part->bits.bits);
    free(part->blob);
    free(part->table);
    *part = (EthtoolPart){0};
}

void ethtool_state_done(EthtoolState *s) {
    if (!s)
        return;
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        ethtool_part_done(&s->part[p]);
}

int ethtool_bits_add(EthtoolBitset *b, const char *name, bool on) {
    EthtoolBit *m;

    if (b->n >= ETHTOOL_BITS_MAX)
        return -E2BIG;
    if (strlen(name) >= ETHTOOL_NAME_MAX)
        return -ENAMETOOLONG;
    m = realloc(b->bits, (b->n + 1) * sizeof(*m));
    if (!m)
        return -ENOMEM;
    b->bits = m;
    m = &b->bits[b->n++];
    *m = (EthtoolBit){.on = on};
    memcpy(m->name, name, strlen(name) + 1);
    return 0;
}

/* ---- comparing ---------------------------------------------------------- */

/* A link's speed, duplex and lanes are autonegotiation's results while it is on, and
 * "unknown" while the link is down: only two known values of a forced link compare. A
 * VF or a NIC that cannot force them reports them all the same, and its carrier may
 * come or go between record and restore. */
static bool link_result(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now,
                        unsigned a) {
    uint32_t unknown = a == ETHTOOL_A_LINKMODES_DUPLEX ? 0xff /* DUPLEX_UNKNOWN */
                                                       : UINT32_MAX /* SPEED_UNKNOWN */;
    bool autoneg =
        (rec->has & (1ull << ETHTOOL_A_LINKMODES_AUTONEG)) && rec->v[ETHTOOL_A_LINKMODES_AUTONEG];

    if (p != ETHTOOL_LINKMODES ||
        (a != ETHTOOL_A_LINKMODES_SPEED && a != ETHTOOL_A_LINKMODES_DUPLEX &&
         a != ETHTOOL_A_LINKMODES_LANES))
        return false;
    return autoneg || !(rec->has & now->has & (1ull << a)) || rec->v[a] == unknown ||
           now->v[a] == unknown || (a == ETHTOOL_A_LINKMODES_SPEED && (!rec->v[a] || !now->v[a]));
}

bool ethtool_attr_differs(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now,
                          unsigned a) {
    uint64_t bit = 1ull << a;

    if (link_result(p, rec, now, a))
        return false;
    if ((rec->has & bit) != (now->has & bit))
        return true;
    return (rec->has & bit) && rec->v[a] != now->v[a];
}

const EthtoolBit *ethtool_bit_find(const EthtoolBitset *b, const char *name) {
    for (size_t i = 0; i < b->n; i++)
        if (streq(b->bits[i].name, name))
            return &b->bits[i];
    return NULL;
}

bool ethtool_bit_differs(const EthtoolBitset *now, const EthtoolBit *bit) {
    const EthtoolBit *cur = ethtool_bit_find(now, bit->name);

    return !cur || cur->on != bit->on;
}

/* Every bit on in a is on in b. */
static bool bits_on_within(const EthtoolBitset *a, const EthtoolBitset *b) {
    for (size_t i = 0; i < a->n; i++)
        if (a->bits[i].on && ethtool_bit_differs(b, &a->bits[i]))
            return false;
    return true;
}

bool ethtool_bits_differ(const EthtoolBitset *rec, const EthtoolBitset *now) {
    if (rec->exact || now->exact)
        return rec->exact != now->exact || !bits_on_within(rec, now) || !bits_on_within(now, rec);
    /* only the recorded bits: a bit the device did not let change then has no
     * recorded value to go back to */
    for (size_t i = 0; i < rec->n; i++)
        if (ethtool_bit_differs(now, &rec->bits[i]))
            return true;
    return false;
}

bool ethtool_part_differs(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];

    for (size_t i = 0; i < info->n_attrs; i++)
        if (ethtool_attr_differs(p, rec, now, info->attrs[i].attr))
            return true;
    if (info->bits_attr && ethtool_bits_differ(&rec->bits, &now->bits))
        return true;
    if (rec->blob_len != now->blob_len ||
        (rec->blob_len && memcmp(rec->blob, now->blob, rec->blob_len) != 0))
        return true;
    return rec->table_len != now->table_len ||
           (rec->table_len && memcmp(rec->table, now->table, rec->table_len * 4) != 0);
}

unsigned ethtool_state_diff(const EthtoolState *a, const EthtoolState *b) {
    unsigned d = 0;

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++) {
        const EthtoolPart *x = &a->part[p], *y = &b->part[p];

        if (x->have == ETHTOOL_UNREADABLE || y->have == ETHTOOL_UNREADABLE)
            continue;
        if (x->have != y->have || (x->have == ETHTOOL_HAVE && ethtool_part_differs(p, x, y)))
            d |= 1u << p;
    }
    return d;
}

unsigned ethtool_state_unreadable(const EthtoolState *s) {
    unsigned u = 0;

    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        if (s->part[p].have == ETHTOOL_UNREADABLE)
            u |= 1u << p;
    return u;
}

/* ---- JSON out ----------------------------------------------------------- */

static json_t *bits_to_json(const EthtoolBitset *b) {
    json_t *o = json_object();

    for (size_t i = 0; o && i < b->n; i++)
        if (json_object_set_new(o, b->bits[i].name, json_boolean(b->bits[i].on)) < 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

static json_t *hex_to_json(const uint8_t *p, size_t n) {
    _cleanup_free_ char *s = malloc(n * 2 + 1);

    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++)
        snprintf(s + i * 2, 3, "%02x", p[i]);
    s[n * 2] = 0;
    return json_string(s);
}

static json_t *table_to_json(const uint32_t *t, size_t n) {
    json_t *a = json_array();

    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer(t[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static int set_new(json_t *o, const char *key, json_t *v) {
    return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

static json_t *part_to_json(EthtoolPiece p, const EthtoolPart *part) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];
    json_auto_t *o = NULL;
    int r = 0;

    if (part->have != ETHTOOL_HAVE)
        return json_string(part->have == ETHTOOL_NONE ? "none" : "unreadable");
    o = json_object();
    if (!o)
        return NULL;
    for (size_t i = 0; r >= 0 && i < info->n_attrs; i++)
        if (part->has & (1ull << info->attrs[i].attr))
            r = set_new(o, info->attrs[i].name, json_integer(part->v[info->attrs[i].attr]));
    if (r >= 0 && info->bits_attr) {
        r = set_new(o, info->bits_name, bits_to_json(&part->bits));
        r = r ?: set_new(o, "exact", json_boolean(part->bits.exact));
    }
    if (r >= 0 && info->blob_attr && part->blob_len)
        r = set_new(o, info->blob_name, hex_to_json(part->blob, part->blob_len));
    if (r >= 0 && info->table_attr && part->table_len)
        r = set_new(o, info->table_name, table_to_json(part->table, part->table_len));
    return r < 0 ? NULL : TAKE_PTR(o);
}

int ethtool_state_to_json(const EthtoolState *s, json_t **ret) {
    json_auto_t *o = json_object();

    if (!o)
        return -ENOMEM;
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        if (set_new(o, ethtool_piece_info[p].name, part_to_json(p, &s->part[p])) < 0)
            return -ENOMEM;
    *ret = TAKE_PTR(o);
    return 0;
}

/* ---- JSON in ------------------------------------------------------------ */

static int bits_from_json(const JsonReader *jr, json_t *o, const char *path, EthtoolBitset *ret) {
    const char *name;
    json_t *v;

    if (!json_is_object(o))
        return jr_fail(jr, path, "must be an object of bit names to true or false");
    if (json_object_size(o) > ETHTOOL_BITS_MAX)
        return jr_fail(jr, path, "has more than %d bits", ETHTOOL_BITS_MAX);
    json_object_foreach(o, name, v) {
        JPath at = jpath_key(path, name);
        int r;

        if (!json_is_boolean(v))
            return jr_fail(jr, at.s, "must be true or false");
        if (!name[0] || strlen(name) >= ETHTOOL_NAME_MAX)
            return jr_fail(jr, at.s, "a bit's name is 1 to %d characters", ETHTOOL_NAME_MAX - 1);
        r = ethtool_bits_add(ret, name, json_is_true(v));
        if (r < 0)
            return r == -ENOMEM ? jr_oom(jr) : jr_fail(jr, at.s, "cannot be kept");
    }
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int blob_from_json(const JsonReader *jr, json_t *v, const char *path, size_t want,
                          EthtoolPart *ret) {
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0;

    if (!s || n == 0 || n % 2 || n / 2 > ETHTOOL_BLOB_MAX || (want && n / 2 != want))
        return jr_fail(jr, path, "must be %zu to %d bytes in lowercase hex", want ? want : 1,
                       want ? (int)want : ETHTOOL_BLOB_MAX);
    ret->blob = malloc(n / 2);
    if (!ret->blob)
        return jr_oom(jr);
    ret->blob_len = n / 2;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return jr_fail(jr, path, "must be lowercase hex");
        ret->blob[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int table_from_json(const JsonReader *jr, json_t *a, const char *path, EthtoolPart *ret) {
    size_t n = json_array_size(a);

    if (!json_is_array(a) || n == 0 || n > ETHTOOL_RSS_TABLE_MAX)
        return jr_fail(jr, path, "must be an array of 1 to %d queue numbers",
                       ETHTOOL_RSS_TABLE_MAX);
    ret->table = calloc(n, sizeof(*ret->table));
    if (!ret->table)
        return jr_oom(jr);
    ret->table_len = n;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        JPath at = jpath_index(path, i);

        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
            return jr_fail(jr, at.s, "must be an integer from 0 to %u", UINT32_MAX);
        ret->table[i] = (uint32_t)json_integer_value(v);
    }
    return 0;
}

static int part_keys_check(const JsonReader *jr, const EthtoolPieceInfo *info, json_t *o,
                           const char *path) {
    const char *known[ETHTOOL_ATTR_MAX + 6];
    size_t k = 0;

    for (size_t i = 0; i < info->n_attrs; i++)
        known[k++] = info->attrs[i].name;
    if (info->bits_attr) {
        known[k++] = info->bits_name;
        known[k++] = "exact";
    }
    if (info->blob_attr)
        known[k++] = info->blob_name;
    if (info->table_attr)
        known[k++] = info->table_name;
    known[k] = NULL;
    return jr_check_keys(jr, o, path, known);
}

static int part_attrs_from_json(const JsonReader *jr, const EthtoolPieceInfo *info, json_t *o,
                                const char *path, EthtoolPart *ret) {
    for (size_t i = 0; i < info->n_attrs; i++) {
        const EthtoolAttr *a = &info->attrs[i];
        long long v;
        int r = jr_get_int(jr, o, path, a->name, 0, a->width == 1 ? UINT8_MAX : UINT32_MAX, &v);

        if (r < 0)
            return r;
        if (r > 0) {
            ret->has |= 1ull << a->attr;
            ret->v[a->attr] = (uint32_t)v;
        }
    }
    return 0;
}

static int part_bits_from_json(const JsonReader *jr, const EthtoolPieceInfo *info, json_t *o,
                               const char *path, EthtoolPart *ret) {
    json_t *bits = json_object_get(o, info->bits_name);
    JPath at = jpath_key(path, info->bits_name);
    int r;

    if (!bits)
        return jr_missing(jr, path, info->bits_name);
    r = jr_get_bool(jr, o, path, "exact", &ret->bits.exact);
    if (r == 0)
        return jr_missing(jr, path, "exact");
    return r < 0 ? r : bits_from_json(jr, bits, at.s, &ret->bits);
}

static int part_from_json(const JsonReader *jr, EthtoolPiece p, json_t *v, EthtoolPart *ret) {
    const EthtoolPieceInfo *info = &ethtool_piece_info[p];
    JPath path = jpath_key("$", info->name);
    json_t *x;
    int r;

    if (json_is_string(v) && streq(json_string_value(v), "none"))
        return 0;
    if (json_is_string(v) && streq(json_string_value(v), "unreadable")) {
        ret->have = ETHTOOL_UNREADABLE;
        return 0;
    }
    if (!json_is_object(v))
        return jr_fail(jr, path.s, "must be an object, \"none\" or \"unreadable\"");
    ret->have = ETHTOOL_HAVE;
    r = part_keys_check(jr, info, v, path.s);
    r = r ?: part_attrs_from_json(jr, info, v, path.s, ret);
    if (r >= 0 && info->bits_attr)
        r = part_bits_from_json(jr, info, v, path.s, ret);
    if (r >= 0 && info->blob_attr && (x = json_object_get(v, info->blob_name))) {
        JPath at = jpath_key(path.s, info->blob_name);
        r = blob_from_json(jr, x, at.s, info->blob_len, ret);
    }
    if (r >= 0 && info->table_attr && (x = json_object_get(v, info->table_name))) {
        JPath at = jpath_key(path.s, info->table_name);
        r = table_from_json(jr, x, at.s, ret);
    }
    return r;
}

static int state_from_json(const JsonReader *jr, json_t *j, EthtoolState *s) {
    const char *known[_ETHTOOL_PIECE_MAX + 1] = {0};
    int r;

    if (!json_is_object(j))
        return jr_fail(jr, "$", "must be an object");
    for (unsigned p = 0; p < _ETHTOOL_PIECE_MAX; p++)
        known[p] = ethtool_piece_info[p].name;
    r = jr_check_keys(jr, j, "$", known);
    for (unsigned p = 0; r >= 0 && p < _ETHTOOL_PIECE_MAX; p++) {
        json_t *v = json_object_get(j, known[p]);

        if (!v && p >= ETHTOOL_FEC) {
            /* a record written before railgate kept these: not compared */
            s->part[p] = (EthtoolPart){.have = ETHTOOL_UNREADABLE};
            continue;
        }
        r = v ? part_from_json(jr, p, v, &s->part[p]) : jr_missing(jr, "$", known[p]);
    }
    return r;
}

int ethtool_state_from_json(json_t *j, EthtoolState *ret, RgError *err) {
    JsonReader jr = {.name = "ethtool state", .err = err};
    EthtoolState s = {0};
    int r = state_from_json(&jr, j, &s);

    if (r < 0) {
        ethtool_state_done(&s);
        return r == -ENOMEM ? r : -EBADMSG;
    }
    *ret = s;
    return 0;
}
