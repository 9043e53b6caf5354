/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's metric families, their closed label sets, and the functions that record them. */
#include "agentmetrics.h"

#include <stdio.h>
#include <strings.h>
#include <time.h>

#include "metrics.h"

#ifndef RAILGATE_VERSION
#define RAILGATE_VERSION "unknown"
#endif

#define LOOKUP_MAX_STATUSES 32
#define LOOKUP_STATUS_MAX_LEN 32

/* Upper bounds in seconds: Allocate answers in well under a millisecond,
 * kubelet's PodResources from half a millisecond to seconds under load, a
 * CNI command in tens of milliseconds per rail to seconds with IPAM (finer
 * from 50 to 500 ms, where eight rails' moves fall). */
static const double FAST_BUCKETS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   1};
static const double LOOKUP_BUCKETS[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,   0.5,   1,      2.5,   5,    10,    30};
static const double CNI_BUCKETS[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3,
                                     0.4,   0.5,  1,     2.5,  5,     10,  30,   60,  120};

static const char *const GRPC_CODES[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};
#define N_GRPC_CODES ELEMENTSOF(GRPC_CODES)

static const char *const CNI_COMMANDS[] = {"ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"};
#define N_CNI_COMMANDS (ELEMENTSOF(CNI_COMMANDS) + 1) /* and "other" */

/* The spec's codes (1-7, 11; 50 and 51 from STATUS) and railgate's (100-104). */
static const int CNI_CODES[] = {0, 1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 100, 101, 102, 103, 104};
#define N_CNI_CODES (ELEMENTSOF(CNI_CODES) + 1)

static const char *const REASONS[] = {
    [REGISTER_REASON_REBIND] = "rebind",
    [REGISTER_REASON_SIGHUP] = "sighup",
    [REGISTER_REASON_KUBELET_RESTART] = "kubelet_restart",
    [REGISTER_REASON_START] = "start",
};

static const char *const L_NONE[] = {NULL};
static const char *const L_VERSION[] = {"version", NULL};
static const char *const L_RESOURCE[] = {"resource", NULL};
static const char *const L_RESOURCE_REASON[] = {"resource", "reason", NULL};
static const char *const L_RESOURCE_CODE[] = {"resource", "code", NULL};
static const char *const L_TENANT_HEALTH[] = {"tenant", "health", NULL};
static const char *const L_TENANT_TO[] = {"tenant", "to", NULL};
static const char *const L_CODE[] = {"code", NULL};
static const char *const L_COMMAND[] = {"command", NULL};
static const char *const L_COMMAND_CODE[] = {"command", "code", NULL};
static const char *const L_COMMAND_TENANT[] = {"command", "tenant", NULL};
static const char *const L_OPERATION[] = {"operation", NULL};
static const char *const L_OPERATION_RESULT[] = {"operation", "result", NULL};
static const char *const L_MODE[] = {"mode", NULL};
static const char *const RDMA_MODES[] = {"exclusive", "shared", "unavailable"};

static struct {
    MetricRegistry *registry;
    const NodeConfig *config;
    Metric *build_info, *registrations, *registration_failures, *units, *transitions;
    Metric *allocate_requests, *allocate_duration, *preferred_requests, *preferred_duration;
    Metric *lookup_requests, *lookup_duration, *cni_commands, *cni_duration, *cni_rails;
    Metric *dra_claims, *dra_duration, *rdma_netns_mode;
} M;

typedef struct Family {
    Metric **slot;
    MetricType type;
    const char *name, *help;
    const char *const *labels;
    const double *buckets;
    size_t n_buckets;
    size_t max_series;
} Family;

#define HIST(b) b, ELEMENTSOF(b)

