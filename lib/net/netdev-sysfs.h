/* SPDX-License-Identifier: Apache-2.0 */
/* A netdev's settings that only sysfs holds: its NAPI and queue settings. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * What a NIC's holder can write under <sys>/class/net/<dev>/ and no
 * netlink request of these kernels reads or sets: the device's
 * gro_flush_timeout, napi_defer_hard_irqs and threaded; each receive
 * queue's rps_cpus and rps_flow_cnt; each transmit queue's xps_cpus,
 * xps_rxqs, tx_maxrate and byte_queue_limits/{limit_min,limit_max,
 * hold_time}. A pod that mounts a sysfs of its own namespace writes them
 * (the kernel checks CAP_NET_ADMIN over the link's namespace).
 *
 * Each setting is a path relative to the device's directory and the value
 * the kernel printed there (without the newline); one the kernel does not
 * show for this device (no XPS on a single-queue device, no RPS without
 * CONFIG_RPS) is not kept.
 */
typedef struct NetdevSetting {
    char *key;
    char *value;
} NetdevSetting;

typedef struct NetdevSysfs {
    NetdevSetting *v;
    size_t n;
} NetdevSysfs;

/* The settings of the link at ifindex named ifname, read from the sysfs at
 * sys ("/sys"): -ENODEV when <sys>/class/net/<ifname> is not that link (a
 * sysfs of another network namespace, or a rename since). */
int netdev_sysfs_get(const char *sys, const char *ifname, int ifindex, NetdevSysfs *ret);
/* Each setting of want that differs written back, then all read again:
 * -EIO and a list of what is not as recorded ("queues/rx-0/rps_cpus 3 (was
 * 0), ...") in what when any differs or could not be written; -ENODEV as
 * above. */
int netdev_sysfs_restore(const char *sys, const char *ifname, int ifindex, const NetdevSysfs *want,
                         char *what, size_t n_what);
void netdev_sysfs_done(NetdevSysfs *s);

/* {"<key>": "<value>", ...}. The parse refuses keys outside the set above
 * and values that are not what the kernel prints (hex digits, commas):
 * -EBADMSG, *ret untouched. */
int netdev_sysfs_to_json(const NetdevSysfs *s, json_t **ret);
int netdev_sysfs_from_json(const json_t *j, NetdevSysfs *ret);
/* Is key one of the settings above (for a queue number below 65536)? */
bool netdev_sysfs_key_valid(const char *key);
