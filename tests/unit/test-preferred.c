/* SPDX-License-Identifier: Apache-2.0 */
/* GetPreferredAllocation policy on an 8-unit, 4-switch, 2-NUMA tenant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "preferred.h"

/* rails 0-7; switch s<k/2>; NUMA 0 for rails 0-3, NUMA 1 for rails 4-7 */
static Unit units[8];

static int setup(void **state) {
    for (unsigned i = 0; i < 8; i++) {
        memset(&units[i], 0, sizeof(units[i]));
        snprintf(units[i].id, sizeof(units[i].id), "rail%u", i);
        units[i].rail = i;
        units[i].numa = i < 4 ? 0 : 1;
        snprintf(units[i].switch_id, sizeof(units[i].switch_id), "sw%u", i / 2);
    }
    return 0;
}

/* Run the policy on rails listed in avail/must; compare with want (rail numbers). */
static void check(const char *avail, const char *must, size_t size, const char *want) {
    const Unit *a[8], *m[8], *out[8];
    size_t na = 0, nm = 0;
    char got[64] = "";

    for (const char *p = avail; *p; p++)
        a[na++] = &units[*p - '0'];
    for (const char *p = must; *p; p++)
        m[nm++] = &units[*p - '0'];
    size_t n = preferred_select(a, na, m, nm, size, out);
    for (size_t i = 0; i < n; i++)
        got[i] = (char)('0' + out[i]->rail);
    got[n] = 0;
    assert_string_equal(got, want);
}

static void test_one_switch_first(void **state) {
    check("01234567", "", 2, "01");
}

static void test_switch_best_fit(void **state) {
    /* sw0 has one left, sw1 and sw2 two: the first full-fitting switch */
    check("0234567", "", 2, "23");
    /* one unit: take the lone one on sw0 and keep full switches whole */
    check("0234567", "", 1, "0");
    check("12345", "", 1, "1");
}

static void test_one_numa_when_no_switch_fits(void **state) {
    check("01234567", "", 4, "0123");
    check("0124567", "", 4, "4567");
    check("0124567", "", 3, "012");
}

static void test_fewest_numa(void **state) {
    check("01234567", "", 6, "012345");
    check("0134567", "", 7, "4567013");
}

static void test_must_include(void **state) {
    check("01234567", "5", 2, "54");
    /* must-include on two switches: same NUMA node still wins */
    check("01234567", "02", 3, "021");
    /* must-include on both NUMA nodes: fill from them, nothing else first */
    check("01234567", "07", 3, "071");
}

static void test_never_outside_available(void **state) {
    check("16", "", 2, "16");
    check("16", "", 3, "16");
    check("", "", 2, "");
}

static void test_unknown_topology(void **state) {
    for (unsigned i = 0; i < 8; i++) {
        units[i].numa = -1;
        units[i].switch_id[0] = 0;
    }
    check("7531", "", 2, "13");
    setup(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_one_switch_first, setup),
        cmocka_unit_test_setup(test_switch_best_fit, setup),
        cmocka_unit_test_setup(test_one_numa_when_no_switch_fits, setup),
        cmocka_unit_test_setup(test_fewest_numa, setup),
        cmocka_unit_test_setup(test_must_include, setup),
        cmocka_unit_test_setup(test_never_outside_available, setup),
        cmocka_unit_test_setup(test_unknown_topology, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
