/* SPDX-License-Identifier: Apache-2.0 */
/* The node config: one root-owned JSON file that decides rails and tenants. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CONFIG_DEFAULT_PATH "/etc/railgate/node.json"
#define CONFIG_MAX_RAILS 1024
#define CONFIG_MAX_TENANTS 64
#define CONFIG_MAX_UNITS_PER_RAIL 256
#define CONFIG_MAX_LIST 256              /* namespaces, prefixes, device nodes */
#define CONFIG_MAX_FILE_SIZE (4u << 20)  /* bytes of JSON read at most */
#define CONFIG_MAX_IPAM_SIZE (64u << 10) /* bytes of a tenant's IPAM config, as compact JSON */

/* How far apart a GPU and a NIC may sit and still be paired by discovery. */
typedef enum PairDistance {
    PAIR_DISTANCE_SWITCH = 1,     /* same PCIe switch (PIX/PXB) */
    PAIR_DISTANCE_HOSTBRIDGE = 2, /* same host bridge / root complex (PHB) */
    PAIR_DISTANCE_NUMA = 3,       /* same NUMA node (NODE) */
    PAIR_DISTANCE_SYSTEM = 4,     /* anywhere (SYS) */
} PairDistance;

typedef enum RoutingMode {
    ROUTING_MODE_TABLE = 0, /* per-rail table + source rule */
    ROUTING_MODE_VRF,       /* l3mdev VRF device in the pod */
} RoutingMode;

typedef enum AddressMode {
    ADDRESS_MODE_STATIC = 0, /* addresses listed in the rail config */
    ADDRESS_MODE_IPAM, /* delegated to the IPAM plugin of the rail's tenant (TenantConfig.ipam) */
    ADDRESS_MODE_KEEP, /* keep what the NIC carries on the host */
} AddressMode;

typedef struct GpuConfig {
    bool present;    /* false: the rail has no GPU (NIC-only rail) */
    char *pci;       /* "0000:17:00.0", or NULL */
    char *simulated; /* simulated GPU name ("gpu0"), or NULL */
    char *uuid;      /* optional; NVIDIA GPU UUID */
    int minor;       /* device minor (/dev/nvidia<minor>), -1 unknown */
    char **devices;  /* explicit device nodes, NULL-terminated, or NULL */
    size_t n_devices;
} GpuConfig;

/* A VF's admin state, set through its PF while a pod holds the VF and
 * given back on DEL as it was: what a pod cannot change from inside. A
 * setting CONFIG_VF_KEEP is left as it is. */
#define CONFIG_VF_KEEP (-1)
typedef struct VfConfig {
    bool pin_mac;   /* the VF's MAC set as its administrative MAC (default) */
    int spoofchk;   /* 1 (default), 0, or CONFIG_VF_KEEP */
    int trust;      /* 0 (default), 1, or CONFIG_VF_KEEP */
    int link_state; /* IFLA_VF_LINK_STATE_* (default AUTO: the PF's), or CONFIG_VF_KEEP */
} VfConfig;

typedef struct NicConfig {
    bool present;       /* false on a discovered rail: filled by discovery */
    char *name;         /* host netdev name, or NULL */
    char *pci;          /* PCI address, or NULL */
    char *rdma;         /* RDMA device name override, or NULL */
    bool vf;            /* hand out SR-IOV VFs of this NIC instead of the NIC */
    unsigned units;     /* vf mode: units (one VF each, VF j for unit j); else 1 */
    VfConfig vf_config; /* vf mode: what the VFs' admin state is while in a pod */
} NicConfig;

typedef struct RailConfig {
    unsigned index; /* k: rail k, GPU k, NIC k; pod-side name rail<k> */
    GpuConfig gpu;
    NicConfig nic;
    unsigned mtu; /* 0: leave as is */
    AddressMode address_mode;
    char **addresses; /* CIDR per unit (unit j gets addresses[j]), NULL-terminated */
    size_t n_addresses;
    char *gateway; /* rail gateway (leaf side), or NULL */
    int numa;      /* NUMA node override, -1 unset (discovery or sysfs decide) */
} RailConfig;

typedef struct VrfConfig {
    char *name;      /* VRF device name in VRF mode; default "vrf-<tenant>" */
    uint32_t table;  /* base table id; rail k uses table + k */
    char **prefixes; /* CIDRs of the tenant VRF, NULL-terminated */
    size_t n_prefixes;
    RoutingMode mode;
} VrfConfig;

typedef struct TenantConfig {
    char *name;        /* DNS label */
    char *resource;    /* extended resource name; default "<domain>/<name>" */
    char **namespaces; /* Kubernetes namespaces of this tenant, NULL-terminated */
    size_t n_namespaces;
    unsigned *rails; /* rail indices */
    size_t n_rails;
    VrfConfig vrf;
    /* The IPAM plugin config for the tenant's "addressing": "ipam" rails, as
     * compact JSON ({"type": ..., plugin keys}), or NULL. Only this config
     * is ever given to an IPAM plugin: CNI stdin never selects one. */
    char *ipam;
    char *ipam_type; /* its "type", a plugin file name */
} TenantConfig;

typedef struct DiscoveryConfig {
    bool enabled;       /* discover GPUs and NICs with hwloc */
    char *topology_xml; /* hwloc XML instead of the live system, or NULL */
    PairDistance max_distance;
    char **nic_exclude; /* netdev names never used as rails (e.g. the primary NIC) */
    size_t n_nic_exclude;
} DiscoveryConfig;

