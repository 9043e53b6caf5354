/* SPDX-License-Identifier: Apache-2.0 */
/* A NIC's ethtool state as data: the JSON the CNI keeps round-trips, bad records are refused
 * naming the field, and the diff counts only what a SET can change. */
#include <errno.h>
#include <jansson.h>
#include <linux/ethtool_netlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ethtool.h"

static void have(EthtoolState *s, EthtoolPiece p) {
    s->part[p].have = ETHTOOL_HAVE;
}

static void val(EthtoolState *s, EthtoolPiece p, unsigned attr, uint32_t v) {
    have(s, p);
    s->part[p].has |= 1ull << attr;
    s->part[p].v[attr] = v;
}

static void bit(EthtoolState *s, EthtoolPiece p, const char *name, bool on) {
    EthtoolBitset *b = &s->part[p].bits;

    have(s, p);
    b->bits = realloc(b->bits, (b->n + 1) * sizeof(*b->bits));
    assert_non_null(b->bits);
    b->bits[b->n] = (EthtoolBit){.on = on};
    snprintf(b->bits[b->n].name, sizeof(b->bits[b->n].name), "%s", name);
    b->n++;
}

/* Every piece, each with what it can hold. */
static void full_state(EthtoolState *s) {
    static const uint8_t key[] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2};
    static const uint8_t sopass[] = {1, 2, 3, 4, 5, 6};

    *s = (EthtoolState){0};
    bit(s, ETHTOOL_FEATURES, "rx-gro-list", false);
    bit(s, ETHTOOL_FEATURES, "tx-tcp-segmentation", true);
    bit(s, ETHTOOL_FEATURES, "#61", true);
    val(s, ETHTOOL_CHANNELS, ETHTOOL_A_CHANNELS_COMBINED_COUNT, 8);
    val(s, ETHTOOL_RINGS, ETHTOOL_A_RINGS_RX, 4096);
    val(s, ETHTOOL_RINGS, ETHTOOL_A_RINGS_TCP_DATA_SPLIT, 2);
    val(s, ETHTOOL_COALESCE, ETHTOOL_A_COALESCE_RX_USECS, 3);
    val(s, ETHTOOL_COALESCE, ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, 1);
    val(s, ETHTOOL_PAUSE, ETHTOOL_A_PAUSE_RX, 1);
    bit(s, ETHTOOL_PRIVFLAGS, "legacy-rx", true);
    s->part[ETHTOOL_PRIVFLAGS].bits.exact = true;
    val(s, ETHTOOL_EEE, ETHTOOL_A_EEE_TX_LPI_TIMER, UINT32_MAX);
    bit(s, ETHTOOL_EEE, "1000baseT/Full", true);
    val(s, ETHTOOL_LINKMODES, ETHTOOL_A_LINKMODES_AUTONEG, 1);
    val(s, ETHTOOL_LINKMODES, ETHTOOL_A_LINKMODES_SPEED, 1000);
    bit(s, ETHTOOL_LINKMODES, "100baseT/Full", false);
    bit(s, ETHTOOL_LINKMODES, "1000baseT/Full", true);
    bit(s, ETHTOOL_WOL, "magic", true);
    have(s, ETHTOOL_WOL);
    s->part[ETHTOOL_WOL].blob = malloc(sizeof(sopass));
    memcpy(s->part[ETHTOOL_WOL].blob, sopass, sizeof(sopass));
    s->part[ETHTOOL_WOL].blob_len = sizeof(sopass);
    have(s, ETHTOOL_MSGLEVEL);
    s->part[ETHTOOL_MSGLEVEL].bits.exact = true; /* the empty mask */
    val(s, ETHTOOL_RSS, 3 /* ETHTOOL_A_RSS_HFUNC */, 1);
    s->part[ETHTOOL_RSS].blob = malloc(sizeof(key));
    memcpy(s->part[ETHTOOL_RSS].blob, key, sizeof(key));
    s->part[ETHTOOL_RSS].blob_len = sizeof(key);
    s->part[ETHTOOL_RSS].table = calloc(128, sizeof(uint32_t));
    for (unsigned i = 0; i < 128; i++)
        s->part[ETHTOOL_RSS].table[i] = i % 8;
    s->part[ETHTOOL_RSS].table_len = 128;
}

static json_t *to_json(const EthtoolState *s) {
    json_t *j = NULL;

    assert_int_equal(ethtool_state_to_json(s, &j), 0);
    return j;
}

