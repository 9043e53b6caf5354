/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI in DRA mode with the real node agent: claims prepared through its DRA socket (a fake
 * API server), the pod's units by uid, unprepare against ADD held open. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdi.h"
#include "claims.h"
#include "cnienv.h"
#include "dra.h"
#include "drafix.h"
#include "fakeapi.h"
#include "pluginregistration.pb-c.h"
#include "proc.h"
#include "testns.h"
#include "waitscale.h"

static CniEnvT env;
static FakeApi *api;
static char tmp[64], kubeconfig[128], dra_sock[512];

typedef CniPod Pod;

/* The DRA socket kubelet learns from the one registration socket's GetInfo. */
static bool dra_endpoint(void *arg) {
    Pluginregistration__PluginInfo *info = drafix_registration_info(env.kubelet);

    (void)arg;
    if (!info)
        return false;
    snprintf(dra_sock, sizeof(dra_sock), "%s", info->endpoint);
    pluginregistration__plugin_info__free_unpacked(info, NULL);
    return true;
}

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(tmpdir_make(tmp, sizeof(tmp), "rg-cnidra"), 0);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig.json", tmp);
    assert_int_equal(fakeapi_start(&api), 0);
    assert_int_equal(fakeapi_write_kubeconfig(api, kubeconfig, NULL), 0);
    assert_int_equal(cnienv_setup_dra(&env, CNIENV_RAILS, kubeconfig), 0);
    assert_true(testns_wait_until(dra_endpoint, NULL, wait_scaled_ms(20000)));
    return 0;
}

static int group_teardown(void **state) {
    int agent = cnienv_agent_stop(&env); /* 0: SIGTERM ended it cleanly (ASan: no leak) */

    cnienv_teardown(&env);
    fakeapi_stop(api);
    tmpdir_remove(tmp);
    if (agent != 0)
        fprintf(stderr, "the agent exited with %d\n", agent);
    return agent == 0 ? 0 : -1;
}

/* A claim ns/name of units[0..n) reserved for pod uid, prepared by the
 * agent as kubelet asks it to; its uid into uid. */
static void claim_prepared(const char *ns, const char *name, const char *pod_uid,
                           const char *const *units, size_t n, char *uid) {
    DrafixResult res[4] = {0};
    const char *pods[] = {pod_uid};

    for (size_t i = 0; i < n; i++)
        res[i].device = units[i];
    assert_int_equal(drafix_put_claim(api, CNIENV_NODE, ns, name, res, n, pods, 1, NULL, uid), 0);
    DrafixRef ref = {ns, name, uid};
    Dra__NodePrepareResourcesResponse *r = drafix_prepare(dra_sock, DRA_SERVICE_V1, &ref, 1);
    assert_non_null(r);
    Dra__NodePrepareResourceResponse *e = drafix_prepared(r, uid);
    assert_non_null(e);
    if (e->error && *e->error)
        fail_msg("claim %s/%s not prepared: %s", ns, name, e->error);
    assert_int_equal(e->n_devices, n);
    dra__node_prepare_resources_response__free_unpacked(r, NULL);
}

static void unprepare_ok(const char *ns, const char *name, const char *uid) {
    DrafixRef ref = {ns, name, uid};
    char *e = drafix_unprepare(dra_sock, &ref);

    assert_non_null(e);
    assert_string_equal(e, "");
    free(e);
}

static void pod_uid(const Pod *p, char *buf, size_t n) {
    snprintf(buf, n, "uid-%.32s", p->name); /* what cnienv_run puts in K8S_POD_UID */
}

static void cni_ok(Pod *p, const char *cmd) {
    CniRun r;

    assert_int_equal(cnienv_pod_cmd(&env, p, cmd, NULL, &r), 0);
    if (r.status != 0)
        fail_msg("%s of %s/%s: %s", cmd, p->ns, p->name, r.raw);
    cni_run_done(&r);
}

static void cni_refused(Pod *p, char *const *extra, int code, const char *what) {
    CniRun r;

    assert_int_equal(cnienv_pod_cmd(&env, p, "ADD", extra, &r), 0);
    if (r.status != 1 || cni_run_code(&r) != code || !strstr(cni_run_msg(&r), what))
        fail_msg("ADD of %s/%s answered %s, expected code %d saying \"%s\"", p->ns, p->name, r.raw,
                 code, what);
    cni_run_done(&r);
}

