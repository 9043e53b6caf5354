/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI under faults and hostile input: SIGKILL after every step of ADD,
 * 1000 ADD/DEL cycles with the device plugin watching, and inputs a tenant
 * could craft. Every case ends with the host exactly as it was.
 */
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "cnienv.h"
#include "macro.h"
#include "proc.h"
#include "testns.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"

static CniEnvT env;
static char *baseline; /* host links before any test */

typedef CniPod Pod;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every host link: name, MTU, admin state and global addresses, sorted by
 * name. Two snapshots are equal iff nothing on the host changed. */
static char *host_snapshot(void) {
    json_t *l = ip_json(NULL, "addr show");
    char **lines = NULL, *out = NULL;
    size_t n = json_array_size(l), len = 0;
    json_t *o;
    size_t i;

    lines = calloc(n + 1, sizeof(char *));
    json_array_foreach(l, i, o) {
        char buf[1024], *flags = json_dumps(json_object_get(o, "flags"), JSON_COMPACT);
        int k = snprintf(buf, sizeof(buf), "%s mtu=%lld %s",
                         json_string_value(json_object_get(o, "ifname")),
                         json_integer_value(json_object_get(o, "mtu")),
                         flags && strstr(flags, "\"UP\"") ? "up" : "down");
        free(flags);
        json_t *a;
        size_t j;
        json_array_foreach(json_object_get(o, "addr_info"), j, a) {
            const char *scope = json_string_value(json_object_get(a, "scope"));
            if (scope && streq(scope, "link"))
                continue; /* IPv6 link-local: the kernel's, not ours */
            k += snprintf(buf + k, sizeof(buf) - (size_t)k, " %s/%lld",
                          json_string_value(json_object_get(a, "local")),
                          json_integer_value(json_object_get(a, "prefixlen")));
        }
        lines[i] = strdup(buf);
    }
    json_decref(l);
    qsort(lines, n, sizeof(char *), cmp_str);
    for (i = 0; i < n; i++)
        len += strlen(lines[i]) + 1;
    out = calloc(len + 1, 1);
    for (i = 0; i < n; i++) {
        strcat(out, lines[i]);
        strcat(out, "\n");
        free(lines[i]);
    }
    free(lines);
    return out;
}

static void assert_host_as_before(const char *what) {
    char *now = host_snapshot();

    if (!streq(now, baseline))
        fprintf(stderr, "%s: host changed\n--- before\n%s--- after\n%s", what, baseline, now);
    assert_string_equal(now, baseline);
    free(now);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    /* lock files go with their attachment (containerd left one per sandbox) */
    assert_int_equal(cnienv_state_count(&env, "locks"), 0);
}

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(cnienv_setup(&env, CNIENV_RAILS), 0);
    baseline = host_snapshot();
    return 0;
}

static int group_teardown(void **state) {
    free(baseline);
    cnienv_teardown(&env);
    return 0;
}

static void pod_new(Pod *p, const char *ns, const char *resource, char *const *ids, size_t n) {
    assert_int_equal(cnienv_pod_new(&env, p, "hpod", ns, resource, ids, n), 0);
}

static int run(Pod *p, const char *cmd, const char *extra_json, char *const *extra_env, CniRun *r) {
    char *conf = cnienv_conf("1.1.0", extra_json);
    int rc = cnienv_run(&env, "railgate", cmd, p->container, p->netns, "eth0", p->ns, p->name, conf,
                        extra_env, r);

    free(conf);
    if (cmd[0] == 'A' && r->status == 0)
        p->result = strdup(r->raw);
    return rc;
}

static int code_of(const CniRun *r) {
    return (int)json_integer_value(json_object_get(r->out, "code"));
}

