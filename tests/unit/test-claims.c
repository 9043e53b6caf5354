/* SPDX-License-Identifier: Apache-2.0 */
/* Prepared DRA claims on disk: records, lookups by pod and unit, refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "claims.h"
#include "fileio.h"
#include "proc.h"
#include "strv.h"

static char dir[64];

static int setup(void **state) {
    return tmpdir_make(dir, sizeof(dir), "rg-claims");
}

static int teardown(void **state) {
    tmpdir_remove(dir);
    return 0;
}

static PreparedClaim claim(const char *uid, const char *pod, const char *tenant, const char *u1,
                           const char *u2) {
    PreparedClaim c = {0};

    snprintf(c.uid, sizeof(c.uid), "%s", uid);
    snprintf(c.ns, sizeof(c.ns), "team-a");
    snprintf(c.name, sizeof(c.name), "pod-%s-gpus", uid);
    snprintf(c.tenant, sizeof(c.tenant), "%s", tenant);
    snprintf(c.pool, sizeof(c.pool), "node-1");
    snprintf(c.pod_uid, sizeof(c.pod_uid), "%s", pod);
    snprintf(c.devices[0].request, sizeof(c.devices[0].request), "container-0-request-0");
    snprintf(c.devices[0].unit, sizeof(c.devices[0].unit), "%s", u1);
    c.n_devices = 1;
    if (u2) {
        snprintf(c.devices[1].request, sizeof(c.devices[1].request), "container-0-request-0");
        snprintf(c.devices[1].unit, sizeof(c.devices[1].unit), "%s", u2);
        c.n_devices = 2;
    }
    return c;
}

static void test_roundtrip(void **state) {
    PreparedClaim c = claim("1111-aaaa", "pod-1", "tenant-a", "rail1", "rail0"), back;
    char path[256];
    struct stat st;
    _cleanup_(strv_freep) char **l = NULL;

    assert_int_equal(claims_load(dir, "1111-aaaa", &back), -ENOENT);
    assert_int_equal(claims_save(dir, &c), 0);
    snprintf(path, sizeof(path), "%s/claims/1111-aaaa.json", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(claims_load(dir, "1111-aaaa", &back), 0);
    assert_memory_equal(&c, &back, sizeof(c));
    /* saving again (a repeated prepare) is the same record */
    assert_int_equal(claims_save(dir, &c), 0);
    assert_int_equal(claims_list(dir, &l), 0);
    assert_int_equal(strv_length(l), 1);
    assert_string_equal(l[0], "1111-aaaa");
    /* nothing else in the directory: no temp file left */
    snprintf(path, sizeof(path), "ls -A %s/claims | wc -l | grep -qx 1", dir);
    assert_int_equal(system(path), 0);
    assert_int_equal(claims_remove(dir, "1111-aaaa"), 0);
    assert_int_equal(claims_remove(dir, "1111-aaaa"), 0);
    assert_int_equal(claims_load(dir, "1111-aaaa", &back), -ENOENT);
}

static void test_lookups(void **state) {
    PreparedClaim a = claim("c-1", "pod-1", "tenant-a", "rail1", "rail0");
    PreparedClaim b = claim("c-2", "pod-1", "tenant-a", "rail3", NULL);
    PreparedClaim o = claim("c-3", "pod-2", "tenant-b", "rail5", NULL);
    _cleanup_(strv_freep) char **units = NULL, **none = NULL;
    char tenant[64], holder[64];

    assert_int_equal(claims_save(dir, &a), 0);
    assert_int_equal(claims_save(dir, &b), 0);
    assert_int_equal(claims_save(dir, &o), 0);
    assert_int_equal(claims_units_of_pod(dir, "pod-1", NULL, &units, tenant, sizeof(tenant)), 0);
    assert_int_equal(strv_length(units), 3);
    assert_string_equal(units[0], "rail0");
    assert_string_equal(units[1], "rail1");
    assert_string_equal(units[2], "rail3");
    assert_string_equal(tenant, "tenant-a");
    /* the pod's namespace checked: its claims are all of it, or none is answered */
    _cleanup_(strv_freep) char **same = NULL, **other = NULL;
    assert_int_equal(claims_units_of_pod(dir, "pod-1", "team-a", &same, tenant, sizeof(tenant)), 0);
    assert_int_equal(strv_length(same), 3);
    assert_int_equal(claims_units_of_pod(dir, "pod-1", "team-b", &other, tenant, sizeof(tenant)),
                     -EXDEV);
    assert_null(other);
    assert_int_equal(claims_units_of_pod(dir, "pod-9", NULL, &none, tenant, sizeof(tenant)), 0);
    assert_int_equal(strv_length(none), 0);
    assert_string_equal(tenant, "");

    assert_int_equal(claims_unit_holder(dir, "rail3", NULL, holder, sizeof(holder)), 0);
    assert_string_equal(holder, "c-2");
    assert_int_equal(claims_unit_holder(dir, "rail3", "c-2", holder, sizeof(holder)), -ENOENT);
    assert_int_equal(claims_unit_holder(dir, "rail7", NULL, holder, sizeof(holder)), -ENOENT);

    /* one pod with units of two tenants is never answered */
    PreparedClaim mixed = claim("c-4", "pod-2", "tenant-a", "rail2", NULL);
    _cleanup_(strv_freep) char **m = NULL;
    assert_int_equal(claims_save(dir, &mixed), 0);
    assert_int_equal(claims_units_of_pod(dir, "pod-2", NULL, &m, tenant, sizeof(tenant)), -EXDEV);
    assert_null(m);
}

static void test_refused(void **state) {
    PreparedClaim c = claim("../evil", "pod-1", "tenant-a", "rail0", NULL), back;
    char path[256], dirpath[200];

    /* a UID that is no file name is refused before anything is written */
    assert_int_equal(claims_save(dir, &c), -EINVAL);
    assert_int_equal(claims_load(dir, "../evil", &back), -EINVAL);
    assert_int_equal(claims_remove(dir, "a/b"), -EINVAL);
    snprintf(c.uid, sizeof(c.uid), "%s", "");
    assert_int_equal(claims_save(dir, &c), -EINVAL);

    /* a record under another claim's name, or not a record, is not loaded */
    c = claim("c-1", "pod-1", "tenant-a", "rail0", NULL);
    assert_int_equal(claims_save(dir, &c), 0);
    snprintf(dirpath, sizeof(dirpath), "%s/claims", dir);
    snprintf(path, sizeof(path), "%s/c-2.json", dirpath);
    char from[256];
    snprintf(from, sizeof(from), "%s/c-1.json", dirpath);
    assert_int_equal(link(from, path), 0);
    assert_int_equal(claims_load(dir, "c-2", &back), -EBADMSG);
    assert_int_equal(fileio_write_atomic(path, "{\"uid\": 1}", 10, 0600, false), 0);
    assert_int_equal(claims_load(dir, "c-2", &back), -EBADMSG);
    /* a symlink there is never followed */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    assert_int_equal(claims_load(dir, "c-2", &back), -ELOOP);
    /* and the lookups skip what they cannot read */
    _cleanup_(strv_freep) char **units = NULL;
    char tenant[64];
    assert_int_equal(claims_units_of_pod(dir, "pod-1", NULL, &units, tenant, sizeof(tenant)), 0);
    assert_int_equal(strv_length(units), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