static int register_all(size_t n_tenants) {
    size_t t = n_tenants + 1; /* and "other" */
    const Family families[] = {
        {&M.build_info, METRIC_GAUGE, "railgate_build_info",
         "The version of railgate-device-plugin, as a label; the value is always 1.", L_VERSION,
         NULL, 0, 1},
        {&M.registrations, METRIC_COUNTER, "railgate_registrations_total",
         "Registrations of the resource that kubelet accepted, by why it registered (again).",
         L_RESOURCE_REASON, NULL, 0, t * ELEMENTSOF(REASONS)},
        {&M.registration_failures, METRIC_COUNTER, "railgate_registration_failures_total",
         "Registrations of the resource that failed; each is retried with backoff.", L_RESOURCE,
         NULL, 0, t},
        {&M.units, METRIC_GAUGE, "railgate_units",
         "The tenant's units by health, a unit in a pod by its NIC there.", L_TENANT_HEALTH, NULL,
         0, t * 2},
        {&M.transitions, METRIC_COUNTER, "railgate_unit_health_transitions_total",
         "Units of the tenant that turned healthy or unhealthy.", L_TENANT_TO, NULL, 0, t * 2},
        {&M.allocate_requests, METRIC_COUNTER, "railgate_allocate_requests_total",
         "Allocate calls from kubelet, by the gRPC code answered.", L_RESOURCE_CODE, NULL, 0,
         t * (N_GRPC_CODES + 1)},
        {&M.allocate_duration, METRIC_HISTOGRAM, "railgate_allocate_duration_seconds",
         "Time to answer an Allocate call.", L_RESOURCE, HIST(FAST_BUCKETS), t},
        {&M.preferred_requests, METRIC_COUNTER, "railgate_preferred_allocation_requests_total",
         "GetPreferredAllocation calls from kubelet, by the gRPC code answered.", L_RESOURCE_CODE,
         NULL, 0, t * N_GRPC_CODES},
        {&M.preferred_duration, METRIC_HISTOGRAM, "railgate_preferred_allocation_duration_seconds",
         "Time to answer a GetPreferredAllocation call.", L_RESOURCE, HIST(FAST_BUCKETS), t},
        {&M.lookup_requests, METRIC_COUNTER, "railgate_pod_lookup_requests_total",
         "Questions of the CNI which units a pod holds, by the status answered.", L_CODE, NULL, 0,
         LOOKUP_MAX_STATUSES + 1},
        {&M.lookup_duration, METRIC_HISTOGRAM, "railgate_pod_lookup_duration_seconds",
         "Time to answer the CNI which units a pod holds.", L_NONE, HIST(LOOKUP_BUCKETS), 1},
        {&M.cni_commands, METRIC_COUNTER, "railgate_cni_commands_total",
         "CNI commands as the CNI reported them, by the code it answered (0: success).",
         L_COMMAND_CODE, NULL, 0, N_CNI_COMMANDS * N_CNI_CODES},
        {&M.cni_duration, METRIC_HISTOGRAM, "railgate_cni_command_duration_seconds",
         "Time from the CNI's start to its answer, as the CNI reported it.", L_COMMAND,
         HIST(CNI_BUCKETS), N_CNI_COMMANDS},
        {&M.cni_rails, METRIC_COUNTER, "railgate_cni_rails_total",
         "Rail NICs that successful CNI commands moved, checked or brought home.", L_COMMAND_TENANT,
         NULL, 0, N_CNI_COMMANDS * (t + 1)},
        {&M.dra_claims, METRIC_COUNTER, "railgate_dra_claims_total",
         "DRA mode: claims kubelet asked to prepare or unprepare, by the result answered for "
         "each (error: kubelet retries).",
         L_OPERATION_RESULT, NULL, 0, 4},
        {&M.dra_duration, METRIC_HISTOGRAM, "railgate_dra_request_duration_seconds",
         "DRA mode: time to answer a NodePrepareResources or NodeUnprepareResources call "
         "(every claim in it).",
         L_OPERATION, HIST(LOOKUP_BUCKETS), 2},
        {&M.rdma_netns_mode, METRIC_GAUGE, "railgate_rdma_netns_mode",
         "The node's RDMA network-namespace mode read at start (rdma system netns): exclusive, "
         "shared, or unavailable where the kernel has no RDMA netlink; the value is always 1.",
         L_MODE, NULL, 0, 1},
    };

    for (size_t i = 0; i < ELEMENTSOF(families); i++) {
        const Family *f = &families[i];
        MetricDesc d = {.type = f->type,
                        .name = f->name,
                        .help = f->help,
                        .labels = f->labels[0] ? f->labels : NULL,
                        .buckets = f->buckets,
                        .n_buckets = f->n_buckets,
                        .max_series = f->max_series};
        int r = metric_register(M.registry, &d, f->slot);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The series known from the start show at zero, so that a rate starts with them. */
static int touch_known(const NodeConfig *c) {
    int r = metric_set(M.build_info, (const char *[]){RAILGATE_VERSION}, 1);

    for (size_t i = 0; r >= 0 && i < c->n_tenants; i++) {
        const char *tenant = c->tenants[i].name, *resource = c->tenants[i].resource;
        for (size_t k = 1; r >= 0 && k < ELEMENTSOF(REASONS); k++)
            r = metric_touch(M.registrations, (const char *[]){resource, REASONS[k]});
        r = r < 0 ? r : metric_touch(M.registration_failures, (const char *[]){resource});
        r = r < 0 ? r : metric_touch(M.units, (const char *[]){tenant, "healthy"});
        r = r < 0 ? r : metric_touch(M.units, (const char *[]){tenant, "unhealthy"});
        r = r < 0 ? r : metric_touch(M.transitions, (const char *[]){tenant, "healthy"});
        r = r < 0 ? r : metric_touch(M.transitions, (const char *[]){tenant, "unhealthy"});
        r = r < 0 ? r : metric_touch(M.allocate_requests, (const char *[]){resource, "OK"});
    }
    for (size_t k = 0; r >= 0 && c->mode == AGENT_MODE_DRA && k < 4; k++)
        r = metric_touch(M.dra_claims,
                         (const char *[]){k < 2 ? "prepare" : "unprepare", k % 2 ? "error" : "ok"});
    return r;
}

int metrics_init(const NodeConfig *c) {
    int r;

    metrics_free();
    r = metric_registry_new(&M.registry);
    if (r < 0)
        return r;
    r = register_all(c->n_tenants);
    if (r >= 0)
        r = touch_known(c);
    if (r < 0) {
        metrics_free();
        return r;
    }
    M.config = c;
    return 0;
}

void metrics_free(void) {
    metric_registry_free(M.registry);
    memset(&M, 0, sizeof(M));
}

int metrics_render(char **ret, size_t *ret_len) {
    if (!M.registry)
        return -ENODATA;
    return metric_registry_render(M.registry, ret, ret_len);
}

uint64_t metrics_clock(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double metrics_seconds_since(uint64_t start) {
    uint64_t now = metrics_clock();

    return now > start ? (double)(now - start) / 1e9 : 0;
}

void metrics_rdma_netns_mode(const char *mode) {
    const char *label = "unavailable";

    if (!M.registry)
        return;
    for (size_t i = 0; mode && i < ELEMENTSOF(RDMA_MODES); i++)
        if (streq(mode, RDMA_MODES[i]))
            label = RDMA_MODES[i];
    (void)metric_set(M.rdma_netns_mode, (const char *[]){label}, 1);
}

/* ---- closed label sets --------------------------------------------------- */

static const char *resource_label(const char *resource) {
    for (size_t i = 0; resource && i < M.config->n_tenants; i++)
        if (streq(M.config->tenants[i].resource, resource))
            return M.config->tenants[i].resource;
    return "other";
}

static const char *tenant_label(const char *tenant) {
    if (!tenant || !*tenant)
        return "none";
    for (size_t i = 0; i < M.config->n_tenants; i++)
        if (streq(M.config->tenants[i].name, tenant))
            return M.config->tenants[i].name;
    return "other";
}

static const char *grpc_code_label(int code) {
    return code >= 0 && (size_t)code < N_GRPC_CODES ? GRPC_CODES[code] : "other";
}

static const char *cni_command_label(const char *command) {
    for (size_t i = 0; command && i < ELEMENTSOF(CNI_COMMANDS); i++)
        if (strcasecmp(CNI_COMMANDS[i], command) == 0)
            return CNI_COMMANDS[i];
    return "other";
}

static const char *cni_code_label(int code, char *buf, size_t n) {
    for (size_t i = 0; i < ELEMENTSOF(CNI_CODES); i++)
        if (CNI_CODES[i] == code) {
            snprintf(buf, n, "%d", code);
            return buf;
        }
    return "other";
}

static bool status_valid(const char *s) {
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > LOOKUP_STATUS_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
            return false;
    return true;
}

/* ---- recording ----------------------------------------------------------- */

/* Recording never fails its caller: a series refused (past its bound) is a
 * bug in the label sets above, and the unit tests look for it. */
#define RECORD(call)                                                                               \
    do {                                                                                           \
        if (M.registry)                                                                            \
            (void)(call);                                                                          \
    } while (0)

void metrics_registered(const char *resource, RegisterReason why) {
    if (why <= REGISTER_REASON_NONE || why > REGISTER_REASON_START)
        why = REGISTER_REASON_REBIND;
    RECORD(
        metric_add(M.registrations, (const char *[]){resource_label(resource), REASONS[why]}, 1));
}

void metrics_registration_failed(const char *resource) {
    RECORD(metric_add(M.registration_failures, (const char *[]){resource_label(resource)}, 1));
}

void metrics_units(const char *tenant, unsigned healthy, unsigned unhealthy) {
    RECORD(metric_set(M.units, (const char *[]){tenant_label(tenant), "healthy"}, healthy));
    RECORD(metric_set(M.units, (const char *[]){tenant_label(tenant), "unhealthy"}, unhealthy));
}

void metrics_health_transition(const char *tenant, bool healthy) {
    RECORD(metric_add(M.transitions,
                      (const char *[]){tenant_label(tenant), healthy ? "healthy" : "unhealthy"},
                      1));
}

void metrics_allocate_observe(const char *resource, int grpc_code, double seconds) {
    RECORD(metric_add(M.allocate_requests,
                      (const char *[]){resource_label(resource), grpc_code_label(grpc_code)}, 1));
    RECORD(
        metric_observe(M.allocate_duration, (const char *[]){resource_label(resource)}, seconds));
}

void metrics_preferred_observe(const char *resource, int grpc_code, double seconds) {
    RECORD(metric_add(M.preferred_requests,
                      (const char *[]){resource_label(resource), grpc_code_label(grpc_code)}, 1));
    RECORD(
        metric_observe(M.preferred_duration, (const char *[]){resource_label(resource)}, seconds));
}

void metrics_lookup_observe(const char *status, double seconds) {
    RECORD(metric_add(M.lookup_requests, (const char *[]){status_valid(status) ? status : "other"},
                      1));
    RECORD(metric_observe(M.lookup_duration, NULL, seconds));
}

void metrics_cni_report(const char *command, int cni_code, double seconds, unsigned rails,
                        const char *tenant) {
    const char *cmd = cni_command_label(command);
    char buf[16];

    RECORD(metric_add(M.cni_commands,
                      (const char *[]){cmd, cni_code_label(cni_code, buf, sizeof(buf))}, 1));
    RECORD(metric_observe(M.cni_duration, (const char *[]){cmd}, seconds));
    if (cni_code == 0 && rails > 0)
        RECORD(metric_add(M.cni_rails, (const char *[]){cmd, tenant_label(tenant)}, rails));
}

void metrics_dra_observe(bool prepare, unsigned ok, unsigned failed, double seconds) {
    const char *op = prepare ? "prepare" : "unprepare";

    if (ok)
        RECORD(metric_add(M.dra_claims, (const char *[]){op, "ok"}, ok));
    if (failed)
        RECORD(metric_add(M.dra_claims, (const char *[]){op, "error"}, failed));
    RECORD(metric_observe(M.dra_duration, (const char *[]){op}, seconds));
}
