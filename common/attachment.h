/* Per-attachment CNI state: what was moved, from where, and how it was set. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef enum NicStage {
    NIC_PLANNED = 0, /* recorded, not touched yet */
    NIC_MOVED,       /* in the pod netns, maybe renamed and configured */
} NicStage;

typedef struct AttachedNic {
    char unit[64];
    char host_name[16]; /* original name on the host */
    char pod_name[16];  /* rail<k> */
    char pci[16];       /* "" for virtual NICs */
    uint8_t mac[6];
    unsigned mtu;      /* original MTU */
    bool was_up;       /* original admin state */
    char **host_addrs; /* original global addresses, CIDR */
    NicStage stage;
    /* what the pod side got, for CHECK */
    char **pod_addrs;   /* CIDR */
    char gateway[64];   /* "" if none */
    uint32_t table;     /* per-rail routing table, 0 if none */
    uint32_t rule_prio; /* priority of "from <addr> lookup <table>" */
    unsigned pod_mtu;   /* 0: left as it was */
} AttachedNic;

typedef struct Attachment {
    char container_id[257];
    char ifname[16];
    char netns[4096];
    char pod_ns[254];
    char pod_name[254];
    bool ipam;       /* the IPAM plugin was called: DEL must release */
    char *ipam_conf; /* the exact JSON config given to the delegated IPAM plugin at ADD
                      * (type included), NULL if none; owned, freed by attachment_free */
    AttachedNic *nics;
    size_t n_nics;
} Attachment;

void attachment_free(Attachment *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Attachment *, attachment_free);
AttachedNic *attachment_add_nic(Attachment *a);

/* <state>/attachments/<container id>-<ifname>.json, written atomically
 * (temp file, fsync, rename), mode 0600. */
int attachment_save(const char *state_dir, const Attachment *a);
/* -ENOENT when there is none. */
/* "<container id>-<ifname>": the attachment's file name in the state dir and
 * the owner written into the units it claims; -ENAMETOOLONG if it does not fit. */
int attachment_key(const char *container_id, const char *ifname, char *buf, size_t n);
int attachment_load(const char *state_dir, const char *container_id, const char *ifname,
                    Attachment **ret);
int attachment_remove(const char *state_dir, const char *container_id, const char *ifname);
/* Keys "<container id>-<ifname>" of every saved attachment (strv). */
int attachment_list(const char *state_dir, char ***ret);
int attachment_load_key(const char *state_dir, const char *key, Attachment **ret);

/* An exclusive flock on <state>/locks/<container id>-<ifname>; returns the fd. */
int attachment_lock(const char *state_dir, const char *container_id, const char *ifname);
/* Whether the unit marker held by attachment <key> is stale: nobody holds
 * that attachment's lock (no ADD or DEL of it is running) and its record does
 * not list the unit (a killed ADD claimed it but never recorded it). */
bool attachment_claim_stale(const char *state_dir, const char *key, const char *unit_id);
/* An exclusive flock on the whole state dir (GC and unit claims). */
int state_lock(const char *state_dir);