static void expect_error(Pod *p, const char *extra_json, char *const *extra_env, int code,
                         const char *what) {
    CniRun r;

    assert_int_equal(run(p, "ADD", extra_json, extra_env, &r), 0);
    if (r.status == 0 || code_of(&r) != code)
        fprintf(stderr, "%s: want code %d, got status %d: %s\n", what, code, r.status, r.raw);
    assert_int_not_equal(r.status, 0);
    assert_int_equal(code_of(&r), code);
    cni_run_done(&r);
    assert_false(ip_has(p->nsname, "link show", "rail"));
    assert_host_as_before(what);
}

static void del_ok(Pod *p) {
    char extra[9000] = "";
    CniRun r;

    if (p->result)
        snprintf(extra, sizeof(extra), "\"prevResult\": %s", p->result);
    assert_int_equal(run(p, "DEL", extra, NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
}

/* ---- crash consistency ---- */

#ifdef RAILGATE_FAILPOINTS
static void gc_ok(const char *valid_json, char *const *extra_env, int want_status) {
    char valid[256];
    CniRun r;

    snprintf(valid, sizeof(valid), "\"cni.dev/valid-attachments\": %s", valid_json);
    char *conf = cnienv_conf("1.1.0", valid);
    assert_int_equal(
        cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, extra_env, &r), 0);
    free(conf);
    if (r.status != want_status)
        fprintf(stderr, "GC: want status %d, got %d: %s\n", want_status, r.status, r.raw);
    assert_int_equal(r.status, want_status);
    cni_run_done(&r);
}
#endif

static void test_kill_after_each_add_step(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    /* add-anchored: a dummy or macvlan rail's anchor made, the rail not
     * moved (the record names the anchor; veth rails pass it too) */
    static const char *const steps[] = {"add-before-move", "add-anchored", "add-moved-unrecorded",
                                        "add-after-configure"};
    char *ids[] = {"rail0", "rail1", "rail2", "rail3"};
    char points[24][64];
    unsigned n_points = 0, trials = 0, lost = 0;

    snprintf(points[n_points++], sizeof(points[0]), "add-after-claim");
    for (size_t s = 0; s < ELEMENTSOF(steps); s++)
        for (unsigned k = 1; k <= 4; k++) {
            if (streq(steps[s], "add-anchored") && !cnienv_rails_anchored())
                continue;
            snprintf(points[n_points++], sizeof(points[0]), "%s@%u", steps[s], k);
        }
    snprintf(points[n_points++], sizeof(points[0]), "add-after-record");
    /* each kill point twice: with every batch one request per sendmsg
     * (nl-batch-one: the point falls between two requests, as in a build
     * without batches), and with the batches as they go (the reads of every
     * NIC in one batch before the first move) */
    for (unsigned i = 0; i < 2 * n_points; i++)
        for (int recover = 0; recover < 2; recover++) { /* 0: DEL, 1: GC */
            char fp[160], *extra[] = {fp, NULL};
            Pod p;
            CniRun r;

            snprintf(fp, sizeof(fp), "RAILGATE_FAILPOINT=%s%.63s=kill",
                     i < n_points ? "nl-batch-one," : "", points[i % n_points]);
            pod_new(&p, "team-a", RES_A, ids, 4);
            assert_int_equal(run(&p, "ADD", NULL, extra, &r), 0);
            assert_int_equal(r.status, 128 + SIGKILL);
            cni_run_done(&r);
            if (recover == 0)
                del_ok(&p);
            else
                gc_ok("[]", NULL, 0);
            trials++;
            for (unsigned k = 0; k < 4; k++) {
                char args[64];
                snprintf(args, sizeof(args), "link show dev rail-nic%u", k);
                if (!ip_has(NULL, args, "mtu 1500") || !ip_has(NULL, args, ",UP"))
                    lost++;
            }
            assert_false(ip_has(p.nsname, "link show", "rail"));
            assert_host_as_before(points[i % n_points]);
            cnienv_pod_free(&env, &p);
        }
    printf("crash consistency: %u kill points x {a batch per NIC, batched} x {DEL, GC} = %u "
           "trials, %u NICs lost\n",
           n_points, trials, lost);
    assert_int_equal(lost, 0);
#endif
}

/* SIGKILL inside DEL's and GC's teardown: after each NIC home, before its
 * anchor goes (anchored rails), before the NICs home are brought up, before
 * the record goes, between GC's
 * attachments. The next DEL (or GC) finishes the job and nothing is lost:
 * every NIC home as it was, no record, no claim, no lock file, no anchor
 * (the host's links are compared whole). */
static void test_kill_in_del_and_gc(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *ids[] = {"rail0", "rail1", "rail2", "rail3"}, *ids2[] = {"rail4"};
    char points[16][64];
    unsigned n_points = 0, trials = 0;

    for (unsigned k = 1; k <= 4; k++)
        snprintf(points[n_points++], sizeof(points[0]), "teardown-after-nic@%u", k);
    /* a dummy or macvlan rail home and restored, its anchor not removed */
    for (unsigned k = 1; k <= 4 && cnienv_rails_anchored(); k++)
        snprintf(points[n_points++], sizeof(points[0]), "restore-before-unanchor@%u", k);
    /* every NIC home and restored, down, none brought up yet */
    snprintf(points[n_points++], sizeof(points[0]), "teardown-before-ups");
    snprintf(points[n_points++], sizeof(points[0]), "teardown-before-remove");
    snprintf(points[n_points++], sizeof(points[0]), "gc-after-attachment");
    for (unsigned i = 0; i < n_points; i++)
        for (int by_gc = 0; by_gc < 2; by_gc++) {
            char fp[160], *extra[] = {fp, NULL};
            Pod p, q;
            CniRun r;

            if (!by_gc && strstr(points[i], "gc-"))
                continue;
            snprintf(fp, sizeof(fp), "RAILGATE_FAILPOINT=%.63s=kill", points[i]);
            pod_new(&p, "team-a", RES_A, ids, 4);
            pod_new(&q, "team-a", RES_A, ids2, 1);
            assert_int_equal(run(&p, "ADD", NULL, NULL, &r), 0);
            assert_int_equal(r.status, 0);
            cni_run_done(&r);
            assert_int_equal(run(&q, "ADD", NULL, NULL, &r), 0);
            assert_int_equal(r.status, 0);
            cni_run_done(&r);
            if (by_gc) {
                gc_ok("[]", extra, 128 + SIGKILL);
                gc_ok("[]", NULL, 0);
            } else {
                assert_int_equal(run(&p, "DEL", NULL, extra, &r), 0);
                assert_int_equal(r.status, 128 + SIGKILL);
                cni_run_done(&r);
                /* what is home stays home and is not claimed by the dead DEL's record */
                del_ok(&p);
                del_ok(&q);
            }
            trials++;
            assert_false(ip_has(p.nsname, "link show", "rail"));
            assert_false(ip_has(q.nsname, "link show", "rail"));
            assert_host_as_before(points[i]);
            cnienv_pod_free(&env, &p);
            cnienv_pod_free(&env, &q);
        }
    printf("DEL/GC crash consistency: %u kill points, %u trials, every NIC home\n", n_points,
           trials);
#endif
}

/* ---- churn ---- */

static void shuffle(unsigned *v, unsigned n, unsigned *seed) {
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned)rand_r(seed) % (i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void test_churn(void **state) {
    const char *e = getenv("RAILGATE_CHURN_CYCLES");
    unsigned cycles = e ? (unsigned)atoi(e) : 1000, seed = 20261122, done = 0;
    Pod pods[8];
    unsigned order[8];
    /* the node agent: the device plugin that answers every ADD's question
     * and takes every command's report */
    pid_t plugin = env.agent;

    assert_true(plugin > 0);
    assert_int_equal(fk_wait_registered(env.k, RES_A, 1, 30000), 0);
    assert_int_equal(fk_wait_registered(env.k, RES_B, 1, 30000), 0);
    unsigned fds0 = 0;
    long rss0 = 0;

    while (done < cycles) {
        if (done == 8 || (done > 0 && !fds0)) { /* after a warm-up round */
            fds0 = proc_stable_fd_count(plugin, 5);
            rss0 = proc_rss_kb(plugin);
        }
        for (unsigned k = 0; k < 8; k++) {
            char id[16], *ids[] = {id};
            snprintf(id, sizeof(id), "rail%u", k);
            pod_new(&pods[k], "team-a", RES_A, ids, 1);
            order[k] = k;
        }
        shuffle(order, 8, &seed);
        for (unsigned i = 0; i < 8; i++) {
            CniRun r;
            assert_int_equal(run(&pods[order[i]], "ADD", NULL, NULL, &r), 0);
            if (r.status)
                fprintf(stderr, "ADD: %s\n", r.raw);
            assert_int_equal(r.status, 0);
            cni_run_done(&r);
        }
        shuffle(order, 8, &seed);
        for (unsigned i = 0; i < 8 && done < cycles; i++, done++)
            del_ok(&pods[order[i]]);
        for (unsigned k = 0; k < 8; k++) {
            if (pods[k].result && cnienv_state_count(&env, "attachments") > 0) {
                /* cycles ran out mid-round: finish the round's DELs */
                char path[256];
                snprintf(path, sizeof(path), "%s/attachments/%s:eth0.json", env.state,
                         pods[k].container);
                if (access(path, F_OK) == 0)
                    del_ok(&pods[k]);
            }
            cnienv_pod_free(&env, &pods[k]);
        }
    }
    unsigned fds1 = proc_stable_fd_count(plugin, 5);
    long rss1 = proc_rss_kb(plugin);
    printf("churn: %u ADD/DEL cycles over 8 rails; node agent (device plugin) fds %u -> %u, RSS "
           "%ld -> %ld kB (from cycle 8 on)\n",
           done, fds0, fds1, rss0, rss1);
    assert_int_equal(fds1, fds0);
    assert_int_equal(kill(plugin, 0), 0); /* alive */
    assert_host_as_before("churn");
}

/* ---- hostile tenant input ---- */

static void test_stdin_names_host_device(void **state) {
    char *ids[] = {"rail4"};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    expect_error(&p, "\"device\": \"rail-nic3\"", NULL, 2, "stdin device");
    expect_error(&p, "\"kernelpath\": \"/sys/class/net/rail-nic3\"", NULL, 2, "stdin kernelpath");
    expect_error(&p, "\"deviceID\": \"rail-nic3\"", NULL, 101, "stdin deviceID host netdev");
    expect_error(&p, "\"runtimeConfig\": {\"deviceID\": \"0000:00:00.0\"}", NULL, 101,
                 "stdin deviceID PCI address");
    expect_error(&p, "\"tenant\": \"b\"", NULL, 2, "stdin tenant");
    cnienv_pod_free(&env, &p);
}

static void test_device_id_of_other_pod_or_tenant(void **state) {
    char *mine[] = {"rail5"}, *theirs[] = {"rail6"};
    Pod p, other;

    pod_new(&p, "team-a", RES_A, mine, 1);
    pod_new(&other, "team-a", RES_A, theirs, 1);
    expect_error(&p, "\"deviceID\": \"rail6\"", NULL, 101, "another pod's unit");
    expect_error(&p, "\"deviceID\": \"rail16\"", NULL, 101, "another tenant's unit");
    cnienv_pod_free(&env, &other);
    cnienv_pod_free(&env, &p);
}

static void test_interface_name_collisions(void **state) {
    char *ids[] = {"rail7"};
    char *host_if[] = {"CNI_IFNAME=rail-nic8", NULL};
    char args[128];
    Pod p;
    CniRun r;

    /* a pod-side name already taken in the pod: the ADD fails, nothing is lost */
    pod_new(&p, "team-a", RES_A, ids, 1);
    snprintf(args, sizeof(args), "link add rail7 type veth peer name squat7");
    assert_int_equal(ip_cmd(p.nsname, args), 0);
    assert_int_equal(run(&p, "ADD", NULL, NULL, &r), 0);
    assert_int_not_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(ip_has(p.nsname, "link show dev rail7", "squat7"));
    assert_host_as_before("pod-side name taken");
    cnienv_pod_free(&env, &p);

    /* the second NIC's name taken: every name is checked before the first
     * move, so the ADD fails with rail7 never having left */
    char *two[] = {"rail7", "rail8"};
    pod_new(&p, "team-a", RES_A, two, 2);
    assert_int_equal(ip_cmd(p.nsname, "link add rail8 type veth peer name squat8"), 0);
    long mark = file_length(env.log);
    assert_int_equal(run(&p, "ADD", NULL, NULL, &r), 0);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.raw, "the pod already has an interface rail8"));
    cni_run_done(&r);
    assert_true(ip_has(p.nsname, "link show dev rail8", "squat8"));
    assert_false(ip_has(p.nsname, "link show", "rail7"));
    /* no rollback brought it home: it never moved */
    assert_false(file_contains_from(env.log, mark, "NIC rail-nic7 back in the host namespace"));
    assert_host_as_before("second pod-side name taken");
    cnienv_pod_free(&env, &p);

#ifdef RAILGATE_FAILPOINTS
    /* the second NIC's name taken after the check, rail7 moved, held before
     * rail8's move: the kernel moves rail8 under its host name and refuses
     * the rename; the ADD fails and its rollback brings both home */
    char *held[] = {"RAILGATE_FAILPOINT=add-before-move@2=pause", NULL};
    char *conf = cnienv_conf("1.1.0", NULL);
    CniProc proc;
    pod_new(&p, "team-a", RES_A, two, 2);
    assert_int_equal(cnienv_start(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns,
                                  p.name, conf, held, &proc),
                     0);
    assert_int_equal(cni_proc_wait_stopped(&proc), 0);
    assert_true(ip_has(p.nsname, "link show dev rail7", "rail7")); /* moved already */
    assert_int_equal(ip_cmd(p.nsname, "link add rail8 type veth peer name squat8"), 0);
    assert_int_equal(cni_proc_continue(&proc), 0);
    assert_int_equal(cni_proc_finish(&proc, &r), 0);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.raw, "the pod already has an interface rail8"));
    cni_run_done(&r);
    free(conf);
    assert_true(ip_has(p.nsname, "link show dev rail8", "squat8"));
    assert_false(ip_has(p.nsname, "link show", "rail-nic"));
    assert_host_as_before("second pod-side name taken after the check");
    cnienv_pod_free(&env, &p);
