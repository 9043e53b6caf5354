/* SPDX-License-Identifier: Apache-2.0 */
/* Health and the CNI's markers: a marker written (fileio's hidden temp file,
 * then linked or renamed to the unit's id) reads that one unit once the
 * burst of events is over, not every unit at once while the CNI's moves
 * run. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "config.h"
#include "drafix.h"
#include "fileio.h"
#include "health.h"
#include "inventory.h"
#include "loop.h"
#include "state.h"
#include "proc.h"
#include "waitscale.h"

static struct {
    char tmp[128], state[192], dev[192];
    NodeConfig *c;
    Inventory *inv;
    EvLoop *loop;
    Health *h;
    int quit_timer;
} T;

static void on_quit(void *userdata) {
    ev_loop_quit(userdata);
}

/* The loop's turns for ms from now (its timers and events as in the agent). */
static void run_for(uint64_t ms) {
    ev_loop_timer_at(T.loop, T.quit_timer, clock_monotonic_ms() + ms);
    assert_int_equal(ev_loop_run(T.loop), 0);
}

/* The loop's turns until health has read want units in all, or a slow
 * machine's while; then a little longer, so that a read too many shows. */
static uint64_t run_until_reads(uint64_t want) {
    uint64_t deadline = clock_monotonic_ms() + (uint64_t)wait_scaled_ms(10000);

    while (health_reads(T.h) < want && clock_monotonic_ms() < deadline)
        run_for(20);
    run_for(100);
    return health_reads(T.h);
}

static int setup(void **state) {
    char text[1024], p[320];
    RgError err = {0};

    (void)state;
    memset(&T, 0, sizeof(T));
    assert_int_equal(tmpdir_make(T.tmp, sizeof(T.tmp), "rg-health"), 0);
    snprintf(T.state, sizeof(T.state), "%s/state", T.tmp);
    snprintf(T.dev, sizeof(T.dev), "%s/dev", T.tmp);
    snprintf(p, sizeof(p), "%s/units", T.state);
    assert_int_equal(fileio_mkdir_p(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/dev/railgate", T.dev);
    assert_int_equal(fileio_mkdir_p(p, 0755), 0);
    for (unsigned k = 0; k < 4; k++) {
        snprintf(p, sizeof(p), "%s/dev/railgate/gpu%u", T.dev, k);
        assert_int_equal(fileio_write_atomic(p, "", 0, 0600, false), 0);
    }
    snprintf(text, sizeof(text),
             "{\"stateDir\": \"%s\", \"devRoot\": \"%s\", " DRAFIX_RAILS_TENANTS "}", T.state,
             T.dev);
    if (config_parse(text, "node.json", &T.c, &err) < 0)
        fail_msg("node config: %s", err.msg);
    T.inv = drafix_inventory(T.c, 4);
    assert_non_null(T.inv);
    for (unsigned k = 0; k < 4; k++) { /* links no other test names */
        Unit *u = &T.inv->units[k];
        snprintf(u->netdev, sizeof(u->netdev), "hs%05dn%u", (int)(getpid() % 100000), k);
        snprintf(u->health_netdev, sizeof(u->health_netdev), "%s", u->netdev);
    }
    assert_int_equal(ev_loop_new(&T.loop), 0);
    T.quit_timer = ev_loop_add_timer(T.loop, on_quit, T.loop);
    assert_true(T.quit_timer >= 0);
    assert_int_equal(health_new(T.c, T.inv, &T.h), 0);
    assert_int_equal(health_start(T.h, T.loop), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    health_free(T.h);
    ev_loop_free(T.loop);
    inventory_free(T.inv);
    config_free(T.c);
    tmpdir_remove(T.tmp);
    return 0;
}

/*
 * The first reading read every unit. A claim of rail1 as the CNI makes it
 * (state_units_claim: the marker's temp file, linked to its name): nothing is
 * read while the burst may go on (a turn of the loop well inside
 * HEALTH_SETTLE_MS; before, the temp file's name re-read all four units at
 * once, the CNI's moves waiting on RTNL behind those reads), then rail1
 * alone, once. Its release the same way.
 */
static void test_marker_read_after_burst(void **state) {
    char *units[] = {"rail1"};
    uint64_t r0;

    (void)state;
    run_for(200); /* whatever the start armed */
    r0 = health_reads(T.h);
    assert_true(r0 >= 4);

    assert_int_equal(state_units_claim(T.state, units, 1, "ctr-1:eth0", NULL, NULL, 0), 0);
    run_for(10);
    assert_int_equal(health_reads(T.h), r0);
    assert_int_equal(run_until_reads(r0 + 1), r0 + 1); /* past the settle */

    assert_int_equal(state_unit_release(T.state, "rail1", "ctr-1:eth0"), 0);
    run_for(10);
    assert_int_equal(health_reads(T.h), r0 + 1);
    assert_int_equal(run_until_reads(r0 + 2), r0 + 2);
}

/* A name in the units dir that is no unit's, and not hidden: every unit,
 * at once (what it means is unknown). */
static void test_stranger_reads_all(void **state) {
    char p[320];
    uint64_t r0;

    (void)state;
    run_for(200);
    r0 = health_reads(T.h);
    snprintf(p, sizeof(p), "%s/units/stranger", T.state);
    assert_int_equal(fileio_write_atomic(p, "x", 1, 0600, false), 0);
    assert_int_equal(run_until_reads(r0 + 4), r0 + 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_marker_read_after_burst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stranger_reads_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
