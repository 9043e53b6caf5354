/*
 * What identifies a link whatever a pod does to it, and the changes made by
 * ifindex (a name is the pod's to change; an ifindex is fixed while the link
 * lives in a namespace). rtnetlink through libnl's message layer, in the
 * calling thread's namespace (use netns_run() for another).
 */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct LinkId {
    int ifindex;
    char name[IF_NAMESIZE];
    char kind[16];    /* IFLA_INFO_KIND, "" for a device with a driver */
    char parent[100]; /* "<bus>/<device>" (IFLA_PARENT_DEV_*), "" if none */
    int link;         /* IFLA_LINK (a veth's peer ifindex), 0 if none */
    int link_netnsid; /* IFLA_LINK_NETNSID, -1: the peer is in this namespace */
    uint8_t perm[6];  /* IFLA_PERM_ADDRESS, zero if none */
    uint8_t mac[6];
} LinkId;

/* Every link here (*ret malloc'ed, n entries). */
int linkid_dump(LinkId **ret, size_t *ret_n);
/* The links here whose parent is parent ("<bus>/<device>"), however many
 * other links there are. */
int linkid_find_parent(const char *parent, LinkId **ret, size_t *ret_n);
/* One link by ifindex; in the namespace with id target_nsid as seen from
 * here (IFLA_TARGET_NETNSID) unless target_nsid < 0. -ENODEV if absent. */
int linkid_get(int ifindex, int target_nsid, LinkId *ret);
int linkid_get_by_name(const char *name, LinkId *ret);
/* The id the namespace open at netns_fd has as seen from here, or from the
 * namespace with id target_nsid (>= 0); -1 when it has none. */
int linkid_nsid(int netns_fd, int target_nsid, int *ret);

/* Move link ifindex to netns_fd, renamed newname there (NULL: keep). */
int linkid_move(int ifindex, int netns_fd, const char *newname);
int linkid_rename(int ifindex, const char *newname);
int linkid_set_mac(int ifindex, const uint8_t mac[6]);
int linkid_set_up(int ifindex, bool up);
/* Delete every global address of the link not in keep (CIDR strv). */
int linkid_addrs_prune(int ifindex, char *const *keep);