static void test_round_trip(void **state) {
    EthtoolState s, back;
    json_t *j, *again;
    char *text;
    RgError err = {0};

    full_state(&s);
    j = to_json(&s);
    text = json_dumps(j, JSON_SORT_KEYS);
    json_decref(j);
    j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(j);
    assert_int_equal(ethtool_state_from_json(j, &back, &err), 0);
    assert_int_equal(ethtool_state_diff(&s, &back), 0);
    again = to_json(&back);
    assert_true(json_equal(j, again));
    /* what the record says, for a person reading it */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "pause"), "rx")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "rings"), "rx")), 4096);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "wol"), "sopass")),
                        "010203040506");
    assert_true(json_is_true(
        json_object_get(json_object_get(json_object_get(j, "features"), "wanted"), "#61")));
    assert_true(json_is_true(json_object_get(json_object_get(j, "privateFlags"), "exact")));
    free(text);
    json_decref(j);
    json_decref(again);
    ethtool_state_done(&back);
    ethtool_state_done(&s);
    ethtool_state_done(NULL);
}

static void test_none_and_unreadable(void **state) {
    EthtoolState s = {0}, back;
    RgError err = {0};
    json_t *j;

    s.part[ETHTOOL_RSS].have = ETHTOOL_UNREADABLE;
    j = to_json(&s);
    assert_string_equal(json_string_value(json_object_get(j, "rss")), "unreadable");
    assert_string_equal(json_string_value(json_object_get(j, "eee")), "none");
    assert_int_equal(ethtool_state_from_json(j, &back, &err), 0);
    assert_int_equal(back.part[ETHTOOL_RSS].have, ETHTOOL_UNREADABLE);
    assert_int_equal(back.part[ETHTOOL_EEE].have, ETHTOOL_NONE);
    assert_int_equal(ethtool_state_unreadable(&back), 1u << ETHTOOL_RSS);
    ethtool_state_done(&back);
    /* a record written before FEC, link info, module, MAC merge, PLCA and
     * PSE were kept: those are not compared (unreadable), the rest as kept */
    for (unsigned p = ETHTOOL_FEC; p < _ETHTOOL_PIECE_MAX; p++)
        json_object_del(j, ethtool_piece_to_string(p));
    assert_int_equal(ethtool_state_from_json(j, &back, &err), 0);
    for (unsigned p = ETHTOOL_FEC; p < _ETHTOOL_PIECE_MAX; p++)
        assert_int_equal(back.part[p].have, ETHTOOL_UNREADABLE);
    assert_int_equal(back.part[ETHTOOL_EEE].have, ETHTOOL_NONE);
    ethtool_state_done(&back);
    /* but one that lacks a piece kept from the start is refused */
    json_object_del(j, "eee");
    assert_int_equal(ethtool_state_from_json(j, &back, &err), -EBADMSG);
    json_decref(j);
}

/* Each edit of a good record, and the path the refusal must name. */
typedef struct Bad {
    const char *piece;
    const char *set; /* JSON for the piece, or NULL to remove it */
    const char *path;
} Bad;

static void test_bad_input(void **state) {
    static const Bad bad[] = {
        {"rings", NULL, "$.rings: is required"},
        {"rings", "7", "$.rings: must be an object"},
        {"rings", "\"gone\"", "$.rings: must be an object"},
        {"rings", "{\"rx\": -1}", "$.rings.rx: must be an integer from 0 to 4294967295"},
        {"rings", "{\"rx\": 4294967296}", "$.rings.rx"},
        {"rings", "{\"tcpDataSplit\": 256}",
         "$.rings.tcpDataSplit: must be an integer from 0 to 255"},
        {"rings", "{\"rx\": 1, \"bogus\": 2}", "$.rings"},
        {"rings", "{\"rx\": \"1\"}", "$.rings.rx"},
        {"features", "{\"exact\": false}", "$.features.wanted: is required"},
        {"features", "{\"wanted\": {}}", "$.features.exact: is required"},
        {"features", "{\"wanted\": {\"rx-gro\": 1}, \"exact\": false}",
         "$.features.wanted.rx-gro: must be true or false"},
        {"features", "{\"wanted\": {\"\": true}, \"exact\": false}", "$.features.wanted."},
        {"features",
         "{\"wanted\": {\"a-feature-name-much-longer-than-31\": true}, \"exact\": false}",
         "a bit's name is 1 to 31 characters"},
        {"features", "{\"wanted\": [], \"exact\": false}", "$.features.wanted: must be an object"},
        {"wol", "{\"modes\": {}, \"exact\": false, \"sopass\": \"0102\"}",
         "$.wol.sopass: must be 6 to 6 bytes"},
        {"rss", "{\"key\": \"6D5A\"}", "$.rss.key: must be lowercase hex"},
        {"rss", "{\"key\": \"6d5\"}", "$.rss.key"},
        {"rss", "{\"indir\": [0, -1]}", "$.rss.indir[1]: must be an integer"},
        {"rss", "{\"indir\": []}", "$.rss.indir: must be an array of 1 to 4096"},
    };
    EthtoolState s;
    json_t *good;

    full_state(&s);
    good = to_json(&s);
    ethtool_state_done(&s);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = json_deep_copy(good);
        EthtoolState ret = {.part[0].has = 42};
        RgError err = {0};

        if (bad[i].set)
            json_object_set_new(j, bad[i].piece, json_loads(bad[i].set, JSON_DECODE_ANY, NULL));
        else
            json_object_del(j, bad[i].piece);
        assert_int_equal(ethtool_state_from_json(j, &ret, &err), -EBADMSG);
        if (!strstr(err.msg, bad[i].path))
            fail_msg("case %zu: '%s' does not name '%s'", i, err.msg, bad[i].path);
        assert_int_equal(ret.part[0].has, 42); /* untouched */
        json_decref(j);
    }
    /* not an object at all, and a key that is no piece */
    {
        EthtoolState ret;
        RgError err = {0};
        json_t *j = json_deep_copy(good);

        json_object_set_new(j, "xdp", json_string("none"));
        assert_int_equal(ethtool_state_from_json(j, &ret, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "xdp"));
        json_decref(j);
        j = json_array();
        assert_int_equal(ethtool_state_from_json(j, &ret, &err), -EBADMSG);
        json_decref(j);
    }
    json_decref(good);
}