#endif

    /* CNI_IFNAME naming a host interface changes nothing on that interface */
    pod_new(&p, "team-a", RES_A, ids, 1);
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, p.netns, "rail-nic8", p.ns,
                                p.name, "{\"cniVersion\":\"1.1.0\",\"name\":\"r\",\"type\":\"x\"}",
                                host_if, &r),
                     0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_true(ip_has(NULL, "link show dev rail-nic8", "mtu 1500"));
    assert_true(ip_has(p.nsname, "link show dev rail7", "rail7"));
    assert_int_equal(cnienv_run(&env, "railgate", "DEL", p.container, p.netns, "rail-nic8", p.ns,
                                p.name, "{\"cniVersion\":\"1.1.0\",\"name\":\"r\",\"type\":\"x\"}",
                                host_if, &r),
                     0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_host_as_before("CNI_IFNAME of a host interface");
    cnienv_pod_free(&env, &p);
}

static void test_path_traversal(void **state) {
    char *ids[] = {"rail9"};
    char *cid[] = {"CNI_CONTAINERID=../../etc/passwd", NULL};
    char *ns_up[] = {"CNI_NETNS=/run/netns/../../proc/1/ns/net", NULL};
    char *ns_host[] = {"CNI_NETNS=/proc/self/ns/net", NULL};
    char *ns_file[] = {"CNI_NETNS=/etc/hostname", NULL};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    expect_error(&p, NULL, cid, 4, "container id traversal");
    expect_error(&p, NULL, ns_up, 4, "netns path traversal");
    expect_error(&p, NULL, ns_host, 4, "the node's own netns");
    expect_error(&p, NULL, ns_file, 4, "netns path that is not a namespace");
    cnienv_pod_free(&env, &p);
}

