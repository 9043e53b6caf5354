/* rtnetlink through libnl-route-3: link queries and the link event monitor. */
#pragma once

#include <net/if.h>
#include <linux/if.h> /* IF_OPER_*, after net/if.h: glibc first, then the UAPI extras */
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

typedef struct LinkInfo {
    int ifindex;
    char name[IF_NAMESIZE];
    char alias[256];
    unsigned flags;    /* IFF_* */
    uint8_t operstate; /* IF_OPER_* */
    unsigned mtu;
    uint8_t mac[6];
    bool has_mac;
} LinkInfo;

/* Healthy rail link: administratively up and the lower layer is up
 * (IFF_RUNNING, or operstate UP/UNKNOWN). */
bool link_info_healthy(const LinkInfo *l);

/* Look a link up in the calling thread's network namespace (a fresh
 * netlink socket each call). -ENODEV if absent. */
int link_get_by_name(const char *name, LinkInfo *ret);
int link_get_by_index(int ifindex, LinkInfo *ret);

/* The same lookups on one netlink socket kept open, for a caller that makes
 * many (the daemon's health checks). Bound to the namespace of the thread
 * that made it; use from one thread. A NULL q falls back to a fresh socket. */
typedef struct LinkLookup LinkLookup;
int link_lookup_new(LinkLookup **ret);
int link_lookup_by_name(LinkLookup *q, const char *name, LinkInfo *ret);
void link_lookup_free(LinkLookup *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(LinkLookup *, link_lookup_free);

typedef enum LinkEventType {
    LINK_EVENT_NEW = 0, /* created or changed */
    LINK_EVENT_DEL,     /* deleted, or moved to another namespace */
} LinkEventType;

typedef struct LinkEvent {
    LinkEventType type;
    LinkInfo link;
} LinkEvent;

typedef void (*link_event_fn)(void *userdata, const LinkEvent *ev);

/* A non-blocking netlink socket subscribed to RTNLGRP_LINK in the calling
 * thread's namespace; poll its fd, then dispatch. */
typedef struct LinkMonitor LinkMonitor;
int link_monitor_new(LinkMonitor **ret);
int link_monitor_fd(const LinkMonitor *m);
/* Read every pending message and call fn for each link event. Returns
 * -ENOBUFS when the kernel dropped events: the caller must re-read the state
 * of every link it follows (link_get_by_*). */
int link_monitor_dispatch(LinkMonitor *m, link_event_fn fn, void *userdata);
void link_monitor_free(LinkMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(LinkMonitor *, link_monitor_free);

/*
 * The node's own NICs, in the calling thread's namespace: the output devices
 * of the main table's default routes (IPv4 and IPv6, every nexthop), and the
 * links with a global-scope address. Never to be handed to a pod. ret is a
 * malloc'd array (NULL when n is 0).
 */
enum {
    NODE_NIC_DEFAULT_ROUTE = 1 << 0,
    NODE_NIC_ADDRESS = 1 << 1,
};
typedef struct NodeNic {
    char name[IF_NAMESIZE];
    unsigned uses; /* NODE_NIC_* */
} NodeNic;
int node_nics_list(NodeNic **ret, size_t *ret_n);
/* Why a node NIC is not a rail: "it carries the node's default route", ... */
const char *node_nic_use_str(unsigned uses);

/* libnl's -NLE_* (or NLE_*) as -errno, for the few callers outside this
 * file that drive libnl themselves (test helpers); 0 stays 0. */
int netlink_errno(int nlerr);
