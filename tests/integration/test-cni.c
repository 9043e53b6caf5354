/* SPDX-License-Identifier: Apache-2.0 */
/* The railgate CNI binary run as a runtime runs it, on rails of the kind the harness names
 * (veth; dummy or macvlan, anchored) in network namespaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "boottime.h"
#include "cnienv.h"
#include "fileio.h"
#include "proc.h"
#include "state.h"
#include "testns.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"

static CniEnvT env;

typedef CniPod Pod;

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(cnienv_setup(&env, CNIENV_RAILS), 0);
    return 0;
}

static int group_teardown(void **state) {
    cnienv_teardown(&env);
    return 0;
}

static void pod_new(Pod *p, const char *ns, const char *resource, char *const *ids, size_t n) {
    assert_int_equal(cnienv_pod_new(&env, p, "pod", ns, resource, ids, n), 0);
}

static int run(Pod *p, const char *cmd, const char *conf, char *const *extra, CniRun *r) {
    return cnienv_run(&env, "railgate", cmd, p->container, p->netns, "eth0", p->ns, p->name, conf,
                      extra, r);
}

static int add(Pod *p, const char *version, const char *extra_json, CniRun *r) {
    char *conf = cnienv_conf(version, extra_json);
    int rc = run(p, "ADD", conf, NULL, r);

    free(conf);
    if (r->status == 0)
        p->result = strdup(r->raw);
    return rc;
}

/* DEL as the runtime sends it: the config with the final ADD result. */
static void add_ok(Pod *p) {
    CniRun r;

    assert_int_equal(add(p, "1.1.0", NULL, &r), 0);
    if (r.status != 0)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
}

static void del_ok(Pod *p) {
    char extra[9000] = "";
    CniRun r;

    if (p->result)
        snprintf(extra, sizeof(extra), "\"prevResult\": %s", p->result);
    char *conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(run(p, "DEL", conf, NULL, &r), 0);
    if (r.status != 0)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
}

static int error_code(const CniRun *r) {
    return (int)json_integer_value(json_object_get(r->out, "code"));
}

static const char *error_msg(const CniRun *r) {
    const char *m = json_string_value(json_object_get(r->out, "msg"));
    return m ? m : "";
}

static bool host_has(const char *dev) {
    char args[64];

    snprintf(args, sizeof(args), "link show dev %s", dev);
    return ip_cmd(NULL, args) == 0;
}

/* A host rail as setup made it: name, MTU 1500, up, 10.99.<k>.1/24. */
static void assert_host_rail(unsigned k) {
    char dev[32], args[64], addr[32];

    snprintf(dev, sizeof(dev), "rail-nic%u", k);
    snprintf(args, sizeof(args), "link show dev %s", dev);
    json_t *l = ip_json(NULL, args);
    assert_non_null(l);
    json_t *o = json_array_get(l, 0);
    assert_int_equal(json_integer_value(json_object_get(o, "mtu")), 1500);
    char *flags = json_dumps(json_object_get(o, "flags"), JSON_COMPACT);
    bool up = flags && strstr(flags, "\"UP\"");
    free(flags);
    assert_true(up);
    json_decref(l);
    snprintf(args, sizeof(args), "addr show dev %s", dev);
    snprintf(addr, sizeof(addr), "10.99.%u.1/24", k);
    assert_true(ip_has(NULL, args, addr));
}

static void assert_pod_rail(const Pod *p, unsigned k, unsigned table) {
    char dev[16], args[96], want[96];

    snprintf(dev, sizeof(dev), "rail%u", k);
    snprintf(args, sizeof(args), "link show dev %s", dev);
    assert_true(ip_has(p->nsname, args, "mtu 9000"));
    assert_true(ip_has(p->nsname, args, ",UP"));
    snprintf(args, sizeof(args), "addr show dev %s", dev);
    snprintf(want, sizeof(want), "inet 10.%u.0.2/24", 100 + k);
    assert_true(ip_has(p->nsname, args, want));
    snprintf(args, sizeof(args), "route show table %u", table);
    snprintf(want, sizeof(want), "default via 10.%u.0.1 dev %s", 100 + k, dev);
    assert_true(ip_has(p->nsname, args, want));
    snprintf(want, sizeof(want), "10.64.0.0/10 via 10.%u.0.1 dev %s", 100 + k, dev);
    assert_true(ip_has(p->nsname, args, want));
    snprintf(want, sizeof(want), "from 10.%u.0.2 lookup %u", 100 + k, table);
    assert_true(ip_has(p->nsname, "rule show", want));
}

static void test_version(void **state) {
    CniRun r;

    assert_int_equal(cnienv_run(&env, "railgate", "VERSION", NULL, NULL, NULL, NULL, NULL,
                                "{\"cniVersion\": \"1.0.0\"}", NULL, &r),
                     0);
    assert_int_equal(r.status, 0);
    assert_string_equal(json_string_value(json_object_get(r.out, "cniVersion")), "1.0.0");
    char *s = json_dumps(json_object_get(r.out, "supportedVersions"), JSON_COMPACT);
    assert_string_equal(s, "[\"0.4.0\",\"1.0.0\",\"1.1.0\"]");
    free(s);
    cni_run_done(&r);
}