static void test_oversized(void **state) {
    char *ids[] = {"rail10"};
    static char big_args[8192], big_ver[4096], long_if[64];
    char *args[] = {big_args, NULL}, *ifn[] = {long_if, NULL};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    snprintf(big_args, sizeof(big_args), "CNI_ARGS=K8S_POD_NAME=%s;K8S_POD_NAMESPACE=", p.name);
    memset(big_args + strlen(big_args), 'a', 300);
    expect_error(&p, NULL, args, 4, "namespace of 300 characters");
    snprintf(long_if, sizeof(long_if), "CNI_IFNAME=%s", "abcdefghijklmnopq");
    expect_error(&p, NULL, ifn, 4, "interface name of 17 characters");
    memset(big_ver, '9', sizeof(big_ver) - 1);
    char *conf;
    assert_true(asprintf(&conf, "\"x\": \"%s\"", big_ver) > 0);
    /* an unknown key may be long; the config is still fine and this ADD works */
    CniRun r;
    assert_int_equal(run(&p, "ADD", conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    del_ok(&p);
    free(conf);
    /* 2 MiB of stdin: refused before parsing */
    size_t n = 2u << 20;
    char *huge = malloc(n + 64);
    snprintf(huge, 64, "{\"cniVersion\":\"1.1.0\",\"name\":\"r\",\"type\":\"x\",\"pad\":\"");
    size_t k = strlen(huge);
    memset(huge + k, 'p', n);
    strcpy(huge + k + n, "\"}");
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns, p.name,
                                huge, NULL, &r),
                     0);
    free(huge);
    assert_int_not_equal(r.status, 0);
    cni_run_done(&r);
    assert_host_as_before("oversized stdin");
    cnienv_pod_free(&env, &p);
}