/* How long railgate waits, in seconds (1 to CONFIG_MAX_TIMEOUT_S). The
 * defaults hold on a loaded 2-core node, where kubelet took over 5 s to
 * answer PodResources with sixteen ADDs at once; a runtime gives a sandbox's
 * whole network setup minutes (kubelet's runtimeRequestTimeout is 2 min). */
#define CONFIG_MAX_TIMEOUT_S 600
#define CONFIG_DEFAULT_POD_RESOURCES_TIMEOUT_S 15
#define CONFIG_DEFAULT_IPAM_TIMEOUT_S 30
/* The kernel tears a namespace down in a worker, moments after its last
 * user left; a node that deletes many at once takes seconds */
#define CONFIG_DEFAULT_NETNS_TEARDOWN_TIMEOUT_S 10
/* agentSeconds' default: podResourcesSeconds and this much more, room for
 * the agent's answer after kubelet's; it may be up to a minute above the
 * longest podResourcesSeconds */
#define CONFIG_AGENT_TIMEOUT_MARGIN_S 5
#define CONFIG_MAX_AGENT_TIMEOUT_S (CONFIG_MAX_TIMEOUT_S + 60)
typedef struct TimeoutConfig {
    unsigned pod_resources_s;  /* the node agent's wait for kubelet's PodResources answer */
    unsigned agent_s;          /* the CNI's wait for the node agent's answer */
    unsigned ipam_s;           /* for one run of an IPAM plugin */
    unsigned netns_teardown_s; /* DEL's and GC's wait for NICs in namespaces being torn down */
} TimeoutConfig;

/* How the node agent hands units to kubelet: one way per node, never both
 * (kubelet would count a resource's units twice). */
typedef enum AgentMode {
    AGENT_MODE_DEVICE_PLUGIN = 0, /* a device plugin per tenant resource */
    AGENT_MODE_DRA,               /* a DRA driver (driver name: domain) */
} AgentMode;

/* The node agent's metrics endpoint (off unless "metrics" is given). */
#define CONFIG_DEFAULT_METRICS_CONNECTIONS 16
#define CONFIG_MAX_METRICS_CONNECTIONS 1024
#define CONFIG_DEFAULT_METRICS_PER_CLIENT 4 /* or maxConnections, if fewer */
#define CONFIG_DEFAULT_METRICS_TIMEOUT_S 10
#define CONFIG_DEFAULT_METRICS_DEADLINE_S 10
typedef struct MetricsConfig {
    char *listen;             /* "unix:/path", "ip:port" or "[ip6]:port"; NULL: off */
    unsigned socket_mode;     /* unix socket: 0600 or 0660 */
    long long socket_group;   /* unix socket: its group, -1: root's */
    unsigned max_connections; /* open at once */
    unsigned max_per_client;  /* open at once from one address (not loopback's) */
    unsigned timeout_s;       /* a connection idle this long is closed */
    unsigned deadline_s;      /* a request still unanswered this long is cut off */
} MetricsConfig;

/* The device nodes a unit gets beyond its uverbs and rdma_cm (off unless asked). */
typedef struct RdmaConfig {
    bool umad;    /* /dev/infiniband/umad<N> of each port of the unit's RDMA device */
    bool gdrcopy; /* /dev/gdrdrv (GDRCopy) for units with a GPU, where the node has it */
} RdmaConfig;

typedef struct NodeConfig {
    char *path;        /* file it came from (for messages) */
    char *domain;      /* resource domain, default "railgate.io" */
    char *kubelet_dir; /* default "/var/lib/kubelet" */
    char *state_dir;   /* default "/var/lib/railgate" */
    char *log_file;    /* CNI log file, default "/var/log/railgate-cni.log" */
    char *sysfs_root;  /* default "/sys" */
    char *dev_root;    /* prefix for device nodes, default "" (the real /dev) */
    char *proc_root;   /* default "/proc" */
    char *cdi_kind;    /* e.g. "nvidia.com/gpu": hand out CDI names, or NULL */
    char *cdi_dir;     /* DRA mode's CDI specs, default "/var/run/cdi" */
    AgentMode mode;
    DiscoveryConfig discovery;
    TimeoutConfig timeouts;
    MetricsConfig metrics;
    RdmaConfig rdma;
    RailConfig *rails; /* sorted by index */
    size_t n_rails;
    TenantConfig *tenants;
    size_t n_tenants;
} NodeConfig;

/*
 * Parse and validate. On failure returns -EINVAL (or -errno for I/O) and
 * fills err->msg as "<file>: <json path>: <reason>", e.g.
 * "node.json: $.tenants[1].rails[0]: rail 3 already belongs to tenant \"a\"".
 */
int config_load(const char *path, NodeConfig **ret, RgError *err);
int config_parse(const char *text, const char *name, NodeConfig **ret, RgError *err);
void config_free(NodeConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(NodeConfig *, config_free);

const RailConfig *config_find_rail(const NodeConfig *c, unsigned index);
/* Does c leave every setting of a VF's admin state as it is? */
bool config_vf_keeps_all(const VfConfig *c);
const TenantConfig *config_find_tenant(const NodeConfig *c, const char *name);
/* The tenant a rail belongs to, or NULL. */
const TenantConfig *config_rail_tenant(const NodeConfig *c, unsigned index);
/* The tenant of a Kubernetes namespace, or NULL. */
const TenantConfig *config_namespace_tenant(const NodeConfig *c, const char *ns);
const TenantConfig *config_resource_tenant(const NodeConfig *c, const char *resource);
