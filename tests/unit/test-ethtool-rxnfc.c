/* SPDX-License-Identifier: Apache-2.0 */
/* n-tuple rules and flow hash fields as a record keeps them: a round trip,
 * and records that are not whole refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ethtool-rxnfc.h"
#include "macro.h"

static void test_round_trip(void **state) {
    RxnfcRule rules[2] = {0};
    RxnfcState s = {.have_rules = true, .n_rules = 2, .rules = rules}, back = {0};
    json_t *j;

    (void)state;
    rules[0].fs.flow_type = ETHER_FLOW;
    rules[0].fs.h_u.ether_spec.h_proto = 0xf788;
    rules[0].fs.location = 9;
    rules[1].fs.flow_type = TCP_V4_FLOW | FLOW_RSS;
    rules[1].fs.ring_cookie = 3;
    rules[1].fs.location = 2;
    rules[1].rss_context = 1;
    s.hash_have = 0x3;
    s.hash[0] = 0xf0;
    s.hash[1] = 0xc0;
    uint32_t indir[4] = {0, 1, 0, 1};
    uint8_t key[4] = {0x6d, 0x5a, 0x00, 0xff};
    s.have_rss = true;
    s.rss_hfunc = 1;
    s.rss_indir_n = 4;
    s.rss_indir = indir;
    s.rss_key_n = 4;
    s.rss_key = key;
    s.have_tstamp = true;
    s.tstamp = (struct hwtstamp_config){.tx_type = HWTSTAMP_TX_ON, .rx_filter = 12};
    assert_int_equal(rxnfc_to_json(&s, &j), 0);
    assert_int_equal(rxnfc_from_json(j, &back), 0);
    json_decref(j);
    assert_true(back.have_rules);
    assert_int_equal(back.n_rules, 2);
    /* by location */
    assert_memory_equal(&back.rules[0], &rules[1], sizeof(rules[1]));
    assert_memory_equal(&back.rules[1], &rules[0], sizeof(rules[0]));
    assert_int_equal(back.hash_have, 0x3);
    assert_int_equal(back.hash[1], 0xc0);
    assert_true(back.have_rss);
    assert_int_equal(back.rss_hfunc, 1);
    assert_int_equal(back.rss_indir_n, 4);
    assert_memory_equal(back.rss_indir, indir, sizeof(indir));
    assert_int_equal(back.rss_key_n, 4);
    assert_memory_equal(back.rss_key, key, sizeof(key));
    assert_true(back.have_tstamp);
    assert_int_equal(back.tstamp.tx_type, HWTSTAMP_TX_ON);
    assert_int_equal(back.tstamp.rx_filter, 12);
    rxnfc_done(&back);

    /* no rule support: no "rules" at all, and none read back */
    s = (RxnfcState){.hash_have = 1, .hash = {0xf0}};
    assert_int_equal(rxnfc_to_json(&s, &j), 0);
    assert_null(json_object_get(j, "rules"));
    assert_int_equal(rxnfc_from_json(j, &back), 0);
    json_decref(j);
    assert_false(back.have_rules);
    assert_true(rxnfc_any(&back));
    rxnfc_done(&back);
}

/* tmpl with every SPEC replaced by spec, into buf */
static void expand(char *buf, size_t n, const char *tmpl, const char *spec) {
    size_t k = 0;

    for (const char *p = tmpl; *p && k + 1 < n;)
        if (strncmp(p, "SPEC", 4) == 0) {
            k += (size_t)snprintf(buf + k, n - k, "%s", spec);
            p += 4;
        } else
            buf[k++] = *p++;
    buf[k < n ? k : n - 1] = 0;
}

static void test_refused(void **state) {
    char spec[2 * sizeof(struct ethtool_rx_flow_spec) + 1], json[1024];
    /* a spec of all zeroes but its location, 7 (little-endian) */
    memset(spec, '0', sizeof(spec) - 1);
    spec[sizeof(spec) - 1] = 0;
    memcpy(spec + 2 * offsetof(struct ethtool_rx_flow_spec, location), "07000000", 8);
    const char *const bad[] = {
        "{\"flowHash\": {\"tcp5\": 1}}",
        "{\"flowHash\": {\"tcp4\": -1}}",
        "{\"flowHash\": {\"tcp4\": \"1\"}}",
        "{\"rules\": []}",
        "{\"flowHash\": {}, \"other\": 1}",
        "{\"flowHash\": {}, \"rss\": {\"hfunc\": 1, \"indir\": [0], \"key\": \"abc\"}}",
        "{\"flowHash\": {}, \"rss\": {\"hfunc\": 1, \"indir\": [-1], \"key\": \"\"}}",
        "{\"flowHash\": {}, \"rss\": {\"hfunc\": 256, \"indir\": [], \"key\": \"\"}}",
        "{\"flowHash\": {}, \"rss\": {\"hfunc\": 1, \"indir\": [], \"key\": \"zz\"}}",
        "{\"flowHash\": {}, \"rss\": {\"hfunc\": 1, \"indir\": []}}",
        "{\"flowHash\": {}, \"hwTstamp\": {\"flags\": 0, \"txType\": -1, \"rxFilter\": 0}}",
        "{\"flowHash\": {}, \"hwTstamp\": {\"flags\": 0, \"txType\": 1}}",
        "{\"flowHash\": {}, \"rules\": [{\"location\": 8, \"rssContext\": 0, \"spec\": \"SPEC\"}]}",
        "{\"flowHash\": {}, \"rules\": [{\"location\": 7, \"rssContext\": 0, \"spec\": "
        "\"0000\"}]}",
        "{\"flowHash\": {}, \"rules\": [{\"location\": 7, \"rssContext\": -1, \"spec\": "
        "\"SPEC\"}]}",
        "{\"flowHash\": {}, \"rules\": [{\"location\": 7, \"rssContext\": 0, \"spec\": \"SPEC\", "
        "\"x\": 1}]}",
        "{\"flowHash\": {}, \"rules\": [{\"location\": 7, \"rssContext\": 0, \"spec\": \"SPEC\"}, "
        "{\"location\": 7, \"rssContext\": 0, \"spec\": \"SPEC\"}]}",
    };
    (void)state;
    expand(json, sizeof(json),
           "{\"flowHash\": {}, \"rules\": [{\"location\": 7, \"rssContext\": 0, \"spec\": "
           "\"SPEC\"}]}",
           spec);
    RxnfcState ok = {0};
    json_t *j = json_loads(json, 0, NULL);
    assert_int_equal(rxnfc_from_json(j, &ok), 0);
    assert_int_equal(ok.rules[0].fs.location, 7);
    json_decref(j);
    rxnfc_done(&ok);
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        RxnfcState s = {.n_rules = 99};
        expand(json, sizeof(json), bad[i], spec);
        j = json_loads(json, 0, NULL);
        assert_non_null(j);
        assert_int_equal(rxnfc_from_json(j, &s), -EBADMSG);
        assert_int_equal(s.n_rules, 99); /* untouched */
        json_decref(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
