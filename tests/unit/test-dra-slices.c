/* SPDX-License-Identifier: Apache-2.0 */
/* The node's ResourceSlices: their content, and keeping them published against a fake API server.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "dra-slices.h"
#include "drafix.h"
#include "fakeapi.h"
#include "fileio.h"
#include "proc.h"
#include "waitscale.h"

#define NODE "node-1"
#define NODE_UID "0b5e1d2c-aaaa-4bbb-8ccc-000000000001"

static struct {
    char tmp[64], sys[128];
    NodeConfig *c;
    Inventory *inv;
    FakeApi *api;
    KubeClient *kube;
    SlicePublisher *pub;
} T;

static int setup(void **state) {
    char text[1024], p[256];
    RgError err = {0};

    memset(&T, 0, sizeof(T));
    assert_int_equal(tmpdir_make(T.tmp, sizeof(T.tmp), "rg-slices"), 0);
    snprintf(T.sys, sizeof(T.sys), "%s/sys", T.tmp);
    /* rail 0's NIC is a PCI function under root complex pci0000:17 */
    snprintf(p, sizeof(p), "%s/bus/pci/devices", T.sys);
    assert_int_equal(fileio_mkdir_p(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/bus/pci/devices/0000:18:00.1", T.sys);
    assert_int_equal(symlink("../../../devices/pci0000:17/0000:17:01.0/0000:18:00.1", p), 0);
    snprintf(text, sizeof(text),
             "{\"mode\": \"dra\", \"sysfsRoot\": \"%s\", \"rails\": [{\"index\": 0, \"nic\": "
             "{\"name\": \"rail0\"}}, {\"index\": 1, \"nic\": {\"name\": \"rail1\"}}], "
             "\"tenants\": ["
             "{\"name\": \"tenant-a\", \"namespaces\": [\"team-a\"], \"rails\": [0], \"vrf\": "
             "{\"table\": 100}},"
             "{\"name\": \"tenant-b\", \"namespaces\": [\"team-b\"], \"rails\": [1], \"vrf\": "
             "{\"table\": 200}}]}",
             T.sys);
    if (config_parse(text, "node.json", &T.c, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(drafix_api(T.tmp, &T.api, &T.kube), 0);
    json_t *node = json_pack("{s:{s:s,s:s}}", "metadata", "name", NODE, "uid", NODE_UID);
    assert_int_equal(fakeapi_put(T.api, "/api/v1/nodes/" NODE, node), 0);
    json_decref(node);
    return 0;
}

static int teardown(void **state) {
    slice_publisher_stop(T.pub);
    kube_client_free(T.kube);
    fakeapi_stop(T.api);
    inventory_free(T.inv);
    config_free(T.c);
    tmpdir_remove(T.tmp);
    return 0;
}

static void use_inventory(unsigned n) {
    T.inv = drafix_inventory(T.c, n);
    assert_non_null(T.inv);
    snprintf(T.inv->units[0].nic_pci, sizeof(T.inv->units[0].nic_pci), "0000:18:00.1");
    snprintf(T.inv->units[0].switch_id, sizeof(T.inv->units[0].switch_id), "sw-17-01");
}

static json_t *attr(json_t *dev, const char *name, const char *type) {
    return json_object_get(json_object_get(json_object_get(dev, "attributes"), name), type);
}

static void test_content(void **state) {
    use_inventory(4);
    bool healthy[] = {true, true, false, true};
    const char *reasons[] = {NULL, NULL, "NIC link down", NULL};
    SliceInput in = {.inv = T.inv,
                     .driver = "railgate.io",
                     .node = NODE,
                     .node_uid = NODE_UID,
                     .healthy = healthy,
                     .reasons = reasons};
    json_t *devs = dra_slice_devices(&in);

    assert_int_equal(json_array_size(devs), 4);
    json_t *d0 = json_array_get(devs, 0), *d2 = json_array_get(devs, 2);
    assert_string_equal(json_string_value(json_object_get(d0, "name")), "rail0");
    assert_string_equal(json_string_value(attr(d0, "railgate.io/tenant", "string")), "tenant-a");
    assert_int_equal(json_integer_value(attr(d0, "railgate.io/rail", "int")), 0);
    assert_string_equal(json_string_value(attr(d0, "railgate.io/pcieSwitch", "string")),
                        "sw-17-01");
    assert_string_equal(json_string_value(attr(d0, "railgate.io/nic", "string")), "rail0");
    assert_string_equal(json_string_value(attr(d0, "railgate.io/rdma", "string")), "mlx5_0");
    assert_string_equal(json_string_value(attr(d0, "railgate.io/gpuUUID", "string")), "GPU-0");
    assert_string_equal(json_string_value(attr(d0, "resource.kubernetes.io/pciBusID", "string")),
                        "0000:18:00.1");
    assert_string_equal(json_string_value(attr(d0, "resource.kubernetes.io/pcieRoot", "string")),
                        "pci0000:17");
    assert_int_equal(json_integer_value(attr(d0, "resource.kubernetes.io/numaNode", "int")), 0);
    assert_null(json_object_get(d0, "taints"));
    /* a veth rail has no PCI function: no PCI attributes, none made up */
    assert_null(attr(d2, "resource.kubernetes.io/pciBusID", "string"));
    assert_string_equal(json_string_value(attr(d2, "railgate.io/tenant", "string")), "tenant-b");
    assert_int_equal(json_integer_value(attr(d2, "resource.kubernetes.io/numaNode", "int")), 1);
    /* unhealthy: NoSchedule, with the reason */
    json_t *t = json_array_get(json_object_get(d2, "taints"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "key")), "railgate.io/unhealthy");
    /* a label value, as the API server wants it */
    assert_string_equal(json_string_value(json_object_get(t, "value")), "nic-link-down");
    assert_string_equal(json_string_value(json_object_get(t, "effect")), "NoSchedule");

    json_t *spec = dra_slice_spec(&in, devs, 0, 7);
    assert_string_equal(json_string_value(json_object_get(spec, "driver")), "railgate.io");
    assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), NODE);
    json_t *pool = json_object_get(spec, "pool");
    assert_string_equal(json_string_value(json_object_get(pool, "name")), NODE);
    assert_int_equal(json_integer_value(json_object_get(pool, "generation")), 7);
    assert_int_equal(json_integer_value(json_object_get(pool, "resourceSliceCount")), 1);
    json_t *obj = dra_slice_object(&in, spec);
    json_t *owner =
        json_array_get(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Node");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), NODE_UID);
    json_decref(obj);
    json_decref(spec);
    json_decref(devs);

    /* a node of 150 units: three slices of at most 64 */
    inventory_free(T.inv);
    use_inventory(150);
    in.inv = T.inv;
    in.healthy = NULL;
    devs = dra_slice_devices(&in);
    assert_int_equal(dra_slice_count(json_array_size(devs)), 3);
    size_t sizes[] = {64, 64, 22};
    for (size_t i = 0; i < 3; i++) {
        spec = dra_slice_spec(&in, devs, i, 1);
        assert_int_equal(json_array_size(json_object_get(spec, "devices")), sizes[i]);
        assert_int_equal(json_integer_value(
                             json_object_get(json_object_get(spec, "pool"), "resourceSliceCount")),
                         3);
        json_decref(spec);
    }
    json_decref(devs);
}

/* ---- published ---- */

static json_t *our_slices(void) {
    json_t *l = fakeapi_list(T.api, DRA_SLICES_PATH), *ours = json_array(), *s;
    size_t i;

    json_array_foreach(json_object_get(l, "items"), i, s) {
        json_t *spec = json_object_get(s, "spec");
        if (strcmp(json_string_value(json_object_get(spec, "nodeName")), NODE) == 0)
            json_array_append(ours, s);
    }
    json_decref(l);
    return ours;
}

typedef bool (*cond_fn)(void *arg);

/* Wait (scaled) for cond, ticking the publisher as the agent's loop does. */
static bool wait_until(cond_fn cond, void *arg, int ms) {
    for (int waited = 0; waited <= wait_scaled_ms(ms); waited += 20) {
        if (cond(arg))
            return true;
        slice_publisher_tick(T.pub);
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return cond(arg);
}

/* n slices of ours, all of one generation above min_gen, with count n and want_devices in all */
typedef struct Want {
    size_t n, devices;
    int64_t min_gen;
    const char *tainted; /* a device that must carry the taint, or NULL for none at all */
} Want;

static int64_t generation_of(json_t *s) {
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(s, "spec"), "pool"), "generation"));
}

