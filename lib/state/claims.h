/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prepared DRA claims: which claim holds which units for which pod, kept in
 * the state dir so that an agent or kubelet restart finds them:
 *
 *   <state_dir>/claims/<claim uid>.json
 *
 * written whole and durably (fileio's atomic publish) before kubelet hears
 * that the claim is prepared, removed when it is unprepared. The agent's
 * "which units does pod X hold" in DRA mode is answered from these.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

#define CLAIMS_DIR "claims"
#define CLAIM_UID_MAX 64
#define CLAIM_MAX_PODS 1     /* a unit's NIC moves into one pod */
#define CLAIM_MAX_DEVICES 32 /* AllocationResultsMaxSize */

typedef struct ClaimDevice {
    char request[64]; /* the request it answers ("gpu", "container-0-request-0") */
    char unit[64];    /* the unit: the device name in the node's pool */
} ClaimDevice;

typedef struct PreparedClaim {
    char uid[CLAIM_UID_MAX];
    char ns[64];
    char name[254];
    char tenant[64];
    char pool[254];
    char pod_uid[CLAIM_UID_MAX]; /* the consumer in status.reservedFor */
    ClaimDevice devices[CLAIM_MAX_DEVICES];
    size_t n_devices;
} PreparedClaim;

/* A Kubernetes UID usable as a file name: 1 to 63 of [A-Za-z0-9-]. */
bool claim_uid_valid(const char *uid);

int claims_save(const char *state_dir, const PreparedClaim *c);
/* -ENOENT if none; -EBADMSG for a file that is not a record of that uid. */
int claims_load(const char *state_dir, const char *uid, PreparedClaim *ret);
/* Idempotent: 0 when there is none. */
int claims_remove(const char *state_dir, const char *uid);
/* UIDs of every record (strv, empty if none). */
int claims_list(const char *state_dir, char ***ret);
/*
 * The units that prepared claims give pod pod_uid (strv, sorted; empty when
 * none) and their tenant. -EXDEV when they are of two tenants (never
 * written so: each record is one tenant's, and prepare refuses to mix), or
 * when ns is not NULL and a claim of the pod is of another namespace (a pod
 * can reference claims of its own namespace only).
 */
int claims_units_of_pod(const char *state_dir, const char *pod_uid, const char *ns,
                        char ***ret_units, char *ret_tenant, size_t tenant_len);
/* The claim (its uid into buf) holding unit, other than except; -ENOENT if none. */
int claims_unit_holder(const char *state_dir, const char *unit, const char *except, char *buf,
                       size_t n);
