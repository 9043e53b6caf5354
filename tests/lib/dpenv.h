/* SPDX-License-Identifier: Apache-2.0 */
/* A node for device-plugin tests and benchmarks: rails, simulated GPUs, fake kubelet. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "fakekubelet.h"

typedef struct DpEnv {
    char tmp[64];
    char kubelet[128], state[128], devroot[128], sysfs[128], config[128], log[256];
    unsigned n_rails, vfs;
    char metrics[512];  /* the node config's "metrics" object, "" for none */
    char extra[512];    /* more members of the node config's object ("k": v, ...), "" for none */
    unsigned rdma_from; /* rails from this one on have RDMA devices (dpenv_rdma); n_rails: none */
    char rdma[128];     /* the node config's "rdma" object, "" for none */
    FakeKubelet *k;
    pid_t plugin;
} DpEnv;

/*
 * Needs root and a private network namespace (testns_enter_private). Makes
 * n_rails rails rail-nic<k> of the kind the harness names (testns_rail_add:
 * up, with carrier; veth by default, its peer rail-peer<k>) with simulated
 * GPUs /dev/railgate/gpu<k> under a dev root, tenants "a" (first half of the
 * rails, NUMA 0) and "b" (second half, NUMA 1). vfs > 0: each rail is sold
 * as vfs VF units, with a sysfs fixture of the PF and its virtfn links.
 * Starts the fake kubelet, not the plugin.
 */
int dpenv_setup(DpEnv *e, unsigned n_rails, unsigned vfs);
/* Write the node config again with "metrics": json (NULL: none), for the
 * next plugin start. */
int dpenv_config_metrics(DpEnv *e, const char *json);
/* Write the node config again with more members (NULL: none), e.g.
 * "\"mode\": \"dra\", \"cdiDir\": \"/x\"", for the next plugin start. */
int dpenv_config_extra(DpEnv *e, const char *members);
/* Start the plugin binary (extra: one more argument, or NULL). */
int dpenv_plugin_start(DpEnv *e, const char *extra);
void dpenv_gpu_node(DpEnv *e, unsigned rail, bool present);
/*
 * Rails from `from` on get RDMA device mlx5_<k> (named in the rail's "nic"),
 * with two ports, as sysfs shows them: uverbs<k>, umad<2k> (port 1) and
 * umad<2k+1> (port 2); their nodes and rdma_cm exist under the dev root,
 * /dev/gdrdrv does not. config: the node config's "rdma" object (NULL:
 * none). Writes the config again, for the next plugin start.
 */
int dpenv_rdma(DpEnv *e, unsigned from, const char *config);
/* Make or remove a device node (a container path: "/dev/gdrdrv") under the dev root. */
int dpenv_dev_node(DpEnv *e, const char *path, bool present);
/*
 * Pod <container_id> (interface eth0) holds unit as the CNI leaves it after an
 * ADD: a record listing the unit and the unit's marker naming the record (a
 * marker alone is stale). dpenv_pod_release undoes both.
 */
int dpenv_pod_hold(DpEnv *e, const char *container_id, const char *unit);
int dpenv_pod_release(DpEnv *e, const char *container_id, const char *unit);
/* The same in any state dir (DRA tests have no DpEnv). */
int state_pod_hold(const char *state_dir, const char *container_id, const char *unit);
int state_pod_release(const char *state_dir, const char *container_id, const char *unit);
/* The same with the identity the CNI records, read from the live link nic
 * in the caller's namespace before the test moves it (pod_name: the name it
 * will have in the pod): a veth's peer there, or for a dummy or a macvlan
 * an anchor made as the CNI makes it (a VLAN anc-<unit> on it). What the
 * agent finds the NIC in the pod by. -EOPNOTSUPP for another kind. */
int state_pod_hold_nic(const char *state_dir, const char *container_id, const char *unit,
                       const char *nic, const char *pod_name);
/* As a CNI ADD leaves unit rail<rail>: held with its identity, its NIC moved
 * into a new namespace (testns_named_new, its path into ret_path) and up
 * there; the caller gets an fd of that namespace in *ret_fd and removes it. */
int dpenv_pod_take(DpEnv *e, const char *container_id, unsigned rail, char *ret_path, size_t n,
                   int *ret_fd);
/* The same in a cmocka test, which is skipped (saying why) where the rail's
 * kind needs an anchor and this kernel has no 8021q driver for it. */
int dpenv_pod_take_or_skip(DpEnv *e, const char *container_id, unsigned rail, char *ret_path,
                           size_t n, int *ret_fd);
/* Rail rail's carrier, its NIC in the pod at pod_fd: where the kind has it
 * (a veth's peer and a macvlan's wire on the host, a dummy's own there). */
int dpenv_pod_carrier(unsigned rail, int pod_fd, bool on);
/* Rail rail made again on the host after the namespace that held its NIC
 * went (and the NIC with it): once the kernel has taken a veth's peer. */
int dpenv_rail_remake(unsigned rail);
void dpenv_teardown(DpEnv *e);
/* The path of tenant's socket in kubelet's device-plugin dir (its name,
 * railgate-<tenant>-<8 hex>.sock, is new at every server start): 0, -ENOENT
 * when there is none, -ENOTUNIQ when there are several. */
int dpenv_tenant_socket(const DpEnv *e, const char *tenant, char *buf, size_t n);

/*
 * What the agent says of the node's RDMA netns mode at start, as this kernel
 * gives it to the caller's thread: "exclusive" or "shared", or "unavailable"
 * where the kernel has no RDMA netlink (no ib_core). Never a host's answer
 * hard-coded: the test asks the kernel the same way.
 */
const char *dpenv_rdma_netns_mode(void);
