/* SPDX-License-Identifier: Apache-2.0 */
/* A node for CNI tests and benchmarks: rails of the kind the harness names, tenants, fake
 * kubelet, pod namespaces. The CNI finds a moved veth rail again by its peer, a dummy or macvlan
 * rail by its anchor (a VLAN on it in the host namespace): a kernel that cannot anchor the
 * named kind (no 8021q driver) skips the program (77), never falls back to veth. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fakekubelet.h"

#define CNIENV_NODE "node-1" /* DRA mode: the node's name, its pool's */
#define CNIENV_RAILS 20      /* tenant a: rails 0-15, tenant b: rails 16-19 */

typedef struct CniEnvT {
    char tmp[64];
    char kubelet[128], state[128], config[128], bindir[128], ipamdir[128], log[160];
    char agent_log[160], agent_sock[160];
    char sys[96]; /* a sysfs of the test's namespace, the node config's sysfsRoot */
    char kubeconfig[160], cdi[160]; /* DRA mode: the API server's kubeconfig, "" otherwise */
    FakeKubelet *k;
    pid_t agent; /* the node agent (railgate-device-plugin), 0 while stopped */
    unsigned n_rails;
    const char *plugin_stderr; /* where cnienv_run sends plugins' stderr; NULL: inherited */
} CniEnvT;

typedef struct CniRun {
    int status;     /* exit status */
    json_t *out;    /* stdout parsed, or NULL */
    char raw[8192]; /* stdout as text */
} CniRun;

/* Needs root, after testns_enter_private(). Rails rail-nic<k> of the kind
 * testns_rail_add() makes (with rail-peer<k> beside a veth or macvlan; up;
 * rail-nic<k> has 10.99.<k>.1/24 and MTU 1500 on the host), rail k
 * addressed 10.<100+k>.0.2/24 via 10.<100+k>.0.1, but rails 16-17 are on
 * "addressing": "ipam": tenant b's node-config IPAM is host-local (dataDir
 * ipamdir, network "railgate-b", 10.50.0.0/24 then 10.51.0.0/24). A CNI bin dir of links to the
 * railgate binary and Debian's reference plugins. The fake kubelet, and the
 * node agent in front of it: railgate-device-plugin on the node config (it
 * publishes the inventory and answers the CNI on <state>/agent.sock), as on a
 * node. */
int cnienv_setup(CniEnvT *e, unsigned n_rails);
/* The same node in DRA mode ("mode": "dra", CDI specs in <tmp>/cdi): the
 * agent runs as the DRA driver of node CNIENV_NODE against the API server
 * of kubeconfig, serves kubelet's DRA sockets under the kubelet dir, and
 * answers the CNI from the claims prepared through them. */
int cnienv_setup_dra(CniEnvT *e, unsigned n_rails, const char *kubeconfig);
void cnienv_teardown(CniEnvT *e);
/* Start the node agent (env_extra: NULL or "K=V" strings, a failpoint say;
 * its log, at debug level, in agent_log) and wait until its socket takes
 * connections; stop it by its pid (SIGTERM): its exit status. */
int cnienv_agent_start(CniEnvT *e, char *const *env_extra);
int cnienv_agent_stop(CniEnvT *e);
/* Stop (it must exit 0) and start again: the agent reads the node config
 * when it starts. */
int cnienv_agent_restart(CniEnvT *e, char *const *env_extra);
/* Rewrite the node config: "timeouts" (taken; NULL: as it is) and tenant b's
 * IPAM plugin type (NULL: as it is); the text before in *ret_saved, for
 * cnienv_config_restore (which frees it). */
int cnienv_config_patch(const CniEnvT *e, json_t *timeouts, const char *ipam_type,
                        char **ret_saved);
/* The same for any top-level key of the node config. */
int cnienv_config_set(const CniEnvT *e, const char *key, json_t *value, char **ret_saved);
int cnienv_config_restore(const CniEnvT *e, char *saved);
/* The device plugin publishes the node's inventory for the CNI (its
 * --publish-inventory, as the daemon does when it starts); cnienv_setup has
 * done it once. 0, or the plugin's exit status. */
int cnienv_publish(const CniEnvT *e);

/* A pod namespace /run/netns/<name> (removed at exit even on failure). */
int cnienv_pod_netns(const char *name, char *path, size_t n);
void cnienv_pod_netns_del(const char *name);

/* A pod as the tests play it: its namespace, its sandbox container id, and
 * what kubelet's PodResources says it holds. */
typedef struct CniPod {
    char name[64], ns[32], netns[128], nsname[64], container[64];
    char *result; /* ADD's stdout, for DEL/CHECK prevResult */
} CniPod;

/* A new pod <prefix><seq> in namespace ns with its own network namespace,
 * holding ids[0..n) of resource (n == 0: nothing). */
int cnienv_pod_new(CniEnvT *e, CniPod *p, const char *prefix, const char *ns, const char *resource,
                   char *const *ids, size_t n);