static bool pod_has(const Pod *p, const char *dev) {
    char args[64];

    snprintf(args, sizeof(args), "link show dev %s", dev);
    return ip_cmd(p->nsname, args) == 0;
}

/* The host NIC's MAC, as ip says. */
static void host_mac(const char *dev, char *buf, size_t n) {
    char args[64];

    snprintf(args, sizeof(args), "link show dev %s", dev);
    json_t *l = ip_json(NULL, args);
    const char *mac = json_string_value(json_object_get(json_array_get(l, 0), "address"));
    assert_non_null(mac);
    snprintf(buf, n, "%s", mac);
    json_decref(l);
}

typedef struct Want {
    const char *name, *rails[2], *ips[2], *macs[2];
    size_t n;
} Want;

/* The claim's status.devices is exactly want's rails, railgate.io's. */
static bool network_data_is(FakeApi *f, void *arg) {
    const Want *w = arg;
    char path[256];

    snprintf(path, sizeof(path), "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/%s",
             w->name);
    json_t *c = fakeapi_get(f, path),
           *devs = json_object_get(json_object_get(c, "status"), "devices");
    bool ok = json_array_size(devs) == w->n;
    for (size_t i = 0; ok && i < w->n; i++) {
        json_t *e = json_array_get(devs, i), *nd = json_object_get(e, "networkData");
        ok = strcmp(json_string_value(json_object_get(e, "driver")), "railgate.io") == 0 &&
             strcmp(json_string_value(json_object_get(e, "pool")), CNIENV_NODE) == 0 &&
             strcmp(json_string_value(json_object_get(e, "device")), w->rails[i]) == 0 &&
             strcmp(json_string_value(json_object_get(nd, "interfaceName")), w->rails[i]) == 0 &&
             json_array_size(json_object_get(nd, "ips")) == 1 &&
             strcmp(json_string_value(json_array_get(json_object_get(nd, "ips"), 0)), w->ips[i]) ==
                 0 &&
             strcmp(json_string_value(json_object_get(nd, "hardwareAddress")), w->macs[i]) == 0;
    }
    json_decref(c);
    return ok;
}

static bool spec_exists(const char *uid) {
    char path[512];

    assert_int_equal(cdi_spec_path(env.cdi, "railgate.io", uid, path, sizeof(path)), 0);
    return access(path, F_OK) == 0;
}

/* A pod whose claim kubelet prepared gets exactly that claim's rails, by
 * its uid; DEL brings them home; unprepare then leaves nothing. */
static void test_prepared_claim(void **state) {
    const char *units[] = {"rail0", "rail1"};
    char uid[CLAIM_UID_MAX], puid[80];
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "dra", "team-a", NULL, NULL, 0), 0);
    char mac0[32], mac1[32];
    host_mac("rail-nic0", mac0, sizeof(mac0));
    host_mac("rail-nic1", mac1, sizeof(mac1));
    Want want = {
        "p-rails", {"rail0", "rail1"}, {"10.100.0.2/24", "10.101.0.2/24"}, {mac0, mac1}, 2};
    Want none = {.name = "p-rails"};
    pod_uid(&p, puid, sizeof(puid));
    claim_prepared("team-a", "p-rails", puid, units, 2, uid);
    assert_true(spec_exists(uid));
    cni_ok(&p, "ADD");
    /* the agent writes networkData after the CNI's report */
    assert_true(fakeapi_wait(api, network_data_is, &want, wait_scaled_ms(20000)));
    assert_true(pod_has(&p, "rail0"));
    assert_true(pod_has(&p, "rail1"));
    assert_false(pod_has(&p, "rail2"));
    assert_false(link_on_host("rail-nic0"));
    assert_false(link_on_host("rail-nic1"));
    assert_true(link_on_host("rail-nic2"));
    /* each with its address and the tenant's VRF routing (table 100 + rail) */
    assert_true(ip_has(p.nsname, "addr show dev rail1", "inet 10.101.0.2/24"));
    assert_true(ip_has(p.nsname, "rule show", "from 10.100.0.2 lookup 100"));
    assert_true(ip_has(p.nsname, "rule show", "from 10.101.0.2 lookup 101"));
    assert_true(ip_has(p.nsname, "route show table 100", "default via 10.100.0.1 dev rail0"));
    cni_ok(&p, "CHECK");
    /* DEL while the agent is away (its report is lost): the agent that
     * starts next reconciles the claim from the records */
    assert_int_equal(cnienv_agent_stop(&env), 0);
    cni_ok(&p, "DEL");
    assert_true(link_on_host("rail-nic0"));
    assert_true(link_on_host("rail-nic1"));
    assert_true(network_data_is(api, &want));
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    assert_true(testns_wait_until(dra_endpoint, NULL, wait_scaled_ms(20000)));
    assert_true(fakeapi_wait(api, network_data_is, &none, wait_scaled_ms(20000)));
    unprepare_ok("team-a", "p-rails", uid);
    assert_false(spec_exists(uid));
    assert_int_equal(cnienv_state_count(&env, "claims"), 0);
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    cnienv_pod_free(&env, &p);
}

