/* SPDX-License-Identifier: Apache-2.0 */
/* Hostile tenant, config half: network configs and input a tenant shapes, refused before anything
 * moves. */
#include <ctype.h>
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cnienv.h"
#include "proc.h"
#include "testns.h"
#include "waitscale.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"

static CniEnvT env;
static char *node_orig; /* the node config as cnienv wrote it */
static char fake_log[192], fake_mode[192];

typedef CniPod Pod;

#ifndef ELEMENTSOF
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#endif

/* An IPAM plugin that logs each call (command, container, ifname, CNI_ARGS,
 * stdin) and answers as fake-ipam.mode says: "fail" fails ADD after
 * "allocating"; otherwise ADD answers fake-ipam.result, or 10.50.0.9/24
 * and 10.51.0.9/24 without it. It
 * speaks 1.1.0, so GC is forwarded to it. */
static const char FAKE_IPAM[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "in=$(cat)\n"
    "printf '%s\\t%s\\t%s\\t%s\\t%s\\n' \"$CNI_COMMAND\" \"$CNI_CONTAINERID\" \"$CNI_IFNAME\" "
    "\"$CNI_ARGS\" \"$in\" >> \"$d/fake-ipam.log\"\n"
    "mode=$(cat \"$d/fake-ipam.mode\" 2>/dev/null)\n"
    "case \"$CNI_COMMAND\" in\n"
    "VERSION) echo '{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.0.0\",\"1.1.0\"]}' ;;\n"
    "ADD) if [ \"$mode\" = fail ]; then\n"
    "  echo '{\"cniVersion\":\"1.1.0\",\"code\":11,\"msg\":\"fake: no addresses left\"}'; exit 1\n"
    "  fi\n"
    "  if [ -e \"$d/fake-ipam.result\" ]; then cat \"$d/fake-ipam.result\"; exit 0; fi\n"
    "  echo '{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.50.0.9/24\"},"
    "{\"address\":\"10.51.0.9/24\"}]}' ;;\n"
    "esac\n"
    "exit 0\n";

static char *read_text(const char *path) {
    FILE *f = fopen(path, "re");
    char *s = NULL;
    size_t n = 0;

    if (!f)
        return NULL;
    if (getdelim(&s, &n, 0, f) < 0) {
        free(s);
        s = strdup("");
    }
    fclose(f);
    return s;
}

static void write_text(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static int group_setup(void **state) {
    char path[256];

    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(cnienv_setup(&env, CNIENV_RAILS), 0);
    node_orig = read_text(env.config);
    assert_non_null(node_orig);
    snprintf(path, sizeof(path), "%s/fake-ipam", env.bindir);
    write_text(path, FAKE_IPAM, 0755);
    /* railgate by another name: a node config naming it must not run it */
    snprintf(path, sizeof(path), "%s/rg-alias", env.bindir);
    assert_int_equal(symlink(proc_bin("cni/railgate"), path), 0);
    snprintf(fake_log, sizeof(fake_log), "%s/fake-ipam.log", env.bindir);
    snprintf(fake_mode, sizeof(fake_mode), "%s/fake-ipam.mode", env.bindir);
    return 0;
}

static int group_teardown(void **state) {
    cnienv_teardown(&env);
    free(node_orig);
    return 0;
}

/* Tenant b's "ipam" in the node config replaced by ipam_json (NULL: as set up). */
static void node_ipam(const char *ipam_json) {
    char *text = NULL;
    const char *at = strstr(node_orig, "\"ipam\": ");

    assert_non_null(at);
    if (!ipam_json)
        text = strdup(node_orig);
    else
        assert_true(asprintf(&text, "%.*s\"ipam\": %s}\n ]}\n", (int)(at - node_orig), node_orig,
                             ipam_json) > 0);
    write_text(env.config, text, 0644);
    free(text);
}

static void fake_reset(const char *mode) {
    char path[256];

    snprintf(path, sizeof(path), "%s/fake-ipam.result", env.bindir);
    unlink(path);
    unlink(fake_log);
    write_text(fake_mode, mode, 0644);
}

static void fake_result(const char *json) {
    char path[256];

    snprintf(path, sizeof(path), "%s/fake-ipam.result", env.bindir);
    write_text(path, json, 0644);
}

/* The lines of the fake plugin's log but VERSION (railgate asks which
 * versions it speaks), NULL-terminated (empty: never ran for anything else). */
static char **fake_calls(void) {
    char *text = read_text(fake_log), *save = NULL;
    char **l = calloc(64, sizeof(char *));
    size_t n = 0;

    assert_non_null(l);
    for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line && n < 63;
         line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, "VERSION\t", 8))
            l[n++] = strdup(line);
    free(text);
    return l;
}

static void calls_free(char **l) {
    for (char **p = l; *p; p++)
        free(*p);
    free(l);
}

static size_t calls_count(char **l) {
    size_t n = 0;

    while (l[n])
        n++;
    return n;
}

/* Field i (0 command, 1 container, 2 ifname, 3 CNI_ARGS, 4 stdin) of a log line. */
static char *call_field(const char *line, int i) {
    const char *p = line;

    for (; i > 0 && p; i--) {
        p = strchr(p, '\t');
        p = p ? p + 1 : NULL;
    }
    assert_non_null(p);
    return strndup(p, strcspn(p, "\t"));
}

/* The node as the tenant must not be able to change it. */
typedef struct Snapshot {
    char *links; /* `ip -j addr show` of the node */
} Snapshot;

/* Each link's index, name, MTU, MAC, flags, and its addresses other than
 * link-local ones (IPv6 DAD state changes on its own; what we own does not). */