static bool published(void *arg) {
    const Want *w = arg;
    json_t *l = our_slices(), *s, *d;
    size_t i, j, devices = 0, taints = 0;
    int64_t gen = -1;
    bool ok = json_array_size(l) == w->n, tainted = false;

    json_array_foreach(l, i, s) {
        json_t *spec = json_object_get(s, "spec");
        int64_t g = generation_of(s);
        ok = ok && (gen < 0 || g == gen) && g > w->min_gen &&
             json_integer_value(json_object_get(json_object_get(spec, "pool"),
                                                "resourceSliceCount")) == (json_int_t)w->n;
        gen = g;
        json_array_foreach(json_object_get(spec, "devices"), j, d) {
            devices++;
            if (json_object_get(d, "taints")) {
                taints++;
                tainted = tainted ||
                          (w->tainted &&
                           strcmp(json_string_value(json_object_get(d, "name")), w->tainted) == 0);
            }
        }
    }
    json_decref(l);
    return ok && devices == w->devices && (w->tainted ? tainted && taints == 1 : taints == 0);
}

static int64_t current_generation(void) {
    json_t *l = our_slices();
    int64_t g = json_array_size(l) ? generation_of(json_array_get(l, 0)) : 0;

    json_decref(l);
    return g;
}

static void test_publish(void **state) {
    json_t *foreign =
        json_pack("{s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:[]}}", "metadata", "name",
                  "other-node-slice", "spec", "driver", "railgate.io", "nodeName", "node-2", "pool",
                  "name", "node-2", "generation", 3, "resourceSliceCount", 1, "devices");
    assert_int_equal(fakeapi_put(T.api, DRA_SLICES_PATH "/other-node-slice", foreign), 0);
    json_decref(foreign);
    use_inventory(4);
    assert_int_equal(slice_publisher_start(T.kube, T.inv, "railgate.io", NODE, &T.pub), 0);
    Want w = {.n = 1, .devices = 4, .min_gen = 0};
    assert_true(wait_until(published, &w, 10000));
    json_t *l = our_slices(), *s = json_array_get(l, 0);
    json_t *owner =
        json_array_get(json_object_get(json_object_get(s, "metadata"), "ownerReferences"), 0);
    json_t *node = fakeapi_get(T.api, "/api/v1/nodes/" NODE);
    assert_true(json_equal(json_object_get(owner, "uid"),
                           json_object_get(json_object_get(node, "metadata"), "uid")));
    assert_string_equal(json_string_value(json_object_get(owner, "name")), NODE);
    json_decref(node);
    json_decref(l);
    SliceStats st;
    slice_publisher_stats(T.pub, &st);
    assert_int_equal(st.creates, 1);

    /* kubelet starts and deletes every slice of its node: they come back */
    int64_t g = current_generation();
    json_t *all = fakeapi_list(T.api, DRA_SLICES_PATH);
    size_t i;
    json_array_foreach(json_object_get(all, "items"), i, s) {
        json_t *spec = json_object_get(s, "spec");
        if (strcmp(json_string_value(json_object_get(spec, "nodeName")), NODE) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), DRA_SLICES_PATH "/%s",
                 json_string_value(json_object_get(json_object_get(s, "metadata"), "name")));
        assert_int_equal(fakeapi_delete(T.api, path), 0);
    }
    json_decref(all);
    w.min_gen = g;
    assert_true(wait_until(published, &w, 10000));

    /* somebody edits our slice: put back as it should be */
    l = our_slices();
    s = json_deep_copy(json_array_get(l, 0));
    json_decref(l);
    char path[512];
    snprintf(path, sizeof(path), DRA_SLICES_PATH "/%s",
             json_string_value(json_object_get(json_object_get(s, "metadata"), "name")));
    json_array_remove(json_object_get(json_object_get(s, "spec"), "devices"), 0);
    assert_int_equal(fakeapi_put(T.api, path, s), 0);
    json_decref(s);
    w.min_gen = current_generation() - 1;
    assert_true(wait_until(published, &w, 10000));

    /* a unit turns unhealthy: tainted, in a new generation of the pool */
    bool healthy[] = {true, false, true, true};
    const char *reasons[] = {NULL, "GPU device node missing", NULL, NULL};
    w.min_gen = current_generation();
    w.tainted = "rail1";
    slice_publisher_set_health(T.pub, healthy, reasons);
    assert_true(wait_until(published, &w, 10000));
    /* and healthy again */
    healthy[1] = true;
    w.min_gen = current_generation();
    w.tainted = NULL;
    slice_publisher_set_health(T.pub, healthy, reasons);
    assert_true(wait_until(published, &w, 10000));

    /* the other node's slice was never touched */
    json_t *o = fakeapi_get(T.api, DRA_SLICES_PATH "/other-node-slice");
    assert_int_equal(generation_of(o), 3);
    json_decref(o);
    slice_publisher_stats(T.pub, &st);
    assert_true(st.in_sync || wait_until(published, &w, 1000));
}