/* Forget the pod in kubelet, delete its network namespace, free its result. */
void cnienv_pod_free(CniEnvT *e, CniPod *p);

/* Does the CNI anchor the rails of this node (dummy, macvlan), or find
 * them by their veth peers? */
bool cnienv_rails_anchored(void);
/* How many VLANs this (the node's) namespace has, in iproute2's view: the
 * anchors of anchored rails. */
size_t cnienv_host_vlans(void);
/* The name of the anchor the record of (container, ifname) names for unit,
 * into name (IF_NAMESIZE bytes): 0, -ENOENT without such a record, NIC or
 * anchor. */
int cnienv_anchor_name(const CniEnvT *e, const char *container, const char *ifname,
                       const char *unit, char *name);
/* The ifindex the same record gives that anchor (0: none written), or -ENOENT. */
int cnienv_anchor_ifindex(const CniEnvT *e, const char *container, const char *ifname,
                          const char *unit);
/* The pod's CNI command cmd on eth0 with network config 1.1.0 (cnienv_run). */
int cnienv_pod_cmd(const CniEnvT *e, const CniPod *p, const char *cmd, char *const *env_extra,
                   CniRun *ret);
/* Nothing moved: host rail rail-nic<rail> on the node, no rail in the pod,
 * nothing recorded or claimed in the state dir. */
bool cnienv_nothing_moved(const CniEnvT *e, const CniPod *p, unsigned rail);

/* Entries of the state dir's subdirectory sub ("attachments", "units"). */
size_t cnienv_state_count(const CniEnvT *e, const char *sub);

/* Run a CNI plugin binary from the bin dir as a runtime does. env_extra:
 * NULL or "K=V" strings (NULL-terminated). */
int cnienv_run(const CniEnvT *e, const char *plugin, const char *command, const char *container,
               const char *netns, const char *ifname, const char *pod_ns, const char *pod_name,
               const char *stdin_json, char *const *env_extra, CniRun *ret);
void cni_run_done(CniRun *r);
/* An error answer's code and message (0 and "" for none). */
int cni_run_code(const CniRun *r);
const char *cni_run_msg(const CniRun *r);
/* Is there a link of that name in this (the node's) namespace? */
bool link_on_host(const char *dev);

/* A plugin run in flight: started, then (with a failpoint "=pause" in its
 * RAILGATE_FAILPOINT) waited for where it stopped itself, continued, and
 * finished. A test holds a race open that way, deterministically. */
typedef struct CniProc {
    pid_t pid;
    int out; /* its stdout */
    int status;
    bool ended;
} CniProc;
int cnienv_start(const CniEnvT *e, const char *plugin, const char *command, const char *container,
                 const char *netns, const char *ifname, const char *pod_ns, const char *pod_name,
                 const char *stdin_json, char *const *env_extra, CniProc *ret);
/* 0 once it stopped (SIGSTOP at a pause failpoint); -ECHILD if it ended
 * instead (its status is kept for cni_proc_finish). */
int cni_proc_wait_stopped(CniProc *p);
int cni_proc_continue(CniProc *p);
/* Its stdout and exit status into ret, once it ended. */
int cni_proc_finish(CniProc *p, CniRun *ret);
/* Exec the plugin at path with exactly envp, stdin_json on its stdin, in the
 * network namespace at netns_path (NULL: this one), its stderr appended to
 * stderr_log (NULL: inherited); its stdout and exit status into ret. */
int cni_exec(const char *path, char *const envp[], const char *stdin_json, const char *netns_path,
             const char *stderr_log, CniRun *ret);
int cni_spawn(const char *path, char *const envp[], const char *stdin_json, const char *netns_path,
              const char *stderr_log, CniProc *ret);

/* The network config railgate gets (cniVersion v, extra JSON members or ""). */
char *cnienv_conf(const char *version, const char *extra);

/* `ip [-n ns] -j <args>` parsed (tests verify with iproute2, not our own netlink). */
json_t *ip_json(const char *netns, const char *args);
/* Does `ip [-n ns] <args>` print a line containing needle? */
bool ip_has(const char *netns, const char *args, const char *needle);
int ip_cmd(const char *netns, const char *args);
/* What a link's holder can change on dev in netns (NULL: this one) beyond
 * its name, MAC, MTU, state and addresses, as iproute2 shows it (flags,
 * operstate, link mode, group, queue length, broadcast, promiscuity, GSO/GRO
 * limits, protodown, XDP, qdisc, IPv6 address generation, the kind's own
 * data), as canonical JSON text; NULL if dev is not there. */
char *cnienv_link_settings(const char *netns, const char *dev);
/* `ethtool <what> <dev>` in this namespace (what: "-k", "-g", "-c", ...),
 * its output as text. */
char *cnienv_ethtool_show(const char *what, const char *dev);
/* dev's NAPI and queue 0's settings in the env's sysfs ("gro_flush_timeout=0
 * ... queues/rx-0/rps_cpus=0 ..."; "-" where there is no such file). */
char *cnienv_queue_settings(const CniEnvT *e, const char *dev);
