/* SPDX-License-Identifier: Apache-2.0 */
/* A netdev's NAPI and queue settings: read, written back, kept as JSON;
 * against a fixture tree of plain files in a temporary directory. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "macro.h"
#include "netdev-sysfs.h"

static char root[64];

/* root/class/net/<rel> holding text, its directories made on the way */
static void put(const char *rel, const char *text) {
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/class/net/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
            *p = '/';
        }
    FILE *f = fopen(path, "we");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *get(const char *rel) {
    static char buf[256];
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/class/net/%s", root, rel);
    FILE *f = fopen(path, "re");
    assert_non_null(f);
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = 0;
    fclose(f);
    return buf;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* eth0 (ifindex 7): two receive queues, one transmit queue with BQL; a
 * stray entry the kernel does not make, and a queue with a bad number */
static int setup(void **state) {
    (void)state;
    snprintf(root, sizeof(root), "/tmp/rg-netdev-sysfs-XXXXXX");
    assert_non_null(mkdtemp(root));
    put("eth0/ifindex", "7\n");
    put("eth0/gro_flush_timeout", "0\n");
    put("eth0/napi_defer_hard_irqs", "0\n");
    put("eth0/mtu", "1500\n");
    put("eth0/queues/rx-0/rps_cpus", "00000000,00000000\n");
    put("eth0/queues/rx-0/rps_flow_cnt", "0\n");
    put("eth0/queues/rx-1/rps_cpus", "00000000,00000000\n");
    put("eth0/queues/rx-01/rps_cpus", "ffffffff\n");
    put("eth0/queues/tx-0/tx_maxrate", "0\n");
    put("eth0/queues/tx-0/byte_queue_limits/limit_max", "1879048192\n");
    put("eth0/queues/tx-0/byte_queue_limits/hold_time", "1000\n");
    put("eth0/queues/tx-0/byte_queue_limits/inflight", "0\n");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static const char *value_of(const NetdevSysfs *s, const char *key) {
    for (size_t i = 0; i < s->n; i++)
        if (streq(s->v[i].key, key))
            return s->v[i].value;
    return NULL;
}

/* What the kernel shows is kept, sorted by key, without newlines; what
 * it does not write (mtu: netlink's; inflight: read-only; rx-01) is not. */
static void test_get(void **state) {
    NetdevSysfs s = {0};

    (void)state;
    assert_int_equal(netdev_sysfs_get(root, "eth0", 7, &s), 0);
    assert_int_equal(s.n, 8); /* rx-1 has no flow table */
    assert_string_equal(value_of(&s, "gro_flush_timeout"), "0");
    assert_string_equal(value_of(&s, "queues/rx-1/rps_cpus"), "00000000,00000000");
    assert_string_equal(value_of(&s, "queues/tx-0/byte_queue_limits/limit_max"), "1879048192");
    assert_null(value_of(&s, "mtu"));
    assert_null(value_of(&s, "queues/rx-01/rps_cpus"));
    assert_null(value_of(&s, "queues/tx-0/byte_queue_limits/inflight"));
    assert_null(value_of(&s, "threaded")); /* not shown: not kept */
    for (size_t i = 1; i < s.n; i++)
        assert_true(strcmp(s.v[i - 1].key, s.v[i].key) < 0);
    netdev_sysfs_done(&s);
}

/* Another link under that name (its ifindex differs), or none: -ENODEV, as
 * a sysfs of another network namespace shows. A name that is a path: -EINVAL. */
static void test_not_that_link(void **state) {
    NetdevSysfs s = {0};
    char what[128];

    (void)state;
    assert_int_equal(netdev_sysfs_get(root, "eth0", 8, &s), -ENODEV);
    assert_int_equal(netdev_sysfs_get(root, "eth1", 7, &s), -ENODEV);
    assert_int_equal(netdev_sysfs_get(root, "../net/eth0", 7, &s), -EINVAL);
    assert_int_equal(netdev_sysfs_get(root, "..", 7, &s), -EINVAL);
    assert_int_equal(netdev_sysfs_restore(root, "eth0", 8, &s, what, sizeof(what)), -ENODEV);
}

/* The pod's values are written back where they differ and read again;
 * one that cannot be written (a file gone) is named, -EIO. */
static void test_restore(void **state) {
    NetdevSysfs s = {0};
    char what[256];

    (void)state;
    assert_int_equal(netdev_sysfs_get(root, "eth0", 7, &s), 0);
    put("eth0/gro_flush_timeout", "20000\n");
    put("eth0/queues/rx-1/rps_cpus", "00000000,00000003\n");
    assert_int_equal(netdev_sysfs_restore(root, "eth0", 7, &s, what, sizeof(what)), 0);
    assert_string_equal(get("eth0/gro_flush_timeout"), "0");
    assert_string_equal(get("eth0/queues/rx-1/rps_cpus"), "00000000,00000000");
    assert_string_equal(get("eth0/napi_defer_hard_irqs"), "0\n"); /* untouched: the same */

    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/class/net/eth0/queues/rx-1/rps_cpus", root);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0755), 0); /* nothing can write it now */
    assert_int_equal(netdev_sysfs_restore(root, "eth0", 7, &s, what, sizeof(what)), -EIO);
    assert_non_null(strstr(what, "queues/rx-1/rps_cpus not set back to 00000000,00000000"));
    assert_int_equal(rmdir(path), 0);
    netdev_sysfs_done(&s);
}

static void test_json_round_trip(void **state) {
    NetdevSysfs s = {0}, back = {0};
    json_t *j;

    (void)state;
    assert_int_equal(netdev_sysfs_get(root, "eth0", 7, &s), 0);
    assert_int_equal(netdev_sysfs_to_json(&s, &j), 0);
    assert_int_equal(netdev_sysfs_from_json(j, &back), 0);
    assert_int_equal(back.n, s.n);
    for (size_t i = 0; i < s.n; i++) {
        assert_string_equal(back.v[i].key, s.v[i].key);
        assert_string_equal(back.v[i].value, s.v[i].value);
    }
    json_decref(j);
    netdev_sysfs_done(&back);
    netdev_sysfs_done(&s);
}

/* A record names only the settings above, with values the kernel prints:
 * anything else (a path out of the device, another file, a queue number
 * with a leading zero or too large, a value with a newline or a sign) is
 * refused whole. */
static void test_json_refused(void **state) {
    static const char *const bad[] = {
        "{\"../../../../proc/sys/kernel/core_pattern\": \"0\"}",
        "{\"mtu\": \"1500\"}",
        "{\"queues/rx-01/rps_cpus\": \"0\"}",
        "{\"queues/rx-65536/rps_cpus\": \"0\"}",
        "{\"queues/rx-0/xps_cpus\": \"0\"}",
        "{\"queues/tx-0/byte_queue_limits/inflight\": \"0\"}",
        "{\"queues/rx-0/rps_cpus/\": \"0\"}",
        "{\"gro_flush_timeout\": \"0\\n1\"}",
        "{\"gro_flush_timeout\": \"-1\"}",
        "{\"gro_flush_timeout\": \"\"}",
        "{\"gro_flush_timeout\": 0}",
        "[\"gro_flush_timeout\"]",
    };
    (void)state;
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        NetdevSysfs s = {.n = 99};
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        assert_int_equal(netdev_sysfs_from_json(j, &s), -EBADMSG);
        assert_int_equal(s.n, 99); /* untouched */
        json_decref(j);
    }
    assert_true(netdev_sysfs_key_valid("queues/tx-65535/byte_queue_limits/hold_time"));
    assert_true(netdev_sysfs_key_valid("threaded"));
    assert_false(netdev_sysfs_key_valid("queues/tx-0"));
    assert_false(netdev_sysfs_key_valid(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_that_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