static void test_diff(void **state) {
    EthtoolState a, b;
    char buf[64];

    full_state(&a);
    full_state(&b);
    assert_int_equal(ethtool_state_diff(&a, &b), 0);
    /* a feature's wanted value */
    b.part[ETHTOOL_FEATURES].bits.bits[0].on = true;
    assert_int_equal(ethtool_state_diff(&a, &b), 1u << ETHTOOL_FEATURES);
    b.part[ETHTOOL_FEATURES].bits.bits[0].on = false;
    /* autonegotiation on: speed is its result, not a setting */
    b.part[ETHTOOL_LINKMODES].v[ETHTOOL_A_LINKMODES_SPEED] = 100;
    assert_int_equal(ethtool_state_diff(&a, &b), 0);
    a.part[ETHTOOL_LINKMODES].v[ETHTOOL_A_LINKMODES_AUTONEG] = 0;
    b.part[ETHTOOL_LINKMODES].v[ETHTOOL_A_LINKMODES_AUTONEG] = 0;
    assert_int_equal(ethtool_state_diff(&a, &b), 1u << ETHTOOL_LINKMODES);
    /* a forced link that went down says SPEED_UNKNOWN: no setting changed */
    b.part[ETHTOOL_LINKMODES].v[ETHTOOL_A_LINKMODES_SPEED] = UINT32_MAX;
    assert_int_equal(ethtool_state_diff(&a, &b), 0);
    b.part[ETHTOOL_LINKMODES].v[ETHTOOL_A_LINKMODES_SPEED] = 1000;
    /* an exact set: one bit more on is a difference */
    bit(&b, ETHTOOL_PRIVFLAGS, "disable-fw-lldp", true);
    b.part[ETHTOOL_MSGLEVEL].bits.exact = true;
    bit(&b, ETHTOOL_MSGLEVEL, "drv", true);
    assert_int_equal(ethtool_state_diff(&a, &b), 1u << ETHTOOL_PRIVFLAGS | 1u << ETHTOOL_MSGLEVEL);
    assert_string_equal(ethtool_pieces_to_string(ethtool_state_diff(&a, &b), buf, sizeof(buf)),
                        "privateFlags, msglevel");
    /* an attribute only one side reports; an RSS table entry */
    b.part[ETHTOOL_RINGS].has |= 1ull << ETHTOOL_A_RINGS_TX;
    b.part[ETHTOOL_RSS].table[5] = 0;
    assert_true(ethtool_state_diff(&a, &b) & 1u << ETHTOOL_RINGS);
    assert_true(ethtool_state_diff(&a, &b) & 1u << ETHTOOL_RSS);
    /* presence; and unreadable is not compared */
    b.part[ETHTOOL_RSS].have = ETHTOOL_UNREADABLE;
    assert_false(ethtool_state_diff(&a, &b) & 1u << ETHTOOL_RSS);
    b.part[ETHTOOL_PAUSE].have = ETHTOOL_NONE;
    assert_true(ethtool_state_diff(&a, &b) & 1u << ETHTOOL_PAUSE);
    assert_string_equal(ethtool_piece_to_string(ETHTOOL_LINKMODES), "linkModes");
    assert_null(ethtool_piece_to_string(_ETHTOOL_PIECE_MAX));
    ethtool_state_done(&a);
    ethtool_state_done(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_none_and_unreadable),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