static void test_add_one_rail_and_del(void **state) {
    char *ids[] = {"rail0"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 1);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    json_t *ifc = json_array_get(json_object_get(r.out, "interfaces"), 0);
    assert_string_equal(json_string_value(json_object_get(ifc, "name")), "rail0");
    assert_string_equal(json_string_value(json_object_get(ifc, "sandbox")), p.netns);
    assert_int_equal(json_integer_value(json_object_get(ifc, "mtu")), 9000);
    assert_int_equal(strlen(json_string_value(json_object_get(ifc, "mac"))), 17);
    json_t *ip = json_array_get(json_object_get(r.out, "ips"), 0);
    assert_string_equal(json_string_value(json_object_get(ip, "address")), "10.100.0.2/24");
    assert_string_equal(json_string_value(json_object_get(ip, "gateway")), "10.100.0.1");
    assert_int_equal(json_integer_value(json_object_get(ip, "interface")), 0);
    json_t *rt = json_array_get(json_object_get(r.out, "routes"), 0);
    assert_string_equal(json_string_value(json_object_get(rt, "dst")), "0.0.0.0/0");
    assert_int_equal(json_integer_value(json_object_get(rt, "table")), 100);
    cni_run_done(&r);

    assert_pod_rail(&p, 0, 100);
    assert_false(host_has("rail-nic0"));
    assert_int_equal(cnienv_state_count(&env, "units"), 1);

    del_ok(&p);
    assert_host_rail(0);
    assert_false(ip_has(p.nsname, "link show", "rail0"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    del_ok(&p); /* DEL twice */
    cnienv_pod_free(&env, &p);
}

static void test_add_eight_rails(void **state) {
    char *ids[] = {"rail7", "rail1", "rail2", "rail3", "rail4", "rail5", "rail6", "rail0"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 8);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    assert_int_equal(r.status, 0);
    json_t *ifs = json_object_get(r.out, "interfaces");
    assert_int_equal(json_array_size(ifs), 8);
    for (unsigned k = 0; k < 8; k++) {
        char name[16];
        snprintf(name, sizeof(name), "rail%u", k);
        assert_string_equal(json_string_value(json_object_get(json_array_get(ifs, k), "name")),
                            name);
        assert_pod_rail(&p, k, 100 + k);
        snprintf(name, sizeof(name), "rail-nic%u", k);
        assert_false(host_has(name));
    }
    cni_run_done(&r);
    del_ok(&p);
    for (unsigned k = 0; k < 8; k++)
        assert_host_rail(k);
    cnienv_pod_free(&env, &p);
}

static void test_result_versions(void **state) {
    char *ids[] = {"rail1"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 1);
    assert_int_equal(add(&p, "1.0.0", NULL, &r), 0);
    assert_int_equal(r.status, 0);
    json_t *ifc = json_array_get(json_object_get(r.out, "interfaces"), 0);
    assert_null(json_object_get(ifc, "mtu")); /* 1.1 only */
    assert_int_equal(json_array_size(json_object_get(r.out, "routes")), 0);
    cni_run_done(&r);
    del_ok(&p);
    free(p.result);
    p.result = NULL;
    assert_int_equal(add(&p, "0.4.0", NULL, &r), 0);
    assert_int_equal(r.status, 0);
    json_t *ip = json_array_get(json_object_get(r.out, "ips"), 0);
    assert_string_equal(json_string_value(json_object_get(ip, "version")), "4");
    cni_run_done(&r);
    del_ok(&p);
    assert_host_rail(1);
    cnienv_pod_free(&env, &p);
}

/* What tells, on the host, that pod p's rail k is gone with its namespace:
 * a veth's peer goes with it, an anchored rail's anchor. Named while the
 * pod holds the rail (the anchor's name is in the record). */
typedef struct Witness {
    char name[IF_NAMESIZE];
} Witness;

static void witness_of(const Pod *p, unsigned k, Witness *w) {
    char unit[16];

    snprintf(unit, sizeof(unit), "rail%u", k);
    if (cnienv_rails_anchored())
        assert_int_equal(cnienv_anchor_name(&env, p->container, "eth0", unit, w->name), 0);
    else
        snprintf(w->name, sizeof(w->name), "rail-peer%u", k);
    assert_true(host_has(w->name));
}

static bool witness_gone(void *arg) {
    return !host_has(((Witness *)arg)->name);
}

/* Rail k made again as setup made it, after it died with a pod (a
 * macvlan's lower stayed: it goes first). */
static void rail_recreate(unsigned k) {
    char a[32], b[32], args[96];

    snprintf(a, sizeof(a), "rail-nic%u", k);
    snprintf(b, sizeof(b), "rail-peer%u", k);
    (void)testns_kind_link_del(a, b);
    assert_int_equal(testns_rail_add(k), 0);
    snprintf(args, sizeof(args), "addr add 10.99.%u.1/24 dev %s", k, a);
    assert_int_equal(ip_cmd(NULL, args), 0);
}

static void test_del_after_netns_deleted_virtual(void **state) {
    char *ids[] = {"rail2"};
    Witness w;
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    add_ok(&p);
    witness_of(&p, 2, &w);
    /* a veth dies with its namespace, a dummy or macvlan too (and its
     * anchor with it) */
    cnienv_pod_netns_del(p.nsname);
    /* "gone" is when the kernel has torn the namespace down, which it does
     * asynchronously: until then the rail is in a namespace nobody can
     * reach, and DEL rightly fails and keeps the record (the retry of the
     * runtime finishes it) */
    assert_true(testns_wait_until(witness_gone, &w, 10000));
    del_ok(&p);
    assert_true(file_contains(env.log, "dies with its namespace"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    rail_recreate(2);
    cnienv_pod_free(&env, &p);
}

/* What the tests below hold open, ended by their teardown whatever
 * failed: the namespace kept alive by an fd, a DEL stopped at a failpoint,
 * the node config they changed, and the pod (its record, its dead rail). */
static int dying_fd = -EBADF;
static CniProc dying_del;
static bool dying_del_running, dying_pod_live;
static char *dying_saved_config;
static Pod dying_pod;
static Witness dying_w;

static int dying_teardown(void **state) {
    if (dying_del_running && !dying_del.ended) {
        CniRun r;
        kill(dying_del.pid, SIGKILL);
        (void)cni_proc_finish(&dying_del, &r);
        cni_run_done(&r);
    }
    dying_del_running = false;
    if (dying_fd >= 0)
        close(dying_fd);
    dying_fd = -EBADF;
    if (dying_saved_config)
        (void)cnienv_config_restore(&env, dying_saved_config);
    dying_saved_config = NULL;
    if (dying_pod_live) { /* failed half-way: the namespace let go, the record ended */
        CniRun r;
        char *conf = cnienv_conf("1.1.0", NULL);
        (void)testns_wait_until(witness_gone, &dying_w, 10000);
        (void)run(&dying_pod, "DEL", conf, NULL, &r);
        cni_run_done(&r);
        free(conf);
        rail_recreate(2);
        cnienv_pod_free(&env, &dying_pod);
    }
    dying_pod_live = false;
    return 0;
}

/*
 * The runtime deletes the pod's namespace and sends DEL at once (issue 25:
 * DEL answered 101, "the pod moved it elsewhere", in about 2 runs of 3 on
 * veth rails with the release build). A namespace lives on unmounted
 * while anything holds it, and once its last user went the kernel tears it
 * down in a worker, its links there last; all the while the veth peer or
 * the anchor names the rail's namespace by an id that is not the host's.
 * That is a rail on its way (a veth, dummy or macvlan dies with its
 * namespace): DEL waits for it on the link events, then lets the record
 * go. Unaided, a few rounds (the release build's DEL is the quicker).
 */
static void test_del_right_after_netns_deleted(void **state) {
    char *ids[] = {"rail2"};

    for (int i = 0; i < 5; i++) {
        pod_new(&dying_pod, "team-a", RES_A, ids, 1);
        add_ok(&dying_pod);
        dying_pod_live = true;
        witness_of(&dying_pod, 2, &dying_w);
        cnienv_pod_netns_del(dying_pod.nsname);
        del_ok(&dying_pod);
        assert_false(host_has(dying_w.name));
        assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
        assert_int_equal(cnienv_state_count(&env, "units"), 0);
        dying_pod_live = false;
        rail_recreate(2);
        cnienv_pod_free(&env, &dying_pod);
    }
}

/* dying_pod, its namespace deleted by the runtime and kept alive here by
 * an fd until the test lets the kernel tear it down; its rail's witness in
 * dying_w. */
static void pod_with_dying_netns(void) {
    Pod *p = &dying_pod;
    char *ids[] = {"rail2"};

    pod_new(p, "team-a", RES_A, ids, 1);
    add_ok(p);
    dying_pod_live = true;
    witness_of(p, 2, &dying_w);
    dying_fd = open(p->netns, O_RDONLY | O_CLOEXEC);
    assert_true(dying_fd >= 0);
    cnienv_pod_netns_del(p->nsname);
}

/*
 * The same race held open: the namespace deleted and still held (here by
 * an fd), let go only once DEL watches the link events (stopped there by
 * the failpoint). DEL waits for the rail's end and lets the record go;
 * before the wait it answered 101 at once ("the pod moved it elsewhere?")
 * and kept them.
 */
static void test_del_racing_netns_teardown(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *conf = cnienv_conf("1.1.0", NULL),
         *fp[] = {"RAILGATE_FAILPOINT=restore-dying-wait=pause", NULL};
    Witness *w = &dying_w;
    CniRun r;
    Pod *pp = &dying_pod;

    pod_with_dying_netns();
    assert_int_equal(cnienv_start(&env, "railgate", "DEL", pp->container, pp->netns, "eth0", pp->ns,
                                  pp->name, conf, fp, &dying_del),
                     0);
    free(conf);
    dying_del_running = true;
    assert_int_equal(cni_proc_wait_stopped(&dying_del), 0);
    /* DEL watches; the rail is still where the namespace holds it */
    assert_true(host_has(w->name));
    close(dying_fd);
    dying_fd = -EBADF;
    assert_int_equal(cni_proc_continue(&dying_del), 0);
    assert_int_equal(cni_proc_finish(&dying_del, &r), 0);
    dying_del_running = false;
    if (r.status)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_false(host_has(w->name));
    assert_true(file_contains(env.log, "dies with its namespace"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    dying_pod_live = false;
    rail_recreate(2);
    cnienv_pod_free(&env, pp);
#endif
}

/*
 * The namespace deleted and not yet torn down when
 * timeouts.netnsTeardownSeconds is over (held here by an fd, as anything
 * still in it or with it open holds it): the rail is nowhere railgate can
 * reach, and not by the pod's doing. DEL and GC answer 11, "try again
 * later", naming the namespace, never 101, and keep the record and the
 * claim; once the kernel has torn it down, DEL ends it.
 */
static void test_del_while_netns_dying(void **state) {
    char *conf;
    Witness *w = &dying_w;
    CniRun r;
    Pod *pp = &dying_pod;

    assert_int_equal(cnienv_config_patch(&env, json_pack("{s:i}", "netnsTeardownSeconds", 1), NULL,
                                         &dying_saved_config),
                     0);
    pod_with_dying_netns();
    for (int by_gc = 0; by_gc < 2; by_gc++) {
        if (by_gc) {
            conf = cnienv_conf("1.1.0", "\"cni.dev/valid-attachments\": []");
            assert_int_equal(
                cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r),
                0);
        } else {
            conf = cnienv_conf("1.1.0", NULL);
            assert_int_equal(run(pp, "DEL", conf, NULL, &r), 0);
        }
        free(conf);
        if (r.status == 0)
            fprintf(stderr, "%s: %s\n", by_gc ? "GC" : "DEL", r.raw);
        assert_int_equal(r.status, 1);
        assert_int_equal(error_code(&r), 11);
        assert_non_null(strstr(error_msg(&r), pp->netns));
        assert_non_null(strstr(error_msg(&r), "not yet torn down"));
        assert_non_null(strstr(error_msg(&r), "timeouts.netnsTeardownSeconds"));
        cni_run_done(&r);
        assert_true(host_has(w->name));
        assert_int_equal(cnienv_state_count(&env, "attachments"), 1);
        assert_int_equal(cnienv_state_count(&env, "units"), 1);
    }
    assert_int_equal(cnienv_config_restore(&env, dying_saved_config), 0);
    dying_saved_config = NULL;
    close(dying_fd);
    dying_fd = -EBADF;
    assert_true(testns_wait_until(witness_gone, w, 10000));
    del_ok(pp);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    dying_pod_live = false;
    rail_recreate(2);
    cnienv_pod_free(&env, pp);
}

static void test_del_after_netns_deleted_physical(void **state) {
    char *ids[] = {"rail3"}, args[128];
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    add_ok(&p);
    /* what the kernel does to a physical NIC when its namespace goes:
     * it comes home under its pod-side name */
    snprintf(args, sizeof(args), "link set rail3 netns %d", (int)getpid());
    assert_int_equal(ip_cmd(p.nsname, args), 0);
    cnienv_pod_netns_del(p.nsname);
    assert_true(host_has("rail3"));
    del_ok(&p);
    assert_false(host_has("rail3"));
    assert_host_rail(3);
    cnienv_pod_free(&env, &p);
}

static void test_rollback_half_way(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *ids[] = {"rail3", "rail4", "rail5", "rail6"};
    char *fp[] = {"RAILGATE_FAILPOINT=add-after-configure@3", NULL};
    char *conf = cnienv_conf("1.1.0", NULL);
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 4);
    assert_int_equal(run(&p, "ADD", conf, fp, &r), 0);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(error_msg(&r), "failpoint"));
    cni_run_done(&r);
    for (unsigned k = 3; k <= 6; k++)
        assert_host_rail(k);
    assert_false(ip_has(p.nsname, "link show", "rail"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    free(conf);
    cnienv_pod_free(&env, &p);
#endif
}

static void test_other_tenant_refused(void **state) {
    char *ids[] = {"rail7"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-b", RES_A, ids, 1);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(error_code(&r), 100);
    assert_non_null(strstr(error_msg(&r), "nothing was moved"));
    cni_run_done(&r);
    assert_host_rail(7);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    cnienv_pod_free(&env, &p);
}

static void test_device_id(void **state) {
    char *ids[] = {"rail8", "rail9"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 2);
    /* a device the pod does not hold */
    assert_int_equal(add(&p, "1.1.0", "\"deviceID\": \"rail10\"", &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(error_code(&r), 101);
    cni_run_done(&r);
    assert_host_rail(8);
    assert_host_rail(9);
    assert_host_rail(10);
    /* Multus' runtimeConfig.deviceID narrows the pod's units to one */
    assert_int_equal(add(&p, "1.1.0", "\"runtimeConfig\": {\"deviceID\": \"rail9\"}", &r), 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(json_array_size(json_object_get(r.out, "interfaces")), 1);
    cni_run_done(&r);
    assert_host_rail(8);
    assert_false(host_has("rail-nic9"));
    del_ok(&p);
    assert_host_rail(9);
    cnienv_pod_free(&env, &p);
}

static void expect_code(Pod *p, const char *cmd, const char *conf, char *const *extra, int code) {
    CniRun r;

    assert_int_equal(run(p, cmd, conf, extra, &r), 0);
    if (error_code(&r) != code)
        fprintf(stderr, "want %d: %s\n", code, r.raw);
    assert_int_equal(r.status, 1);
    assert_int_equal(error_code(&r), code);
    cni_run_done(&r);
}

static void test_bad_input(void **state) {
    char *ids[] = {"rail0"};
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 1);
    expect_code(&p, "ADD", "{\"cniVersion\": \"1.1.0\", \"name\": ", NULL, 6);
    expect_code(&p, "ADD", "{\"cniVersion\": \"9.9.9\", \"name\": \"x\"}", NULL, 1);
    expect_code(&p, "ADD",
                "{\"cniVersion\": \"1.1.0\", \"name\": \"x\", \"device\": \"rail-nic0\"}", NULL, 2);
    /* missing or bad environment */
    char *conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, NULL, "eth0", p.ns, p.name,
                                conf, NULL, &r),
                     0);
    assert_int_equal(error_code(&r), 4);
    assert_non_null(strstr(error_msg(&r), "CNI_NETNS"));
    cni_run_done(&r);
    assert_int_equal(cnienv_run(&env, "railgate", NULL, p.container, p.netns, "eth0", p.ns, p.name,
                                conf, NULL, &r),
                     0);
    assert_int_equal(error_code(&r), 4);
    assert_non_null(strstr(error_msg(&r), "CNI_COMMAND"));
    cni_run_done(&r);
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", "../../etc", p.netns, "eth0", p.ns, p.name,
                                conf, NULL, &r),
                     0);
    assert_int_equal(error_code(&r), 4);
    assert_non_null(strstr(error_msg(&r), "CNI_CONTAINERID"));
    cni_run_done(&r);
    free(conf);
    assert_host_rail(0);
    cnienv_pod_free(&env, &p);
}

static void test_check(void **state) {
    char *ids[] = {"rail10"}, extra[9000];
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 1);
    add_ok(&p);
    snprintf(extra, sizeof(extra), "\"prevResult\": %s", p.result);
    char *conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(run(&p, "CHECK", conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_int_equal(ip_cmd(p.nsname, "link set rail10 mtu 1400"), 0);
    expect_code(&p, "CHECK", conf, NULL, 103);
    assert_int_equal(ip_cmd(p.nsname, "link set rail10 mtu 9000"), 0);
    assert_int_equal(ip_cmd(p.nsname, "route del default table 110"), 0);
    expect_code(&p, "CHECK", conf, NULL, 103);
    free(conf);
    del_ok(&p);
    assert_host_rail(10);
    cnienv_pod_free(&env, &p);
}

static void test_gc(void **state) {
    char *ids1[] = {"rail11"}, *ids2[] = {"rail12"}, extra[512];
    Pod p1, p2;
    CniRun r;

    pod_new(&p1, "team-a", RES_A, ids1, 1);
    pod_new(&p2, "team-a", RES_A, ids2, 1);
    assert_int_equal(add(&p1, "1.1.0", NULL, &r), 0);
    cni_run_done(&r);
    assert_int_equal(add(&p2, "1.1.0", NULL, &r), 0);
    cni_run_done(&r);
    snprintf(extra, sizeof(extra),
             "\"cni.dev/valid-attachments\": [{\"containerID\": \"%s\", \"ifname\": \"eth0\"}]",
             p1.container);
    /* a write a power loss cut short before this boot left its temp file,
     * and one of this boot is under way: GC removes only the first */
    char stale[400], live[400];
    snprintf(stale, sizeof(stale), "%s/attachments/.gone:eth0.json.tmp-Ab12Cd", env.state);
    snprintf(live, sizeof(live), "%s/attachments/.live:eth0.json.tmp-Ef34Gh", env.state);
    assert_int_equal(fileio_write_atomic(stale, "{", 1, 0600, false), 0);
    assert_int_equal(fileio_write_atomic(live, "{", 1, 0600, false), 0);
    assert_int_equal(backdate(stale, 3600, 0), 0);
    char *conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(
        cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    assert_int_equal(unlink(live), 0);
    assert_host_rail(12);
    assert_pod_rail(&p1, 11, 111);
    /* the 1.1.0 tag's key name works too */
    snprintf(extra, sizeof(extra), "\"cni.dev/attachments\": []");
    conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(
        cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_host_rail(11);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    cnienv_pod_free(&env, &p1);
    cnienv_pod_free(&env, &p2);
}

/* A record a node crash tore (one without IPAM is written without fsync):
 * empty and last written before this boot began, it is of an earlier boot,
 * and DEL drops it and its claim, touching no NIC. Written since the boot
 * began, DEL refuses it as any record it cannot read, and keeps the claim. */
static void test_del_torn_record(void **state) {
    char *ids[] = {"rail15"}, record[400], marker[400], boot_id[64] = "", text[256];
    CniRun r;
    Pod p, q;

    pod_new(&p, "team-a", RES_A, ids, 1);
    snprintf(record, sizeof(record), "%s/attachments/%s:eth0.json", env.state, p.container);
    snprintf(marker, sizeof(marker), "%s/units/rail15", env.state);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    assert_non_null(f);
    assert_non_null(fgets(boot_id, sizeof(boot_id), f));
    fclose(f);
    /* the claim as the dead ADD made it, and its record torn */
    snprintf(text, sizeof(text), "%s:eth0\n%s", p.container, boot_id);
    assert_int_equal(fileio_write_atomic(marker, text, strlen(text), 0600, true), 0);
    assert_int_equal(fileio_write_atomic(record, "", 0, 0600, false), 0);

    char *conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(run(&p, "DEL", conf, NULL, &r), 0);
    assert_int_equal(error_code(&r), 5);
    assert_non_null(strstr(error_msg(&r), "unreadable state"));
    cni_run_done(&r);
    assert_int_equal(access(record, F_OK), 0);
    assert_int_equal(access(marker, F_OK), 0);

    /* the same, dated an hour before the boot began */
    assert_int_equal(backdate(record, 3600, 0), 0);
    assert_int_equal(run(&p, "DEL", conf, NULL, &r), 0);
    if (r.status != 0)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_int_equal(access(record, F_OK), -1);
    assert_int_equal(access(marker, F_OK), -1);
    assert_host_rail(15);
    cnienv_pod_free(&env, &p);
    /* the unit is free: the next pod has it */
    pod_new(&q, "team-a", RES_A, ids, 1);
    add_ok(&q);
    del_ok(&q);
    assert_host_rail(15);
    cnienv_pod_free(&env, &q);
}

/* ADD over a record a node crash tore, of the same container and ifname:
 * written since this boot began, ADD refuses it as any record it cannot
 * read and keeps it; dated before the boot began, it is of an earlier boot:
 * ADD drops it and attaches. */
static void test_add_torn_record(void **state) {
    char *ids[] = {"rail14"}, record[400];
    CniRun r;
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    snprintf(record, sizeof(record), "%s/attachments/%s:eth0.json", env.state, p.container);
    assert_int_equal(fileio_write_atomic(record, "{\"containerID\": ", 16, 0600, false), 0);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    assert_int_equal(error_code(&r), 5);
    assert_non_null(strstr(error_msg(&r), "unreadable state"));
    cni_run_done(&r);
    assert_int_equal(access(record, F_OK), 0);
    assert_host_rail(14);

    assert_int_equal(backdate(record, 3600, 0), 0);
    add_ok(&p);
    assert_pod_rail(&p, 14, 114);
    /* the record is the new attachment's now */
    Attachment *a = NULL;
    char key[STATE_KEY_MAX + 1];
    assert_int_equal(state_key(p.container, "eth0", key, sizeof(key)), 0);
    assert_int_equal(state_record_load_key(env.state, key, &a), 0);
    assert_int_equal(a->n_nics, 1);
    attachment_free(a);
    del_ok(&p);
    assert_host_rail(14);
    cnienv_pod_free(&env, &p);
}

/* STATUS: ready when the node config loads (50 when it does not); it asks
 * no one: with kubelet and the node agent both away it still says ready. */
static void test_status(void **state) {
    char *conf = cnienv_conf("1.1.0", NULL);
    char *bad[] = {"RAILGATE_NODE_CONFIG=/nonexistent/node.json", NULL};
    CniRun r;

    assert_int_equal(
        cnienv_run(&env, "railgate", "STATUS", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_int_equal(
        cnienv_run(&env, "railgate", "STATUS", NULL, NULL, NULL, NULL, NULL, conf, bad, &r), 0);
    assert_int_equal(error_code(&r), 50);
    assert_non_null(strstr(error_msg(&r), "/nonexistent/node.json"));
    cni_run_done(&r);
    assert_int_equal(cnienv_agent_stop(&env), 0);
    fk_stop(env.k);
    env.k = NULL;
    assert_int_equal(
        cnienv_run(&env, "railgate", "STATUS", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    free(conf);
}

/* RAILGATE_NODE_CONFIG=<a copy of the node config with tenant a's "mode":
 * "vrf"> in envv. */
static void node_config_vrf_mode(char *envv, size_t n) {
    char path[256];
    json_t *node = json_load_file(env.config, 0, NULL);

    assert_non_null(node);
    json_t *vrf = json_object_get(json_array_get(json_object_get(node, "tenants"), 0), "vrf");
    json_object_set_new(vrf, "mode", json_string("vrf"));
    snprintf(path, sizeof(path), "%s/node-vrf.json", env.tmp);
    assert_int_equal(json_dump_file(node, path, 0), 0);
    json_decref(node);
    snprintf(envv, n, "RAILGATE_NODE_CONFIG=%s", path);
}

/* A CNI command with the ADD's result as prevResult, as the runtime sends
 * CHECK and DEL; the exit status. */
static int run_with_result(Pod *p, const char *cmd, char *const *extra, CniRun *r) {
    char prev[9000] = "";

    if (p->result)
        snprintf(prev, sizeof(prev), "\"prevResult\": %s", p->result);
    char *conf = cnienv_conf("1.1.0", prev);
    assert_int_equal(run(p, cmd, conf, extra, r), 0);
    free(conf);
    if (r->status)
        fprintf(stderr, "%s: %s\n", cmd, r->raw);
    return r->status;
}

/* In the pod: rail12 enslaved to tenant a's VRF device (table 100), the
 * routes in that table, the kernel's l3mdev rule and none of table mode's
 * source rules. */
static void assert_pod_rail_in_vrf(const Pod *p) {
    assert_true(ip_has(p->nsname, "-d link show dev vrf-a", "vrf table 100"));
    assert_true(ip_has(p->nsname, "link show dev rail12", "master vrf-a"));
    assert_true(ip_has(p->nsname, "link show dev rail12", "mtu 9000"));
    assert_true(ip_has(p->nsname, "addr show dev rail12", "inet 10.112.0.2/24"));
    assert_true(ip_has(p->nsname, "route show table 100", "default via 10.112.0.1 dev rail12"));
    assert_true(
        ip_has(p->nsname, "route show table 100", "10.64.0.0/10 via 10.112.0.1 dev rail12"));
    assert_true(ip_has(p->nsname, "route show table 100", "10.112.0.0/24 dev rail12"));
    assert_true(ip_has(p->nsname, "rule show", "l3mdev"));
    assert_false(ip_has(p->nsname, "rule show", "from 10.112.0.2"));
    assert_false(host_has("rail-nic12"));
}

/*
 * VRF-device mode end to end where the kernel has the vrf driver: ADD puts
 * the rail into an l3mdev VRF device in the pod with its routes in the VRF's
 * table; CHECK passes, and fails (103) once the pod took the rail out of the
 * VRF; DEL brings it home as it was; a second pod's ADD, then its namespace
 * deleted, then DEL: the veth died with the namespace and DEL lets the
 * record go. Where the kernel has no vrf driver: code 104, nothing moved.
 */
static void test_vrf_device_mode(void **state) {
    char *ids[] = {"rail12"}, envv[300], *extra[] = {envv, NULL};
    bool have_vrf = ip_cmd(NULL, "link add rgvrfprobe type vrf table 4000") == 0;
    Witness w;
    Pod p;
    CniRun r;

    if (have_vrf)
        ip_cmd(NULL, "link del rgvrfprobe");
    node_config_vrf_mode(envv, sizeof(envv));
    pod_new(&p, "team-a", RES_A, ids, 1);
    char *conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(run(&p, "ADD", conf, extra, &r), 0);
    free(conf);
    if (!have_vrf) {
        printf("VRF-device mode: this kernel has no vrf driver; asserting the refusal\n");
        assert_int_not_equal(r.status, 0);
        assert_int_equal(error_code(&r), 104);
        assert_non_null(strstr(error_msg(&r), "vrf"));
        assert_false(ip_has(p.nsname, "link show", "rail"));
        cni_run_done(&r);
        assert_host_rail(12);
        assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
        cnienv_pod_free(&env, &p);
        return;
    }
    printf("VRF-device mode: the kernel has the vrf driver; ADD, CHECK, DEL, DEL after the "
           "namespace is gone\n");
    if (r.status)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    p.result = strdup(r.raw);
    cni_run_done(&r);
    assert_pod_rail_in_vrf(&p);
    assert_int_equal(run_with_result(&p, "CHECK", extra, &r), 0);
    cni_run_done(&r);
    /* out of the VRF: the kernel drops its routes from the VRF's table */
    assert_int_equal(ip_cmd(p.nsname, "link set rail12 nomaster"), 0);
    run_with_result(&p, "CHECK", extra, &r);
    assert_int_equal(error_code(&r), 103);
    cni_run_done(&r);
    assert_int_equal(run_with_result(&p, "DEL", extra, &r), 0);
    cni_run_done(&r);
    assert_host_rail(12);
    assert_false(ip_has(p.nsname, "link show", "rail"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    cnienv_pod_free(&env, &p);

    /* DEL once the pod's namespace is gone (torn down: see
     * test_del_while_netns_dying for the moment before) */
    pod_new(&p, "team-a", RES_A, ids, 1);
    conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(run(&p, "ADD", conf, extra, &r), 0);
    free(conf);
    assert_int_equal(r.status, 0);
    p.result = strdup(r.raw);
    cni_run_done(&r);
    assert_pod_rail_in_vrf(&p);
    witness_of(&p, 12, &w);
    cnienv_pod_netns_del(p.nsname);
    assert_true(testns_wait_until(witness_gone, &w, 10000));
    assert_int_equal(run_with_result(&p, "DEL", extra, &r), 0);
    cni_run_done(&r);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    rail_recreate(12);
    assert_host_rail(12);
    cnienv_pod_free(&env, &p);
}

/* Rail 19 of the given kind in place of the test node's, as setup makes
 * rails (up, MTU 1500, 10.99.19.1/24); ipvlan on a veth to rail-peer19w. */
static void rail19_as(const char *kind) {
    assert_int_equal(testns_rail_del(19), 0);
    if (streq(kind, "ipvlan")) {
        assert_int_equal(ip_cmd(NULL, "link add rail-peer19 type veth peer name rail-peer19w"), 0);
        assert_int_equal(ip_cmd(NULL, "link set rail-peer19 up"), 0);
        assert_int_equal(ip_cmd(NULL, "link set rail-peer19w up"), 0);
        assert_int_equal(ip_cmd(NULL, "link add rail-nic19 link rail-peer19 type ipvlan mode l2"),
                         0);
    } else
        assert_int_equal(
            testns_kind_link_add_as(streq(kind, "dummy") ? RAIL_KIND_DUMMY : RAIL_KIND_MACVLAN,
                                    "rail-nic19", "rail-peer19"),
            0);
    assert_int_equal(ip_cmd(NULL, "link set rail-nic19 mtu 1500 up"), 0);
    assert_int_equal(ip_cmd(NULL, "addr add 10.99.19.1/24 dev rail-nic19"), 0);
}

/* ... and the test node's again. */
static void rail19_back(const char *kind) {
    if (streq(kind, "ipvlan"))
        assert_int_equal(ip_cmd(NULL, "link del rail-peer19"), 0); /* its ipvlan goes along */
    else
        assert_int_equal(
            testns_kind_link_del_as(streq(kind, "dummy") ? RAIL_KIND_DUMMY : RAIL_KIND_MACVLAN,
                                    "rail-nic19", "rail-peer19"),
            0);
    rail_recreate(19);
}

/*
 * A rail with no parent device and no veth peer moves only with an anchor,
 * a VLAN railgate makes on it in the host namespace. One that cannot be
 * anchored (an ipvlan takes no VLANs; a dummy or macvlan on a kernel
 * without the 8021q driver, as here) is not moved: ADD fails with 101
 * naming the NIC and the kernel's words, the NIC stays on the host as it
 * was, nothing is recorded or claimed, no anchor is left. Each such kind
 * the kernel has; those it can anchor are test_anchored_rail's.
 */
static void test_rail_without_identity_refused(void **state) {
    static const struct {
        const char *name;
        RailKind kind; /* ipvlan: none of testns's */
    } kinds[] = {{"dummy", RAIL_KIND_DUMMY}, {"macvlan", RAIL_KIND_MACVLAN}, {"ipvlan", 0}};
    char *ids[] = {"rail19"};
    Link before, after;
    Pod p;
    CniRun r;

    for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
        const char *kind = kinds[i].name;
        bool ipvlan = streq(kind, "ipvlan");
        int have = ipvlan ? 1 : testns_kind_probe(kinds[i].kind);
        int anchorable = ipvlan ? 0 : testns_kind_anchorable(kinds[i].kind);

        assert_true(have >= 0 && anchorable >= 0);
        if (ipvlan) { /* the kernel has it if it makes one */
            have = ip_cmd(NULL, "link add rgipvprobe link rail-peer18 type ipvlan") == 0 ||
                   ip_cmd(NULL, "link add rgipvprobe link rail-nic18 type ipvlan") == 0;
            ip_cmd(NULL, "link del rgipvprobe");
        }
        if (!have || anchorable) {
            printf("%s rail: %s\n", kind,
                   !have ? "this kernel has no such driver, not checked"
                         : "this kernel anchors it: see test_anchored_rail");
            continue;
        }
        rail19_as(kind);
        if (ipvlan) { /* the kernel would take no VLAN on it either */
            assert_int_not_equal(
                ip_cmd(NULL, "link add rgvprobe link rail-nic19 type vlan proto 802.1ad id 4094"),
                0);
        }
        assert_int_equal(testns_link_get("rail-nic19", &before), 0);
        pod_new(&p, "team-b", RES_B, ids, 1);
        assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
        printf("%s rail: %s\n", kind, error_msg(&r));
        assert_int_equal(r.status, 1);
        assert_int_equal(error_code(&r), 101);
        assert_non_null(strstr(error_msg(&r), "rail-nic19"));
        if (ipvlan) /* its port mode is the pod's to change and not recorded: refused first */
            assert_non_null(strstr(error_msg(&r), "link of kind ipvlan, whose own settings"));
        else {
            assert_non_null(strstr(error_msg(&r), "no parent device and is not a veth"));
            assert_non_null(strstr(error_msg(&r), "(kernel: "));
        }
        cni_run_done(&r);
        assert_host_rail(19);
        assert_int_equal(testns_link_get("rail-nic19", &after), 0);
        assert_int_equal(after.ifindex, before.ifindex);
        assert_string_equal(after.kind, kind);
        assert_false(ip_has(p.nsname, "link show", "rail"));
        assert_int_equal(cnienv_host_vlans(), 0);
        assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
        assert_int_equal(cnienv_state_count(&env, "units"), 0);
        del_ok(&p); /* the runtime's DEL after the failed ADD */
        cnienv_pod_free(&env, &p);
        rail19_back(kind);
    }
}

/* iproute2's view of dev in netns (NULL: the host): its JSON object. */
static json_t *link_json(const char *netns, const char *dev) {
    char args[64];
    json_t *l, *o;

    snprintf(args, sizeof(args), "-d link show dev %s", dev);
    l = ip_json(netns, args);
    o = json_incref(json_array_get(l, 0));
    json_decref(l);
    assert_non_null(o);
    return o;
}

static bool json_flag(json_t *link, const char *flag) {
    json_t *f;
    size_t i;

    json_array_foreach(json_object_get(link, "flags"), i, f) {
        if (streq(json_string_value(f) ?: "", flag))
            return true;
    }
    return false;
}

/* The host's id for the namespace /run/netns/<name> (iproute2's list). */
static int host_nsid_of(const char *name) {
    json_t *l = ip_json(NULL, "netns list-id"), *o;
    size_t i;
    int id = -1;

    json_array_foreach(l, i, o) {
        if (streq(json_string_value(json_object_get(o, "name")) ?: "", name))
            id = (int)json_integer_value(json_object_get(o, "nsid"));
    }
    json_decref(l);
    return id;
}

/*
 * A dummy or macvlan rail (the harness's kind when it is one, else one this
 * kernel can anchor) moves with its anchor: a VLAN 802.1ad 4094 on it in the
 * host namespace, down, with loose binding, under the random name its
 * record gives (rg and 13 characters). From the host it names the rail in
 * the pod (its IFLA_LINK is the rail's ifindex there, its link namespace the
 * pod's); it stays down when the pod takes the rail down and up (without
 * loose binding the kernel brings it up with the rail: a host interface the
 * pod could reach with tagged frames). CHECK passes. DEL brings the rail
 * home as it was, at its ifindex, and the anchor goes.
 */
static void test_anchored_rail(void **state) {
    const char *kind = testns_rail_kind_name(testns_rail_kind_used());
    char *ids[] = {"rail19"}, anchor[IF_NAMESIZE];
    bool replaced = !cnienv_rails_anchored();
    Link before, after;
    Pod p;
    CniRun r;

    if (replaced) {
        kind = testns_kind_anchorable(RAIL_KIND_DUMMY) > 0     ? "dummy"
               : testns_kind_anchorable(RAIL_KIND_MACVLAN) > 0 ? "macvlan"
                                                               : NULL;
        if (!kind) {
            printf("anchored rails: this kernel can anchor neither a dummy nor a macvlan (no 8021q "
                   "driver): their refusal is test_rail_without_identity_refused's\n");
            skip();
        }
        rail19_as(kind);
    }
    printf("anchored rail: %s\n", kind);
    assert_int_equal(testns_link_get("rail-nic19", &before), 0);
    pod_new(&p, "team-b", RES_B, ids, 1);
    add_ok(&p);
    assert_int_equal(cnienv_anchor_name(&env, p.container, "eth0", "rail19", anchor), 0);
    assert_int_equal(strlen(anchor), 15);
    assert_memory_equal(anchor, "rg", 2);
    json_t *a = link_json(NULL, anchor), *rail = link_json(p.nsname, "rail19");
    json_t *info = json_object_get(json_object_get(a, "linkinfo"), "info_data");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(a, "linkinfo"), "info_kind")), "vlan");
    assert_string_equal(json_string_value(json_object_get(info, "protocol")), "802.1ad");
    assert_int_equal(json_integer_value(json_object_get(info, "id")), 4094);
    char *flags = json_dumps(json_object_get(info, "flags"), JSON_COMPACT);
    assert_non_null(strstr(flags, "LOOSE_BINDING"));
    free(flags);
    assert_false(json_flag(a, "UP"));
    /* the record holds the anchor's ifindex (written again once it was
     * made): only that link is taken for it, never a look-alike's */
    assert_int_equal(cnienv_anchor_ifindex(&env, p.container, "eth0", "rail19"),
                     json_integer_value(json_object_get(a, "ifindex")));
    assert_int_equal(json_integer_value(json_object_get(a, "link_index")),
                     json_integer_value(json_object_get(rail, "ifindex")));
    assert_int_equal(json_integer_value(json_object_get(a, "link_netnsid")),
                     host_nsid_of(p.nsname));
    json_decref(rail);
    json_decref(a);
    assert_int_equal(run_with_result(&p, "CHECK", NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "CHECK: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    /* the pod's admin state is not the anchor's (the routes go with the
     * rail's down: CHECK would fail from here on) */
    assert_int_equal(ip_cmd(p.nsname, "link set rail19 down"), 0);
    assert_int_equal(ip_cmd(p.nsname, "link set rail19 up"), 0);
    a = link_json(NULL, anchor);
    assert_false(json_flag(a, "UP"));
    json_decref(a);
    del_ok(&p);
    assert_host_rail(19);
    assert_int_equal(testns_link_get("rail-nic19", &after), 0);
    assert_int_equal(after.ifindex, before.ifindex);
    assert_string_equal(after.kind, kind);
    assert_false(host_has(anchor));
    assert_int_equal(cnienv_host_vlans(), 0);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    cnienv_pod_free(&env, &p);
    if (replaced)
        rail19_back(kind);
}

static void test_passthrough(void **state) {
    Pod p;
    CniRun r;
    const char *prev = "\"prevResult\": {\"cniVersion\": \"1.1.0\", \"interfaces\": "
                       "[{\"name\": \"eth0\"}], \"ips\": [{\"address\": \"10.1.1.5/24\"}]}";

    pod_new(&p, "team-a", RES_A, NULL, 0);
    assert_int_equal(add(&p, "1.1.0", prev, &r), 0);
    assert_int_equal(r.status, 0);
    json_t *ifs = json_object_get(r.out, "interfaces");
    assert_int_equal(json_array_size(ifs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ifs, 0), "name")), "eth0");
    cni_run_done(&r);
    del_ok(&p);
    cnienv_pod_free(&env, &p);
}

static void test_chained_after_ptp(void **state) {
    char *ids[] = {"rail13"}, conf[2048], extra[9000];
    Pod p;
    CniRun r;

    pod_new(&p, "team-a", RES_A, ids, 1);
    /* the runtime runs the conflist in order: ptp (host-local), then railgate */
    snprintf(conf, sizeof(conf),
             "{\"cniVersion\": \"1.0.0\", \"name\": \"pods\", \"type\": \"ptp\", \"ipMasq\": false,"
             " \"ipam\": {\"type\": \"host-local\", \"dataDir\": \"%s\","
             " \"ranges\": [[{\"subnet\": \"10.244.1.0/24\"}]]}}",
             env.ipamdir);
    assert_int_equal(
        cnienv_run(&env, "ptp", "ADD", p.container, p.netns, "eth0", p.ns, p.name, conf, NULL, &r),
        0);
    assert_int_equal(r.status, 0);
    size_t primary = json_array_size(json_object_get(r.out, "interfaces"));
    snprintf(extra, sizeof(extra), "\"prevResult\": %s", r.raw);
    cni_run_done(&r);
    char *rg = cnienv_conf("1.0.0", extra);
    assert_int_equal(run(&p, "ADD", rg, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    json_t *ifs = json_object_get(r.out, "interfaces");
    assert_int_equal(json_array_size(ifs), primary + 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ifs, primary), "name")),
                        "rail13");
    json_t *ips = json_object_get(r.out, "ips");
    assert_int_equal(json_array_size(ips), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ips, 1), "interface")),
                     (json_int_t)primary);
    assert_true(ip_has(p.nsname, "addr show dev eth0", "10.244.1."));
    assert_pod_rail(&p, 13, 113);
    p.result = strdup(r.raw);
    cni_run_done(&r);
    free(rg);
    /* DEL in reverse order */
    del_ok(&p);
    assert_int_equal(
        cnienv_run(&env, "ptp", "DEL", p.container, p.netns, "eth0", p.ns, p.name, conf, NULL, &r),
        0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_host_rail(13);
    cnienv_pod_free(&env, &p);
}

/* Tenant b's rails 16 and 17 take addresses from the IPAM plugin the node
 * config names (host-local); the network config names none. */
static void test_ipam_host_local(void **state) {
    char *ids[] = {"rail16", "rail17"}, path[256];
    Pod p;
    CniRun r;

    pod_new(&p, "team-b", RES_B, ids, 2);
    /* Debian 12's plugins (v1.1.1) speak CNI up to 1.0.0: railgate asks
     * (VERSION) and gives host-local 1.0.0 for this 1.1.0 request */
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(ip_has(p.nsname, "addr show dev rail16", "inet 10.50.0."));
    assert_true(ip_has(p.nsname, "addr show dev rail17", "inet 10.51.0."));
    assert_true(ip_has(p.nsname, "route show table 216", "default via 10.50.0.1 dev rail16"));
    /* the plugin's network name is the tenant's, from the node config */
    snprintf(path, sizeof(path), "%s/railgate-b/10.50.0.2", env.ipamdir);
    assert_int_equal(access(path, F_OK), 0);
    /* CHECK is forwarded to the plugin, which finds its allocation, and
     * fails once host-local lost it */
    char extra[9000];
    snprintf(extra, sizeof(extra), "\"prevResult\": %s", p.result);
    char *conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(run(&p, "CHECK", conf, NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "CHECK: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    char store[256], away[272];
    snprintf(store, sizeof(store), "%s/railgate-b", env.ipamdir);
    snprintf(away, sizeof(away), "%s.away", store);
    assert_int_equal(rename(store, away), 0);
    assert_int_equal(run(&p, "CHECK", conf, NULL, &r), 0);
    if (r.status != 1)
        fprintf(stderr, "CHECK: %s\n", r.raw);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(error_msg(&r), "ipam plugin host-local (CHECK)"));
    cni_run_done(&r);
    free(conf);
    /* host-local made an empty store for the CHECK: the real one goes back */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mv '%s' '%s'", store, away, store);
    assert_int_equal(system(cmd), 0);
    /* DEL releases the addresses with the config the ADD recorded */
    del_ok(&p);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(host_has("rail-nic16") && host_has("rail-nic17"));
    cnienv_pod_free(&env, &p);
}

typedef struct Job {
    Pod pod;
    int status;
    bool del;
} Job;

static void *job_run(void *arg) {
    Job *j = arg;
    CniRun r;
    char *conf = cnienv_conf("1.1.0", NULL);

    run(&j->pod, j->del ? "DEL" : "ADD", conf, NULL, &r);
    j->status = r.status;
    if (r.status)
        fprintf(stderr, "%s %s: %s\n", j->del ? "DEL" : "ADD", j->pod.name, r.raw);
    cni_run_done(&r);
    free(conf);
    return NULL;
}

static void run_all(Job *jobs, size_t n, bool del) {
    pthread_t t[16];

    for (size_t i = 0; i < n; i++) {
        jobs[i].del = del;
        assert_int_equal(pthread_create(&t[i], NULL, job_run, &jobs[i]), 0);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(jobs[i].status, 0);
}

/* Sixteen ADDs at once through one node agent (more than its workers): each
 * gets its rail; the agent keeps no connection or fd of any. */
static void test_sixteen_concurrent_adds(void **state) {
    unsigned fds0 = proc_stable_fd_count(env.agent, 5);
    pid_t agent = env.agent;
    Job jobs[16];

    for (unsigned i = 0; i < 16; i++) {
        char id[16], *ids[] = {id};
        snprintf(id, sizeof(id), "rail%u", i);
        pod_new(&jobs[i].pod, "team-a", RES_A, ids, 1);
    }
    run_all(jobs, 16, false);
    for (unsigned i = 0; i < 16; i++)
        assert_pod_rail(&jobs[i].pod, i, 100 + i);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 16);
    run_all(jobs, 16, true);
    for (unsigned i = 0; i < 16; i++) {
        assert_host_rail(i);
        cnienv_pod_free(&env, &jobs[i].pod);
    }
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(env.agent, agent);
    assert_int_equal(proc_stable_fd_count(env.agent, 5), fds0);
}

/* ---- the node config's timeouts ---- */

/* The node agent reads the node config when it starts. */
static void agent_restart(void) {
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
}

/* kubelet answers PodResources later than timeouts.podResourcesSeconds: the
 * node agent says so, ADD fails with 11 (the runtime retries) naming the
 * key, and nothing moves. */
static void test_podresources_deadline(void **state) {
    char *ids[] = {"rail14"}, *saved = NULL;
    Pod p;
    CniRun r;

    assert_int_equal(
        cnienv_config_patch(&env, json_pack("{s:i}", "podResourcesSeconds", 1), NULL, &saved), 0);
    agent_restart();
    pod_new(&p, "team-a", RES_A, ids, 1);
    fk_podresources_stall(env.k, 3000);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    fk_podresources_stall(env.k, 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(error_code(&r), 11);
    assert_non_null(strstr(error_msg(&r), "did not answer within 1 s"));
    assert_non_null(strstr(error_msg(&r), "timeouts.podResourcesSeconds"));
    cni_run_done(&r);
    assert_host_rail(14);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    /* with the default deadline the same pod gets its rail, the answer
     * queued behind the stalled one */
    assert_int_equal(cnienv_config_restore(&env, saved), 0);
    agent_restart();
    add_ok(&p);
    assert_pod_rail(&p, 14, 114);
    del_ok(&p);
    assert_host_rail(14);
    cnienv_pod_free(&env, &p);
}

/* An IPAM plugin that never answers is killed at timeouts.ipamSeconds: ADD
 * fails with 11 naming the key, the rails are home, the plugin is gone. */
static void test_ipam_deadline(void **state) {
    char *ids[] = {"rail16", "rail17"}, *saved = NULL, hang[256], pidfile[256];
    Pod p;
    CniRun r;
    FILE *f;

    snprintf(pidfile, sizeof(pidfile), "%s/rg-hang.pid", env.tmp);
    snprintf(hang, sizeof(hang), "%s/rg-hang", env.bindir);
    f = fopen(hang, "we");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho $$ >>'%s'\nexec sleep 1000\n", pidfile);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(hang, 0755), 0);
    assert_int_equal(
        cnienv_config_patch(&env, json_pack("{s:i}", "ipamSeconds", 1), "rg-hang", &saved), 0);
    pod_new(&p, "team-b", RES_B, ids, 2);
    assert_int_equal(add(&p, "1.1.0", NULL, &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(error_code(&r), 11);
    assert_non_null(strstr(error_msg(&r), "ipam plugin rg-hang (ADD) did not finish within 1 s"));
    assert_non_null(strstr(error_msg(&r), "timeouts.ipamSeconds"));
    cni_run_done(&r);
    assert_true(host_has("rail-nic16") && host_has("rail-nic17"));
    /* every run of it (the ADD's, the rollback's DEL) was killed and reaped
     * (on a loaded machine a run may be killed before its shell wrote) */
    f = fopen(pidfile, "re");
    for (int pid; f && fscanf(f, "%d", &pid) == 1;) {
        assert_int_equal(kill(pid, 0), -1);
        assert_int_equal(errno, ESRCH);
    }
    if (f)
        fclose(f);
    assert_int_equal(cnienv_config_restore(&env, saved), 0);
    (void)unlink(hang);
    (void)unlink(pidfile);
    /* with host-local back the same pod gets its addresses; DEL releases them */
    add_ok(&p);
    assert_true(ip_has(p.nsname, "addr show dev rail16", "inet 10.50.0."));
    del_ok(&p);
    assert_true(host_has("rail-nic16") && host_has("rail-nic17"));
    cnienv_pod_free(&env, &p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_add_one_rail_and_del),
        cmocka_unit_test(test_add_eight_rails),
        cmocka_unit_test(test_result_versions),
        cmocka_unit_test(test_del_after_netns_deleted_virtual),
        cmocka_unit_test_teardown(test_del_while_netns_dying, dying_teardown),
        cmocka_unit_test_teardown(test_del_right_after_netns_deleted, dying_teardown),
        cmocka_unit_test_teardown(test_del_racing_netns_teardown, dying_teardown),
        cmocka_unit_test(test_del_after_netns_deleted_physical),
        cmocka_unit_test(test_rollback_half_way),
        cmocka_unit_test(test_other_tenant_refused),
        cmocka_unit_test(test_device_id),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_gc),
        cmocka_unit_test(test_del_torn_record),
        cmocka_unit_test(test_add_torn_record),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_vrf_device_mode),
        cmocka_unit_test(test_rail_without_identity_refused),
        cmocka_unit_test(test_anchored_rail),
        cmocka_unit_test(test_passthrough),
        cmocka_unit_test(test_chained_after_ptp),
        cmocka_unit_test(test_ipam_host_local),
        cmocka_unit_test(test_podresources_deadline),
        cmocka_unit_test(test_ipam_deadline),
        cmocka_unit_test(test_sixteen_concurrent_adds),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