static void snapshot(Snapshot *s) {
    json_t *j = ip_json(NULL, "addr show"), *l, *a;
    size_t i, k;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(j);
    assert_non_null(f);
    json_array_foreach(j, i, l) {
        char *flags = json_dumps(json_object_get(l, "flags"), JSON_COMPACT);
        fprintf(f, "%lld %s mtu %lld %s %s",
                (long long)json_integer_value(json_object_get(l, "ifindex")),
                json_string_value(json_object_get(l, "ifname")),
                (long long)json_integer_value(json_object_get(l, "mtu")),
                json_string_value(json_object_get(l, "address")), flags ? flags : "");
        free(flags);
        json_array_foreach(json_object_get(l, "addr_info"), k, a) {
            const char *scope = json_string_value(json_object_get(a, "scope"));
            if (scope && !strcmp(scope, "link"))
                continue;
            fprintf(f, " %s/%lld", json_string_value(json_object_get(a, "local")),
                    (long long)json_integer_value(json_object_get(a, "prefixlen")));
        }
        fputc('\n', f);
    }
    fclose(f);
    json_decref(j);
    s->links = text;
}

/* Nothing moved: the node's links and addresses as before, the pod with
 * only lo, no record, no unit claimed. */
static void assert_nothing_moved(const Snapshot *before, const Pod *p) {
    Snapshot after;

    snapshot(&after);
    if (strcmp(before->links, after.links))
        fail_msg("the node's links changed:\nbefore:\n%s\nafter:\n%s", before->links, after.links);
    free(after.links);
    json_t *pod = ip_json(p->nsname, "link show");
    assert_int_equal(json_array_size(pod), 1);
    json_decref(pod);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
}

static int run_in(const Pod *p, const char *cmd, const char *netns, const char *conf, CniRun *r) {
    return cnienv_run(&env, "railgate", cmd, p->container, netns, "eth0", p->ns, p->name, conf,
                      NULL, r);
}

/* ADD (conf as given) must fail with code and a message containing want,
 * and move nothing. */
static void expect_refused(const Pod *p, const char *netns, const char *conf, int code,
                           const char *want) {
    Snapshot before;
    CniRun r;

    snapshot(&before);
    assert_int_equal(run_in(p, "ADD", netns, conf, &r), 0);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    if (r.status != 1 || json_integer_value(json_object_get(r.out, "code")) != code || !msg ||
        !strstr(msg, want))
        fail_msg("want code %d and \"%s\" for %s\ngot %s", code, want, conf, r.raw);
    cni_run_done(&r);
    assert_nothing_moved(&before, p);
    free(before.links);
}

static void pod_new(Pod *p, const char *ns, const char *resource, char *const *ids, size_t n) {
    assert_int_equal(cnienv_pod_new(&env, p, "pod", ns, resource, ids, n), 0);
}

/* ---- refused keys ------------------------------------------------------- */

static const char *const REFUSED[] = {"device",  "hwaddr",   "kernelpath", "netdev",    "tenant",
                                      "tenants", "resource", "rails",      "nodeConfig"};

/* key in one of Go's spellings: 0 as is, 1 upper, 2 capitalised, 3 alternating */
static void spell(const char *key, int how, char *buf, size_t n) {
    size_t i;

    for (i = 0; key[i] && i + 1 < n; i++) {
        char c = key[i];
        bool up = how == 1 || (how == 2 && i == 0) || (how == 3 && i % 2 == 1);
        buf[i] = up ? (char)toupper((unsigned char)c) : (char)tolower((unsigned char)c);
    }
    buf[i] = 0;
}

/* Where a key goes: the top level, or nested where some plugin reads config;
 * its value names a NIC of tenant b. */
static const struct {
    const char *pre, *post, *path;
} PLACES[] = {
    {"\"", "\": \"rail-nic16\"", ""},
    {"\"args\": {\"cni\": {\"", "\": \"rail-nic16\"}}", "args.cni."},
    {"\"runtimeConfig\": {\"", "\": \"rail-nic16\"}", "runtimeConfig."},
    {"\"ipam\": {\"type\": \"host-device\", \"", "\": \"rail-nic16\"}", "ipam."},
    {"\"x\": [{\"y\": [{\"", "\": \"rail-nic16\"}]}]", "x.y."},
};

static void test_refused_keys_any_case_any_depth(void **state) {
    char *ids[] = {"rail0"}, key[32], member[160], want[96];
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    for (size_t k = 0; k < ELEMENTSOF(REFUSED); k++)
        for (int how = 0; how < 4; how++)
            for (size_t w = 0; w < ELEMENTSOF(PLACES); w++) {
                spell(REFUSED[k], how, key, sizeof(key));
                snprintf(member, sizeof(member), "%s%s%s", PLACES[w].pre, key, PLACES[w].post);
                snprintf(want, sizeof(want), "unsupported field \"%s%s\"", PLACES[w].path, key);
                char *conf = cnienv_conf("1.1.0", member);
                expect_refused(&p, p.netns, conf, 2, want);
                free(conf);
            }
    assert_true(ip_has(NULL, "link show dev rail-nic16", "rail-nic16"));
    cnienv_pod_free(&env, &p);
}