/* A pod uid that holds nothing passes through, also while another pod of
 * its namespace holds prepared units. */
static void test_pod_without_claims(void **state) {
    const char *units[] = {"rail2"};
    char uid[CLAIM_UID_MAX], puid[80];
    Pod holder, none;

    assert_int_equal(cnienv_pod_new(&env, &holder, "dra", "team-a", NULL, NULL, 0), 0);
    assert_int_equal(cnienv_pod_new(&env, &none, "dra", "team-a", NULL, NULL, 0), 0);
    pod_uid(&holder, puid, sizeof(puid));
    claim_prepared("team-a", "holder-rails", puid, units, 1, uid);
    cni_ok(&none, "ADD");
    assert_true(cnienv_nothing_moved(&env, &none, 2));
    cni_ok(&none, "DEL");
    unprepare_ok("team-a", "holder-rails", uid);
    cnienv_pod_free(&env, &holder);
    cnienv_pod_free(&env, &none);
}

/* Another tenant's namespace: a pod of team-b presenting the uid of a
 * team-a pod's prepared claim is refused by the agent; a claim record that
 * says team-b holds tenant a's unit (no prepare writes one) is refused by
 * the CNI's own check against the node config. Nothing moves. */
static void test_other_tenant_namespace(void **state) {
    const char *units[] = {"rail3"};
    char uid[CLAIM_UID_MAX], puid[80];
    Pod a, b, forged;

    assert_int_equal(cnienv_pod_new(&env, &a, "same", "team-a", NULL, NULL, 0), 0);
    pod_uid(&a, puid, sizeof(puid));
    claim_prepared("team-a", "a-rails", puid, units, 1, uid);
    b = a; /* the same name, so the same K8S_POD_UID, in team-b */
    snprintf(b.ns, sizeof(b.ns), "team-b");
    cni_refused(&b, NULL, 100, "another namespace");
    assert_true(cnienv_nothing_moved(&env, &b, 3));
    unprepare_ok("team-a", "a-rails", uid);

    assert_int_equal(cnienv_pod_new(&env, &forged, "forged", "team-b", NULL, NULL, 0), 0);
    PreparedClaim c = {.n_devices = 1};
    snprintf(c.uid, sizeof(c.uid), "forged-1");
    snprintf(c.ns, sizeof(c.ns), "team-b");
    snprintf(c.name, sizeof(c.name), "x");
    snprintf(c.tenant, sizeof(c.tenant), "a");
    snprintf(c.pool, sizeof(c.pool), CNIENV_NODE);
    pod_uid(&forged, c.pod_uid, sizeof(c.pod_uid));
    snprintf(c.devices[0].request, sizeof(c.devices[0].request), "gpus");
    snprintf(c.devices[0].unit, sizeof(c.devices[0].unit), "rail3");
    assert_int_equal(claims_save(env.state, &c), 0);
    cni_refused(&forged, NULL, 100, "namespace team-b is not one of that tenant's");
    assert_true(cnienv_nothing_moved(&env, &forged, 3));
    assert_int_equal(claims_remove(env.state, c.uid), 0);
    cnienv_pod_free(&env, &forged);
    cnienv_pod_free(&env, &a);
}