static bool many_in_sync(void *arg) {
    SliceStats st;

    slice_publisher_stats(T.pub, &st);
    return st.in_sync && published(arg);
}

static void test_publish_many(void **state) {
    use_inventory(150);
    assert_int_equal(slice_publisher_start(T.kube, T.inv, "railgate.io", NODE, &T.pub), 0);
    Want w = {.n = 3, .devices = 150, .min_gen = 0};
    assert_true(wait_until(many_in_sync, &w, 10000));
    SliceStats st;
    slice_publisher_stats(T.pub, &st);
    assert_int_equal(st.creates, 3);

    /* a change rewrites all three in place with the next generation: never more slices */
    bool *healthy = calloc(150, sizeof(bool));
    for (size_t i = 0; i < 150; i++)
        healthy[i] = i != 140;
    w.min_gen = current_generation();
    w.tainted = "rail140";
    slice_publisher_set_health(T.pub, healthy, NULL);
    assert_true(wait_until(many_in_sync, &w, 10000));
    slice_publisher_stats(T.pub, &st);
    assert_int_equal(st.creates, 3);
    assert_true(st.updates >= 3);
    assert_int_equal(st.deletes, 0);
    free(healthy);

    /* a stray extra slice of our pool (a crash between two creates) goes */
    json_t *l = our_slices(), *extra = json_deep_copy(json_array_get(l, 0));
    json_decref(l);
    json_object_set_new(json_object_get(extra, "metadata"), "name", json_string("stray"));
    assert_int_equal(fakeapi_put(T.api, DRA_SLICES_PATH "/stray", extra), 0);
    json_decref(extra);
    w.min_gen = current_generation() - 1;
    assert_true(wait_until(many_in_sync, &w, 10000));
    assert_null(fakeapi_get(T.api, DRA_SLICES_PATH "/stray"));
}

static void test_api_failures(void **state) {
    use_inventory(4);
    /* the first creates fail: backoff, then published */
    fakeapi_fail_next(T.api, "POST", DRA_SLICES_PATH, 2, 500);
    assert_int_equal(slice_publisher_start(T.kube, T.inv, "railgate.io", NODE, &T.pub), 0);
    Want w = {.n = 1, .devices = 4, .min_gen = 0};
    assert_true(wait_until(published, &w, 15000));
    SliceStats st;
    slice_publisher_stats(T.pub, &st);
    assert_true(st.failures >= 2);
    assert_int_equal(st.creates, 1);
    /* the watch breaks and the history is gone: listed again, nothing made twice */
    fakeapi_compact(T.api);
    fakeapi_end_watches(T.api);
    for (int i = 0; i < 100; i++) {
        slice_publisher_stats(T.pub, &st);
        if (st.lists >= 2)
            break;
        usleep(20000);
    }
    assert_true(st.lists >= 2);
    assert_true(wait_until(published, &w, 5000));
    slice_publisher_stats(T.pub, &st);
    assert_int_equal(st.creates, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