/* encoding/json also folds U+017F (long s) to 's' and U+212A (Kelvin) to 'k'. */
static void test_refused_keys_unicode_folds(void **state) {
    static const char *const members[] = {
        "\"re\xc5\xbfource\": \"railgate.io/b\"",
        "\"\xe2\x84\xaa"
        "ernelpath\": \"/sys/devices/x\"",
        "\"DEVI\xc5\xbf\": \"x\"", /* not a fold of device: must pass this check */
    };
    char *ids[] = {"rail0"};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    char *conf = cnienv_conf("1.1.0", members[0]);
    expect_refused(&p, p.netns, conf, 2, "(read as \"resource\")");
    free(conf);
    conf = cnienv_conf("1.1.0", members[1]);
    expect_refused(&p, p.netns, conf, 2, "(read as \"kernelpath\")");
    free(conf);
    /* "DEVIſ" is no refused key: the ADD goes on (and succeeds) */
    conf = cnienv_conf("1.1.0", members[2]);
    CniRun r;
    assert_int_equal(run_in(&p, "ADD", p.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    assert_int_equal(run_in(&p, "DEL", p.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    cnienv_pod_free(&env, &p);
}

/* ---- IPAM in the network config ---------------------------------------- */

static void test_stdin_ipam_refused(void **state) {
    static const char *const types[] = {
        "host-device", "host-local", "static",   "dhcp",         "railgate",
        "bridge",      "fake-ipam",  "rg-alias", "../../bin/sh", "/usr/lib/cni/host-device",
    };
    static const char *const keys[] = {"ipam", "IPAM", "Ipam", "iPaM"};
    char *ids[] = {"rail16", "rail17"}, member[256], want[64];
    Pod p;

    fake_reset("ok");
    pod_new(&p, "team-b", RES_B, ids, 2);
    for (size_t i = 0; i < ELEMENTSOF(types); i++)
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
            snprintf(member, sizeof(member), "\"%s\": {\"type\": \"%s\"}", keys[k], types[i]);
            snprintf(want, sizeof(want), "%s: not allowed", keys[k]);
            char *conf = cnienv_conf("1.0.0", member);
            expect_refused(&p, p.netns, conf, 7, want);
            free(conf);
        }
    /* and not even the node config's plugin ran */
    char **calls = fake_calls();
    assert_int_equal(calls_count(calls), 0);
    calls_free(calls);
    assert_true(ip_has(NULL, "link show dev rail-nic16", "rail-nic16"));
    cnienv_pod_free(&env, &p);
}

/* DEL of an attachment railgate never made runs no plugin a network config
 * names, and does not fail on keys ADD refuses (the pod stays deletable). */
static void test_del_unknown_runs_no_ipam(void **state) {
    char *ids[] = {"rail16", "rail17"};
    Pod p;
    CniRun r;

    fake_reset("ok");
    pod_new(&p, "team-b", RES_B, ids, 2);
    char *conf = cnienv_conf("1.1.0", "\"ipam\": {\"type\": \"fake-ipam\"}, \"Device\": \"x\"");
    assert_int_equal(run_in(&p, "DEL", p.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    char **calls = fake_calls();
    assert_int_equal(calls_count(calls), 0);
    calls_free(calls);
    cnienv_pod_free(&env, &p);
}

/* ---- IPAM from the node config ------------------------------------------ */

static void test_node_ipam_railgate_itself(void **state) {
    char *ids[] = {"rail16", "rail17"};
    Pod p;

    pod_new(&p, "team-b", RES_B, ids, 2);
    char *conf = cnienv_conf("1.1.0", NULL);
    /* by name: the node config itself is refused */
    node_ipam("{\"type\": \"railgate\"}");
    expect_refused(&p, p.netns, conf, 7, "railgate never runs itself as IPAM");
    node_ipam("{\"type\": \"RAILGATE\"}");
    expect_refused(&p, p.netns, conf, 7, "is not an IPAM plugin");
    /* by another name in CNI_PATH: refused when resolved (same inode), no deadlock */
    node_ipam("{\"type\": \"rg-alias\"}");
    expect_refused(&p, p.netns, conf, 7, "is railgate itself");
    node_ipam("{\"type\": \"host-device\", \"device\": \"rail-nic0\"}");
    expect_refused(&p, p.netns, conf, 7, "\"host-device\" is not an IPAM plugin");
    node_ipam(NULL);
    free(conf);
    cnienv_pod_free(&env, &p);
}

/* A plugin that fails its ADD is released (IPAM DEL) before the ADD answers. */
static void test_node_ipam_failed_add_released(void **state) {
    char *ids[] = {"rail16", "rail17"};
    Pod p;

    fake_reset("fail");
    node_ipam("{\"type\": \"fake-ipam\", \"pool\": \"b\"}");
    pod_new(&p, "team-b", RES_B, ids, 2);
    char *conf = cnienv_conf("1.1.0", NULL);
    expect_refused(&p, p.netns, conf, 11, "ipam plugin fake-ipam (ADD): fake: no addresses left");
    free(conf);
    char **calls = fake_calls();
    assert_int_equal(calls_count(calls), 2);
    assert_true(!strncmp(calls[0], "ADD\t", 4));
    assert_true(!strncmp(calls[1], "DEL\t", 4));
    char *c0 = call_field(calls[0], 1), *c1 = call_field(calls[1], 1);
    char *s0 = call_field(calls[0], 4), *s1 = call_field(calls[1], 4);
    assert_string_equal(c0, p.container);
    assert_string_equal(c1, p.container);
    assert_string_equal(s0, s1); /* released with exactly what it was given */
    free(c0), free(c1), free(s0), free(s1);
    calls_free(calls);
    node_ipam(NULL);
    cnienv_pod_free(&env, &p);
}

/* Too few addresses (host-local with one range for two rails): released too. */
static void test_node_ipam_short_result_released(void **state) {
    char *ids[] = {"rail16", "rail17"}, ipam[512], dir[256];
    Pod p;

    snprintf(ipam, sizeof(ipam),
             "{\"type\": \"host-local\", \"dataDir\": \"%s\", \"ranges\": "
             "[[{\"subnet\": \"10.50.0.0/24\"}]]}",
             env.ipamdir);
    node_ipam(ipam);
    pod_new(&p, "team-b", RES_B, ids, 2);
    char *conf = cnienv_conf("1.0.0", NULL);
    expect_refused(&p, p.netns, conf, 7, "gave 1 addresses for 2 rails");
    free(conf);
    snprintf(dir, sizeof(dir), "%s/railgate-b/10.50.0.2", env.ipamdir);
    assert_int_equal(access(dir, F_OK), -1);
    node_ipam(NULL);
    cnienv_pod_free(&env, &p);
}

/* The plugin gets only its own config: no key of stdin (args, runtimeConfig,
 * anything), no address a tenant asked for in CNI_ARGS; DEL releases with
 * the recorded config even when DEL's stdin says another version. */
static void test_node_ipam_gets_only_its_config(void **state) {
    char *ids[] = {"rail16", "rail17"}, cni_args[256];
    char *extra[] = {cni_args, NULL};
    Pod p;
    CniRun r;

    fake_reset("ok");
    node_ipam("{\"type\": \"fake-ipam\", \"pool\": \"b\"}");
    pod_new(&p, "team-b", RES_B, ids, 2);
    /* an address asked for in CNI_ARGS (as host-local reads IP=) */
    snprintf(cni_args, sizeof(cni_args),
             "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=team-b;K8S_POD_NAME=%s;IP=10.50.0.200",
             p.name);
    char *conf = cnienv_conf("1.1.0", "\"args\": {\"cni\": {\"ips\": [\"10.50.0.77\"]}},"
                                      " \"runtimeConfig\": {\"ips\": [\"10.50.0.78\"]},"
                                      " \"capabilities\": {\"ips\": true}, \"extra\": 1");
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns, p.name,
                                conf, extra, &r),
                     0);
    if (r.status)
        fprintf(stderr, "ADD: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_true(ip_has(p.nsname, "addr show dev rail16", "inet 10.50.0.9/24"));
    char **calls = fake_calls();
    assert_int_equal(calls_count(calls), 1);
    char *in = call_field(calls[0], 4), *args = call_field(calls[0], 3);
    assert_string_equal(in, "{\"cniVersion\":\"1.1.0\",\"name\":\"railgate-b\","
                            "\"ipam\":{\"pool\":\"b\",\"type\":\"fake-ipam\"}}");
    assert_null(strstr(args, "IP="));
    free(args);
    calls_free(calls);
    /* DEL with another version and no ipam: the recorded config is used */
    conf = cnienv_conf("1.0.0", NULL);
    assert_int_equal(run_in(&p, "DEL", p.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    calls = fake_calls();
    assert_int_equal(calls_count(calls), 2);
    assert_true(!strncmp(calls[1], "DEL\t", 4));
    char *del_in = call_field(calls[1], 4), *ifn = call_field(calls[1], 2);
    assert_string_equal(del_in, in);
    assert_string_equal(ifn, "eth0");
    free(del_in), free(ifn), free(in);
    calls_free(calls);
    assert_true(ip_has(NULL, "link show dev rail-nic16", "rail-nic16"));
    node_ipam(NULL);
    cnienv_pod_free(&env, &p);
}

/* GC: the IPAM plugin gets GC with the runtime's list and every attachment
 * still recorded; one GC tears down is released with its own record. */
static void test_gc_forwarded_to_ipam(void **state) {
    char *ids1[] = {"rail16"}, *ids2[] = {"rail17"}, extra[512];
    Pod keep, gone;
    CniRun r;

    fake_reset("ok");
    node_ipam("{\"type\": \"fake-ipam\", \"pool\": \"b\"}");
    pod_new(&keep, "team-b", RES_B, ids1, 1);
    pod_new(&gone, "team-b", RES_B, ids2, 1);
    char *conf = cnienv_conf("1.1.0", NULL);
    fake_result("{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.50.0.9/24\"}]}");
    assert_int_equal(run_in(&keep, "ADD", keep.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    fake_result("{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.51.0.9/24\"}]}");
    assert_int_equal(run_in(&gone, "ADD", gone.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    fake_reset("ok");
    snprintf(extra, sizeof(extra),
             "\"cni.dev/valid-attachments\": [{\"containerID\": \"%s\", \"ifname\": \"eth0\"},"
             " {\"containerID\": \"other\", \"ifname\": \"net1\"}]",
             keep.container);
    conf = cnienv_conf("1.1.0", extra);
    assert_int_equal(
        cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    if (r.status)
        fprintf(stderr, "GC: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    char **calls = fake_calls();
    bool del_gone = false, gc = false;
    for (char **c = calls; *c; c++) {
        char *cmd = call_field(*c, 0), *cid = call_field(*c, 1), *in = call_field(*c, 4);
        if (!strcmp(cmd, "DEL")) {
            assert_string_equal(cid, gone.container); /* never the kept one */
            del_gone = true;
        }
        if (!strcmp(cmd, "GC")) {
            json_t *j = json_loads(in, 0, NULL);
            json_t *l = json_object_get(j, "cni.dev/valid-attachments");
            char *s = json_dumps(l, JSON_COMPACT);
            assert_non_null(strstr(s, keep.container));
            assert_non_null(strstr(s, "\"other\""));
            assert_null(strstr(s, gone.container));
            assert_string_equal(json_string_value(json_object_get(j, "name")), "railgate-b");
            free(s);
            json_decref(j);
            gc = true;
        }
        free(cmd), free(cid), free(in);
    }
    calls_free(calls);
    assert_true(del_gone);
    assert_true(gc);
    conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(run_in(&keep, "DEL", keep.netns, conf, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    node_ipam(NULL);
    cnienv_pod_free(&env, &keep);
    cnienv_pod_free(&env, &gone);
}

/* The kernel explains its refusals (extended ack): an IPAM address outside
 * the rail gateway's subnet makes it refuse the route, and its words reach
 * the CNI error and the log, not just "Network is unreachable". The ADD
 * rolls back: nothing moved. */
static void test_kernel_words_reach_the_error(void **state) {
    char *ids[] = {"rail17"};
    Pod p;

    fake_reset("ok");
    fake_result("{\"cniVersion\":\"1.1.0\",\"ips\":[{\"address\":\"10.50.0.9/24\"}]}");
    node_ipam("{\"type\": \"fake-ipam\"}");
    pod_new(&p, "team-b", RES_B, ids, 1);
    char *conf = cnienv_conf("1.1.0", NULL);
    expect_refused(&p, p.netns, conf, 102, "(kernel: ");
    free(conf);
    char *log = read_text(env.log);
    assert_non_null(log);
    assert_non_null(strstr(log, "(kernel: "));
    free(log);
    node_ipam(NULL);
    cnienv_pod_free(&env, &p);
}

#ifdef RAILGATE_FAILPOINTS /* the helpers of the kill trials below */
/* Addresses host-local holds for tenant b (its files named by address). */
static unsigned ipam_allocations(void) {
    char path[256];
    unsigned n = 0;

    snprintf(path, sizeof(path), "%s/railgate-b", env.ipamdir);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));)
        n += strncmp(de->d_name, "10.", 3) == 0;
    if (d)
        closedir(d);
    return n;
}

#endif

/* SIGKILL after the IPAM config is recorded and before the plugin runs, and
 * after it allocated but before any NIC moved: the next DEL (or GC) releases
 * the allocation with the record, and nothing is left. */
static void test_kill_around_ipam(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    static const char *const points[] = {"add-before-ipam", "add-after-ipam"};
    char *ids[] = {"rail16", "rail17"}, fp[96], *extra[] = {fp, NULL};

    for (size_t i = 0; i < ELEMENTSOF(points); i++)
        for (int recover = 0; recover < 2; recover++) { /* 0: DEL, 1: GC */
            Snapshot before;
            Pod p;
            CniRun r;

            snapshot(&before);
            pod_new(&p, "team-b", RES_B, ids, 2);
            snprintf(fp, sizeof(fp), "RAILGATE_FAILPOINT=%s=kill", points[i]);
            char *conf = cnienv_conf("1.1.0", NULL);
            assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns,
                                        p.name, conf, extra, &r),
                             0);
            assert_int_equal(r.status, 128 + SIGKILL);
            cni_run_done(&r);
            /* killed after the plugin ran: its two addresses are taken */
            assert_int_equal(ipam_allocations(), i == 1 ? 2 : 0);
            assert_int_equal(cnienv_state_count(&env, "attachments"), 1);
            free(conf);
            if (recover == 0)
                conf = cnienv_conf("1.1.0", NULL);
            else
                conf = cnienv_conf("1.1.0", "\"cni.dev/valid-attachments\": []");
            assert_int_equal(cnienv_run(&env, "railgate", recover ? "GC" : "DEL",
                                        recover ? NULL : p.container, recover ? NULL : p.netns,
                                        recover ? NULL : "eth0", recover ? NULL : p.ns,
                                        recover ? NULL : p.name, conf, NULL, &r),
                             0);
            if (r.status)
                fprintf(stderr, "%s: %s\n", recover ? "GC" : "DEL", r.raw);
            assert_int_equal(r.status, 0);
            cni_run_done(&r);
            free(conf);
            assert_int_equal(ipam_allocations(), 0);
            assert_nothing_moved(&before, &p);
            free(before.links);
            cnienv_pod_free(&env, &p);
        }
#endif
}

#ifdef RAILGATE_FAILPOINTS
/* A proc root whose boot_id is id, for RAILGATE_PROC_ROOT (a fake reboot). */
static void boot_root(const char *name, const char *id, char *env_var, size_t n) {
    char path[256];

    snprintf(path, sizeof(path), "mkdir -p %s/%s/sys/kernel/random", env.tmp, name);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof(path), "%s/%s/sys/kernel/random/boot_id", env.tmp, name);
    write_text(path, id, 0644);
    snprintf(env_var, n, "RAILGATE_PROC_ROOT=%s/%s", env.tmp, name);
}

#endif

/* A record of an earlier boot holds no NIC, but its IPAM allocation may
 * have outlived the boot (host-local's store is on disk): the DEL that
 * drops the record releases it with the recorded config. */
static void test_earlier_boot_releases_ipam(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *ids[] = {"rail16", "rail17"}, boot1[256], boot2[256], fp[64];
    char *add_env[] = {boot1, fp, NULL}, *del_env[] = {boot2, NULL};
    Snapshot before;
    Pod p;
    CniRun r;

    boot_root("boot1", "11111111-1111-1111-1111-111111111111\n", boot1, sizeof(boot1));
    boot_root("boot2", "22222222-2222-2222-2222-222222222222\n", boot2, sizeof(boot2));
    snprintf(fp, sizeof(fp), "RAILGATE_FAILPOINT=add-after-ipam=kill");
    snapshot(&before);
    pod_new(&p, "team-b", RES_B, ids, 2);
    char *conf = cnienv_conf("1.1.0", NULL);
    /* boot 1: the addresses are taken, then the node "goes down" */
    assert_int_equal(cnienv_run(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns, p.name,
                                conf, add_env, &r),
                     0);
    assert_int_equal(r.status, 128 + SIGKILL);
    cni_run_done(&r);
    assert_int_equal(ipam_allocations(), 2);
    /* boot 2: the record is of an earlier boot */
    assert_int_equal(cnienv_run(&env, "railgate", "DEL", p.container, p.netns, "eth0", p.ns, p.name,
                                conf, del_env, &r),
                     0);
    if (r.status)
        fprintf(stderr, "DEL: %s\n", r.raw);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_int_equal(ipam_allocations(), 0);
    assert_nothing_moved(&before, &p);
    free(before.links);
    cnienv_pod_free(&env, &p);
#endif
}

/* ---- prevResult, CNI_NETNS, error versions ------------------------------ */

static void test_malformed_prev_result(void **state) {
    static const struct {
        const char *prev, *want;
    } cases[] = {
        {"\"x\"", "prevResult: must be an object"},
        {"{\"interfaces\": {}}", "prevResult.interfaces: must be an array"},
        {"{\"interfaces\": [{\"mac\": \"x\"}]}", "prevResult.interfaces[0]: \"name\""},
        {"{\"interfaces\": [7]}", "prevResult.interfaces[0]: must be an object"},
        {"{\"interfaces\": [{\"name\": \"eth0\"}], \"ips\": [{\"address\": \"10.1.1.5/24\", "
         "\"interface\": 1}]}",
         "prevResult.ips[0]: \"interface\" must be an index"},
        {"{\"ips\": [{\"address\": \"10.1.1.5/24\", \"interface\": 0}]}",
         "prevResult.ips[0]: \"interface\""},
        {"{\"ips\": [{\"address\": \"10.1.1.5/24\", \"interface\": -1}]}",
         "prevResult.ips[0]: \"interface\""},
        {"{\"ips\": [{\"address\": \"banana\"}]}", "prevResult.ips[0]: \"address\""},
        {"{\"ips\": [{\"address\": \"10.1.1.5\"}]}", "prevResult.ips[0]: \"address\""},
        {"{\"ips\": [{\"address\": \"10.1.1.5/24\", \"gateway\": \"10.1.1.1/24\"}]}",
         "prevResult.ips[0]: \"gateway\""},
        {"{\"routes\": [{\"gw\": \"10.1.1.1\"}]}", "prevResult.routes[0]: \"dst\""},
        {"{\"routes\": [{\"dst\": \"0.0.0.0/0\", \"table\": \"main\"}]}",
         "prevResult.routes[0]: \"table\""},
        {"{\"dns\": []}", "prevResult.dns: must be an object"},
    };
    char *ids[] = {"rail0"}, member[512];
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        snprintf(member, sizeof(member), "\"prevResult\": %s", cases[i].prev);
        char *conf = cnienv_conf("1.1.0", member);
        expect_refused(&p, p.netns, conf, 7, cases[i].want);
        free(conf);
    }
    cnienv_pod_free(&env, &p);
}

static void test_netns_not_a_pod_netns(void **state) {
    static const struct {
        const char *path, *want;
    } cases[] = {
        {"/proc/self/stat", "is not a network namespace"},
        {"/proc/self/ns/mnt", "is not a network namespace"},
        {"/proc/self/ns/pid", "is not a network namespace"},
        {"/proc/self/ns/uts", "is not a network namespace"},
        {"/dev/null", "is not a network namespace"},
        {"/run", "is not a network namespace"},
        {"/nonexistent/netns", "No such file"},
        /* the plugin's own: the node's namespace */
        {"/proc/self/ns/net", "is the node's own network namespace"},
        {"/proc/thread-self/ns/net", "is the node's own network namespace"},
    };
    char *ids[] = {"rail0"};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    char *conf = cnienv_conf("1.1.0", NULL);
    for (size_t i = 0; i < ELEMENTSOF(cases); i++)
        expect_refused(&p, cases[i].path, conf, 4, cases[i].want);
    free(conf);
    cnienv_pod_free(&env, &p);
}

static void expect_version(const Pod *p, const char *netns, const char *conf, const char *want) {
    CniRun r;

    assert_int_equal(run_in(p, "ADD", netns, conf, &r), 0);
    assert_int_equal(r.status, 1);
    assert_string_equal(json_string_value(json_object_get(r.out, "cniVersion")), want);
    cni_run_done(&r);
}

/* An error answers in the version the request spoke, whatever failed. */
static void test_error_version_is_the_request_s(void **state) {
    char *ids[] = {"rail0"};
    Pod p;

    pod_new(&p, "team-a", RES_A, ids, 1);
    char *conf = cnienv_conf("1.0.0", "\"Device\": \"rail-nic16\"");
    expect_version(&p, p.netns, conf, "1.0.0");
    free(conf);
    conf = cnienv_conf("0.4.0", "\"prevResult\": {\"ips\": [{\"address\": \"x\"}]}");
    expect_version(&p, p.netns, conf, "0.4.0");
    free(conf);
    conf = cnienv_conf("1.0.0", NULL);
    expect_version(&p, "/proc/self/stat", conf, "1.0.0"); /* an environment error */
    free(conf);
    cnienv_pod_free(&env, &p);
}

/* ---- macvlan rails on a shared lower -------------------------------------- */

#define SHARED_LOWER "rgsh-low"

/* The rails these cases may rebuild; those they did, for the teardown. */
static const unsigned SHARED_RAILS[] = {3, 4, 5, 18};
static bool shared_rebuilt[CNIENV_RAILS];

/* rail-nic<k> of the harness's kind deleted, to be rebuilt otherwise. */
static void rail_gone(unsigned k) {
    shared_rebuilt[k] = true;
    (void)testns_rail_del(k);
}

/* rail-nic<k> (of the harness's kind) replaced by a macvlan on lower, up,
 * with the test node's address for it. */
static void rail_macvlan_on(unsigned k, const char *lower) {
    char args[128];

    rail_gone(k);
    snprintf(args, sizeof(args), "link add rail-nic%u link %s type macvlan mode bridge", k, lower);
    assert_int_equal(ip_cmd(NULL, args), 0);
    snprintf(args, sizeof(args), "link set rail-nic%u up", k);
    assert_int_equal(ip_cmd(NULL, args), 0);
    snprintf(args, sizeof(args), "addr add 10.99.%u.1/24 dev rail-nic%u", k, k);
    assert_int_equal(ip_cmd(NULL, args), 0);
}

/* A veth lower for them, as a NIC of the node's would be (up, no address). */
static void shared_lower_add(void) {
    /* the rails' node config MTU is 9000: a macvlan's may not exceed its lower's */
    assert_int_equal(
        ip_cmd(NULL, "link add " SHARED_LOWER " mtu 9000 type veth peer name rgsh-loww mtu 9000"),
        0);
    assert_int_equal(ip_cmd(NULL, "link set " SHARED_LOWER " up"), 0);
    assert_int_equal(ip_cmd(NULL, "link set rgsh-loww up"), 0);
}

/* The test node as cnienv made it, failed case or not: the shared lower
 * (and the macvlans on it) gone, the rebuilt rails back, the agent up. */
static int shared_teardown(void **state) {
    char a[32], b[32], args[96];

    (void)ip_cmd(NULL, "link del " SHARED_LOWER);
    for (size_t i = 0; i < ELEMENTSOF(SHARED_RAILS); i++) {
        unsigned k = SHARED_RAILS[i];
        snprintf(a, sizeof(a), "rail-nic%u", k);
        snprintf(b, sizeof(b), "rail-peer%u", k);
        if (!shared_rebuilt[k])
            continue;
        shared_rebuilt[k] = false;
        (void)testns_link_del(a);
        (void)testns_link_del(b);
        if (testns_rail_add(k) < 0)
            return -1;
        snprintf(args, sizeof(args), "addr add 10.99.%u.1/24 dev %s", k, a);
        if (ip_cmd(NULL, args) != 0)
            return -1;
    }
    if (env.agent == 0 && cnienv_agent_start(&env, NULL) < 0)
        return -1;
    return 0;
}

static bool macvlan_usable(void) {
    if (testns_kind_probe(RAIL_KIND_MACVLAN) > 0)
        return true;
    printf("this kernel has no macvlan driver: nothing to share a lower\n");
    return false;
}

/* ADD of p (its units) fails with code 7 naming every one of want, and
 * moves nothing. */
static void expect_refused_naming(const Pod *p, const char *const *want) {
    char *conf = cnienv_conf("1.1.0", NULL);
    Snapshot before;
    CniRun r;

    snapshot(&before);
    assert_int_equal(run_in(p, "ADD", p->netns, conf, &r), 0);
    free(conf);
    const char *msg = json_string_value(json_object_get(r.out, "msg"));
    printf("%s/%s: %s\n", p->ns, p->name, msg ? msg : r.raw);
    if (r.status == 0) { /* moved: home again before failing */
        CniRun d;
        (void)cnienv_pod_cmd(&env, p, "DEL", NULL, &d);
        cni_run_done(&d);
        fail_msg("ADD of a rail on a shared lower succeeded: %s", r.raw);
    }
    if (r.status != 1 || json_integer_value(json_object_get(r.out, "code")) != 7 || !msg)
        fail_msg("want code 7, got %s", r.raw);
    for (size_t i = 0; want[i]; i++)
        if (!strstr(msg, want[i]))
            fail_msg("\"%s\" not named in: %s", want[i], msg);
    cni_run_done(&r);
    assert_nothing_moved(&before, p);
    free(before.links);
}

static bool exited(void *arg) {
    siginfo_t si = {0};

    return waitid(P_PID, *(pid_t *)arg, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0;
}

/* The node agent started on the node as it is now: refused, it exits 1 on
 * its own, before it serves anything, its log naming every one of want;
 * --publish-inventory the same (the CNI's inventory is not replaced). */
static void expect_agent_refuses(const char *const *want) {
    char *argv[] = {(char *)proc_bin("agent/railgate-device-plugin"), "--config", env.config, NULL,
                    NULL};
    char inv[192];
    struct stat st0, st1;

    assert_int_equal(cnienv_agent_stop(&env), 0);
    snprintf(inv, sizeof(inv), "%s/inventory.json", env.state);
    assert_int_equal(stat(inv, &st0), 0);
    unlink(env.agent_log);
    pid_t pid = proc_spawn(argv, env.agent_log);
    assert_true(pid > 0);
    bool gone = testns_wait_until(exited, &pid, wait_scaled_ms(20000));
    int status = proc_stop(pid, 10000);
    if (!gone)
        fail_msg("the agent kept running on a node it must refuse");
    assert_int_equal(status, 1);
    for (size_t i = 0; want[i]; i++)
        if (!file_contains(env.agent_log, want[i]))
            fail_msg("\"%s\" not in the agent's log %s", want[i], env.agent_log);
    argv[3] = "--publish-inventory";
    assert_int_equal(proc_run(argv, env.agent_log), 1);
    assert_int_equal(stat(inv, &st1), 0);
    assert_int_equal(st0.st_ino, st1.st_ino);
    assert_int_equal(st0.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
}

/*
 * Tenant a's rail 3 and tenant b's rail 18 made macvlans on one lower after
 * the agent started (links change while it runs): the ADD of either is
 * refused (7) naming both rails and both tenants, nothing moved; the agent
 * started on such a node refuses to start, naming both.
 */
static void test_shared_lower_two_tenants(void **state) {
    char *ids_a[] = {"rail3"}, *ids_b[] = {"rail18"};
    Pod pa, pb;

    if (!macvlan_usable())
        skip();
    shared_lower_add();
    rail_macvlan_on(3, SHARED_LOWER);
    rail_macvlan_on(18, SHARED_LOWER);
    pod_new(&pb, "team-b", RES_B, ids_b, 1);
    expect_refused_naming(
        &pb, (const char *const[]){"rail18 (rail-nic18, tenant b)", "macvlan on " SHARED_LOWER,
                                   "rail3 (rail-nic3)", "tenant a", "nothing was moved", NULL});
    cnienv_pod_free(&env, &pb);
    pod_new(&pa, "team-a", RES_A, ids_a, 1);
    expect_refused_naming(&pa, (const char *const[]){"rail3 (rail-nic3, tenant a)",
                                                     "rail18 (rail-nic18)", "tenant b", NULL});
    cnienv_pod_free(&env, &pa);
    expect_agent_refuses((const char *const[]){"refusing the node config",
                                               "rail3 (rail-nic3, tenant a)", "rail18 (rail-nic18)",
                                               "tenant b", SHARED_LOWER, NULL});
}

/*
 * One tenant's two macvlan rails on one lower are allowed: the agent starts
 * on that node, and one pod of the tenant gets both rails, DEL brings both
 * home. On a kernel that cannot anchor a macvlan (no 8021q driver) the ADD
 * still gets past the lower's check and stops at the anchor (101, not 7).
 */
static void test_shared_lower_one_tenant(void **state) {
    char *ids[] = {"rail3", "rail4"};
    bool anchors = testns_kind_anchorable(RAIL_KIND_MACVLAN) > 0;
    CniRun r;
    Pod p;

    if (!macvlan_usable())
        skip();
    shared_lower_add();
    rail_macvlan_on(3, SHARED_LOWER);
    rail_macvlan_on(4, SHARED_LOWER);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
    pod_new(&p, "team-a", RES_A, ids, 2);
    assert_int_equal(cnienv_pod_cmd(&env, &p, "ADD", NULL, &r), 0);
    printf("ADD of rail3 and rail4 on one lower: %s\n", r.status ? cni_run_msg(&r) : "moved");
    if (!anchors) {
        assert_int_equal(cni_run_code(&r), 101);
        assert_non_null(strstr(cni_run_msg(&r), "no parent device and is not a veth"));
        cni_run_done(&r);
        assert_true(link_on_host("rail-nic3"));
        assert_true(link_on_host("rail-nic4"));
        assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
        cnienv_pod_free(&env, &p);
        return;
    }
    if (r.status != 0)
        fail_msg("ADD: %s", r.raw);
    cni_run_done(&r);
    assert_true(ip_has(p.nsname, "link show", "rail3"));
    assert_true(ip_has(p.nsname, "link show", "rail4"));
    assert_false(link_on_host("rail-nic3"));
    assert_int_equal(cnienv_pod_cmd(&env, &p, "DEL", NULL, &r), 0);
    if (r.status != 0)
        fail_msg("DEL: %s", r.raw);
    cni_run_done(&r);
    assert_true(link_on_host("rail-nic3"));
    assert_true(link_on_host("rail-nic4"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    cnienv_pod_free(&env, &p);
}

/*
 * A macvlan rail whose lower the node uses: the lower's own address, an
 * address on another macvlan (not a rail) on the lower, the lower being another rail
 * (tenant a's own rail 5, a veth here). Each: the ADD refused (7) naming the
 * rail and the node's link, nothing moved; the agent refuses to start.
 */
static void test_shared_lower_node_address(void **state) {
    char *ids[] = {"rail3"}, *ids5[] = {"rail5"};
    Pod p;

    if (!macvlan_usable())
        skip();
    shared_lower_add();
    rail_macvlan_on(3, SHARED_LOWER);
    pod_new(&p, "team-a", RES_A, ids, 1);

    assert_int_equal(ip_cmd(NULL, "addr add 10.98.0.1/24 dev " SHARED_LOWER), 0);
    expect_refused_naming(&p, (const char *const[]){"rail3 (rail-nic3, tenant a)",
                                                    SHARED_LOWER ", which is the node's own NIC",
                                                    "a node address", NULL});
    assert_int_equal(ip_cmd(NULL, "addr del 10.98.0.1/24 dev " SHARED_LOWER), 0);

    assert_int_equal(
        ip_cmd(NULL, "link add rgsh-node link " SHARED_LOWER " type macvlan mode bridge"), 0);
    assert_int_equal(ip_cmd(NULL, "addr add 10.98.7.1/24 dev rgsh-node"), 0);
    expect_refused_naming(
        &p, (const char *const[]){"rail3 (rail-nic3, tenant a)", "the node's rgsh-node", NULL});
    expect_agent_refuses(
        (const char *const[]){"refusing the node config", "rail3", "the node's rgsh-node", NULL});
    assert_int_equal(ip_cmd(NULL, "link del rgsh-node"), 0);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);

    /* rail 3 on rail 5's NIC: the ADD of either */
    rail_gone(5);
    assert_int_equal(ip_cmd(NULL, "link add rail-nic5 type veth peer name rail-peer5"), 0);
    assert_int_equal(ip_cmd(NULL, "link set rail-nic5 up"), 0);
    assert_int_equal(ip_cmd(NULL, "link set rail-peer5 up"), 0);
    assert_int_equal(ip_cmd(NULL, "link del rail-nic3"), 0);
    rail_macvlan_on(3, "rail-nic5");
    expect_refused_naming(&p, (const char *const[]){"rail3 (rail-nic3, tenant a)",
                                                    "rail-nic5, which is rail5's NIC", NULL});
    cnienv_pod_free(&env, &p);
    pod_new(&p, "team-a", RES_A, ids5, 1);
    expect_refused_naming(
        &p, (const char *const[]){"rail3 (rail-nic3, tenant a)", "rail5's NIC", NULL});
    cnienv_pod_free(&env, &p);
}

/*
 * The agent restarted while a pod holds tenant a's macvlan rail 3 (moved by
 * hand here: no anchor needed), and tenant b's rail 18 made on the same
 * lower meanwhile: the agent knows rail 3's lower from the inventory it
 * published before and refuses to start; the ADD of rail 18 is refused
 * (7) naming rail 3, away in the pod, and tenant a, nothing moved.
 */
static void test_shared_lower_rail_in_pod(void **state) {
    char *ids[] = {"rail18"}, args[160];
    Pod holder, pb;

    if (!macvlan_usable())
        skip();
    shared_lower_add();
    rail_macvlan_on(3, SHARED_LOWER);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0); /* it notes rail 3's lower */
    pod_new(&holder, "team-a", RES_A, NULL, 0);
    snprintf(args, sizeof(args), "link set rail-nic3 netns %s", holder.nsname);
    assert_int_equal(ip_cmd(NULL, args), 0);
    rail_macvlan_on(18, SHARED_LOWER);
    pod_new(&pb, "team-b", RES_B, ids, 1);
    expect_refused_naming(
        &pb, (const char *const[]){"rail18 (rail-nic18, tenant b)", "macvlan on " SHARED_LOWER,
                                   "rail3 (rail-nic3, not in the node's namespace now) of tenant a",
                                   NULL});
    cnienv_pod_free(&env, &pb);
    expect_agent_refuses((const char *const[]){"refusing the node config", "rail3 (rail-nic3",
                                               "rail18 (rail-nic18", SHARED_LOWER, NULL});
    cnienv_pod_free(&env, &holder);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_keys_any_case_any_depth),
        cmocka_unit_test(test_refused_keys_unicode_folds),
        cmocka_unit_test(test_stdin_ipam_refused),
        cmocka_unit_test(test_del_unknown_runs_no_ipam),
        cmocka_unit_test(test_node_ipam_railgate_itself),
        cmocka_unit_test(test_node_ipam_failed_add_released),
        cmocka_unit_test(test_node_ipam_short_result_released),
        cmocka_unit_test(test_node_ipam_gets_only_its_config),
        cmocka_unit_test(test_gc_forwarded_to_ipam),
        cmocka_unit_test(test_kernel_words_reach_the_error),
        cmocka_unit_test(test_kill_around_ipam),
        cmocka_unit_test(test_earlier_boot_releases_ipam),
        cmocka_unit_test(test_malformed_prev_result),
        cmocka_unit_test(test_netns_not_a_pod_netns),
        cmocka_unit_test(test_error_version_is_the_request_s),
        cmocka_unit_test_teardown(test_shared_lower_two_tenants, shared_teardown),
        cmocka_unit_test_teardown(test_shared_lower_one_tenant, shared_teardown),
        cmocka_unit_test_teardown(test_shared_lower_node_address, shared_teardown),
        cmocka_unit_test_teardown(test_shared_lower_rail_in_pod, shared_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