/* No K8S_POD_UID: DRA mode cannot say what the pod holds, so nothing moves
 * (fail closed), with the reason and the spec's code for a bad environment
 * (4: no retry would bring the uid). */
static void test_no_pod_uid(void **state) {
    char args[256], *extra[] = {args, NULL};
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "nouid", "team-a", NULL, NULL, 0), 0);
    snprintf(args, sizeof(args), "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s",
             p.ns, p.name);
    CniRun r;
    assert_int_equal(cnienv_pod_cmd(&env, &p, "ADD", extra, &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(json_integer_value(json_object_get(r.out, "code")), 4);
    assert_non_null(strstr(cni_run_msg(&r), "K8S_POD_UID"));
    cni_run_done(&r);
    assert_true(cnienv_nothing_moved(&env, &p, 4));
    cnienv_pod_free(&env, &p);
}

/* Unprepare against an ADD of the same units, both orders held open. The
 * ADD held after the agent's answer, the claim unprepared: the ADD finds it
 * gone under the state lock and moves nothing. The ADD held with the units
 * claimed: unprepare is refused (kubelet retries) until DEL. */
static void test_unprepare_races_add(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    const char *units[] = {"rail5", "rail6"};
    char *answered[] = {"RAILGATE_FAILPOINT=add-agent-answered=pause", NULL};
    char *claimed[] = {"RAILGATE_FAILPOINT=add-after-claim=pause", NULL};
    char uid[CLAIM_UID_MAX], puid[80], *conf = cnienv_conf("1.1.0", NULL);
    CniProc proc;
    CniRun r;
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "race", "team-a", NULL, NULL, 0), 0);
    pod_uid(&p, puid, sizeof(puid));
    claim_prepared("team-a", "race-rails", puid, units, 2, uid);
    assert_int_equal(cnienv_start(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns,
                                  p.name, conf, answered, &proc),
                     0);
    assert_int_equal(cni_proc_wait_stopped(&proc), 0);
    unprepare_ok("team-a", "race-rails", uid);
    assert_int_equal(cni_proc_continue(&proc), 0);
    assert_int_equal(cni_proc_finish(&proc, &r), 0);
    if (r.status != 1 || !strstr(cni_run_msg(&r), "no longer prepared"))
        fail_msg("ADD after unprepare answered %s", r.raw);
    cni_run_done(&r);
    assert_true(cnienv_nothing_moved(&env, &p, 5));
    assert_true(link_on_host("rail-nic6"));

    /* prepared again; the ADD holds the units when kubelet unprepares */
    claim_prepared("team-a", "race-rails-2", puid, units, 2, uid);
    assert_int_equal(cnienv_start(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns,
                                  p.name, conf, claimed, &proc),
                     0);
    assert_int_equal(cni_proc_wait_stopped(&proc), 0);
    DrafixRef ref = {"team-a", "race-rails-2", uid};
    char *e = drafix_unprepare(dra_sock, &ref);
    assert_non_null(e);
    assert_non_null(strstr(e, "still in a pod"));
    free(e);
    assert_true(spec_exists(uid));
    assert_int_equal(cnienv_state_count(&env, "claims"), 1);
    assert_int_equal(cni_proc_continue(&proc), 0);
    assert_int_equal(cni_proc_finish(&proc, &r), 0);
    if (r.status != 0)
        fail_msg("ADD: %s", r.raw);
    cni_run_done(&r);
    assert_true(pod_has(&p, "rail5"));
    cni_ok(&p, "DEL");
    unprepare_ok("team-a", "race-rails-2", uid);
    assert_int_equal(cnienv_state_count(&env, "claims"), 0);
    free(conf);
    cnienv_pod_free(&env, &p);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepared_claim),         cmocka_unit_test(test_pod_without_claims),
        cmocka_unit_test(test_other_tenant_namespace), cmocka_unit_test(test_no_pod_uid),
        cmocka_unit_test(test_unprepare_races_add),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