static void test_cni_args(void **state) {
    char *ids[] = {"rail11"};
    char dup[256], missing[256], other[256];
    char *e_dup[] = {dup, NULL}, *e_missing[] = {missing, NULL}, *e_other[] = {other, NULL};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    snprintf(dup, sizeof(dup),
             "CNI_ARGS=K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=%s;K8S_POD_NAMESPACE=team-b", p.name);
    expect_error(&p, NULL, e_dup, 4, "duplicate namespace key");
    snprintf(missing, sizeof(missing), "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=%s", p.name);
    expect_error(&p, NULL, e_missing, 4, "missing namespace key");
    /* another namespace: kubelet has no such pod, so it holds nothing here */
    snprintf(other, sizeof(other), "CNI_ARGS=K8S_POD_NAMESPACE=team-b;K8S_POD_NAME=%s", p.name);
    CniRun r;
    assert_int_equal(run(&p, "ADD", NULL, e_other, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_false(ip_has(p.nsname, "link show", "rail"));
    assert_host_as_before("another namespace's pod name");
    cnienv_pod_free(&env, &p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_after_each_add_step),
        cmocka_unit_test(test_kill_in_del_and_gc),
        cmocka_unit_test(test_stdin_names_host_device),
        cmocka_unit_test(test_device_id_of_other_pod_or_tenant),
        cmocka_unit_test(test_interface_name_collisions),
        cmocka_unit_test(test_path_traversal),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_cni_args),
        cmocka_unit_test(test_churn),
    };
    /* RAILGATE_TEST_ONLY=test_interface_*: the tests whose names match */
    if (getenv("RAILGATE_TEST_ONLY"))
        cmocka_set_test_filter(getenv("RAILGATE_TEST_ONLY"));
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
