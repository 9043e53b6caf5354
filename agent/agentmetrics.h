/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's metrics: what it counts, with which labels, and its /metrics endpoint. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/*
 * Every label value comes from a closed set: tenants and resources of the
 * node config, gRPC code names, CNI commands and error codes; anything else
 * is counted as "other". Recording before metrics_init (metrics off) or
 * after metrics_free does nothing. Recording is thread-safe; init and free
 * are not (before the threads start, after they are joined).
 */
int metrics_init(const NodeConfig *c);
void metrics_free(void);
/* The text exposition (format 0.0.4) of everything recorded so far. */
int metrics_render(char **ret, size_t *ret_len);

/* CLOCK_MONOTONIC in ns, and the seconds since such a reading. */
uint64_t metrics_clock(void);
double metrics_seconds_since(uint64_t start);

/* Why a tenant registered (again); when several apply, the highest counts. */
typedef enum RegisterReason {
    REGISTER_REASON_NONE = 0,
    REGISTER_REASON_REBIND,          /* its socket was gone, and it served anew */
    REGISTER_REASON_SIGHUP,          /* SIGHUP rebinds every tenant */
    REGISTER_REASON_KUBELET_RESTART, /* a new kubelet.sock */
    REGISTER_REASON_START,           /* its first registration in this process */
} RegisterReason;

/* railgate_rdma_netns_mode{mode}: the node's RDMA network-namespace mode as
 * read at start, "exclusive", "shared" or "unavailable" (no RDMA netlink);
 * the value is always 1. */
void metrics_rdma_netns_mode(const char *mode);
/* railgate_registrations_total{resource,reason}: a Register kubelet accepted. */
void metrics_registered(const char *resource, RegisterReason why);
/* railgate_registration_failures_total{resource}: a Register that failed (retried). */
void metrics_registration_failed(const char *resource);
/* railgate_units{tenant,health}: the tenant's units by health now. */
void metrics_units(const char *tenant, unsigned healthy, unsigned unhealthy);
/* railgate_unit_health_transitions_total{tenant,to}: a unit turned healthy or unhealthy. */
void metrics_health_transition(const char *tenant, bool healthy);
/* railgate_allocate_requests_total{resource,code} and railgate_allocate_duration_seconds{resource}.
 */
void metrics_allocate_observe(const char *resource, int grpc_code, double seconds);
/* The same for GetPreferredAllocation: railgate_preferred_allocation_*. */
void metrics_preferred_observe(const char *resource, int grpc_code, double seconds);

/*
 * The CNI's question "which units does this pod hold", answered by the
 * agent: railgate_pod_lookup_requests_total{code} and
 * railgate_pod_lookup_duration_seconds. status is the name of the answer's
 * status ("OK", "UNAVAILABLE", ...: 1 to 32 of [A-Z_]); anything else is
 * "other".
 */
void metrics_lookup_observe(const char *status, double seconds);
/*
 * A CNI command as the CNI reported it after answering the runtime:
 * railgate_cni_commands_total{command,code},
 * railgate_cni_command_duration_seconds{command}, and on success the rails it
 * handled in railgate_cni_rails_total{command,tenant}. command is ADD, DEL,
 * CHECK, GC, STATUS or VERSION (any case), else "other"; cni_code is 0 or the
 * CNI error code it answered (the spec's and railgate's codes, else
 * "other"); tenant NULL or "" is "none", one the node config lacks "other".
 */
void metrics_cni_report(const char *command, int cni_code, double seconds, unsigned rails,
                        const char *tenant);

/*
 * DRA mode: one NodePrepareResources (prepare) or NodeUnprepareResources
 * call of kubelet, its claims answered ok or with an error:
 * railgate_dra_claims_total{operation,result} and
 * railgate_dra_request_duration_seconds{operation}.
 */
void metrics_dra_observe(bool prepare, unsigned ok, unsigned failed, double seconds);

/*
 * Serve GET (and HEAD) /metrics on c->listen with libmicrohttpd, on a thread
 * of its own: Content-Type text/plain; version=0.0.4; 404 for another path,
 * 405 for another method; at most c->max_connections at once, each closed
 * after c->timeout_s idle; at most c->max_per_client at once from one address
 * other than loopback, and a request unanswered c->deadline_s after it could
 * begin is cut off, however it trickles (metrics-guard.h; 0: no limit, no
 * deadline). Returns once the socket listens.
 */
typedef struct MetricsServer MetricsServer;
int metrics_server_start(const MetricsConfig *c, MetricsServer **ret);
/* Stop serving, close every connection, remove a unix socket. NULL-safe. */
void metrics_server_stop(MetricsServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricsServer *, metrics_server_stop);
