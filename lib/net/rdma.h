/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink (NETLINK_RDMA), the nldev client: the RDMA subsystem's
 * network-namespace mode, the RDMA devices a namespace sees, a port's netdev,
 * and a device's move into another namespace. The same kind of connection
 * as netlink.h's (netlink_open_protocol() of NETLINK_RDMA): opened inside one
 * namespace, the kernel's errno returned unchanged (EOPNOTSUPP, EBUSY, EPERM),
 * netlink_kernel_message() for its extended-ack text; closed with
 * netlink_close(). Without the RDMA core (no /sys/module/ib_core) there is
 * no such protocol: rdma_open() answers -EPROTONOSUPPORT, and does not open
 * the socket, which would make the kernel load ib_core (its module alias
 * net-pf-16-proto-20): reading the mode changes nothing on the node.
 *
 * The mode is the kernel's ib_devices_shared_netns (also
 * /sys/module/ib_core/parameters/netns_mode): shared, every namespace sees
 * every RDMA device; exclusive, a device is seen only in the namespace it
 * belongs to (init_net until moved with rdma_dev_move()). The kernel refuses
 * a change of mode with EBUSY while any network namespace but init_net exists.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netlink.h"

/* The kernel's IB_DEVICE_NAME_MAX: a name and its NUL. */
#define RDMA_DEV_NAME_MAX 64

typedef enum RdmaNetnsMode {
    RDMA_NETNS_EXCLUSIVE = 0, /* RDMA_NLDEV_SYS_ATTR_NETNS_MODE 0 */
    RDMA_NETNS_SHARED = 1,    /* 1, the kernel's default */
} RdmaNetnsMode;

/* "exclusive" or "shared". */
const char *rdma_netns_mode_name(RdmaNetnsMode m);

/* A NETLINK_RDMA connection in the namespace open at netns_fd (< 0: the
 * caller's), as netlink_open(). */
int rdma_open(int netns_fd, Netlink **ret);

/* RDMA_NLDEV_CMD_SYS_GET: the system's namespace mode. */
int rdma_netns_mode_get(Netlink *nl, RdmaNetnsMode *ret);
/* RDMA_NLDEV_CMD_SYS_SET (CAP_NET_ADMIN): -EBUSY while another network
 * namespace than init_net exists. */
int rdma_netns_mode_set(Netlink *nl, RdmaNetnsMode m);

typedef struct RdmaDevice {
    /* RDMA_NLDEV_ATTR_DEV_INDEX and _DEV_NAME ("mlx5_0", "rxe0") */
    uint32_t index;
    char name[RDMA_DEV_NAME_MAX];
    /* RDMA_NLDEV_ATTR_PORT_INDEX of a device: its last port; 0 if not said */
    uint32_t n_ports;
    /* RDMA_NLDEV_ATTR_NODE_GUID (host order), 0 if not said: its driver's,
     * not settable over nldev */
    uint64_t node_guid;
} RdmaDevice;

/* RDMA_NLDEV_CMD_GET dump: the devices nl's namespace sees (malloc'd, in the
 * kernel's order; *ret NULL when none). */
int rdma_dev_list(Netlink *nl, RdmaDevice **ret, size_t *ret_n);

typedef struct RdmaPort {
    uint32_t dev_index, port;
    /* the port's netdev (RDMA_NLDEV_ATTR_NDEV_INDEX, _NDEV_NAME); 0 and "":
     * none in nl's namespace */
    int ndev_index;
    char ndev_name[IF_NAMESIZE];
} RdmaPort;

/* RDMA_NLDEV_CMD_PORT_GET of one port (1..n_ports). The kernel names the
 * netdev only when it is in nl's namespace. */
int rdma_port_get(Netlink *nl, uint32_t dev_index, uint32_t port, RdmaPort *ret);

/* RDMA_NLDEV_CMD_SET with RDMA_NLDEV_NET_NS_FD: move the device into the
 * namespace open at netns_fd (exclusive mode only). The kernel's errno
 * unchanged: -EOPNOTSUPP in shared mode and for a driver that cannot move
 * (rxe), -EPERM without CAP_NET_ADMIN over the target. */
int rdma_dev_move(Netlink *nl, uint32_t dev_index, int netns_fd);
/* RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_NAME: rename the device (its
 * index stays). Device names are one space across namespaces: -EEXIST
 * while any device has the name, -EINVAL for one the kernel takes as a
 * pattern ("%"), too long or empty. */
int rdma_dev_rename(Netlink *nl, uint32_t dev_index, const char *name);

/* RDMA_NLDEV_CMD_NEWLINK: a software RDMA device (link_type "rxe") called
 * name on the netdev ndev of nl's namespace; RDMA_NLDEV_CMD_DELLINK removes
 * one. For tests: the product creates no RDMA device. */
int rdma_link_add(Netlink *nl, const char *name, const char *link_type, const char *ndev);
int rdma_link_delete(Netlink *nl, uint32_t dev_index);

/* ---- the messages, for tests ---------------------------------------------
 * A request as sent (struct nl_msg of libnl; free with nlmsg_free()), and
 * one reply as the kernel sends it: -EBADMSG for one that is not the
 * command's answer, lacks what it must carry or carries it malformed
 * (a name unterminated or too long, a mode but 0 or 1); attributes this
 * code does not know are ignored. */
struct nl_msg;
struct nlmsghdr;
int rdma_msg_sys_set(RdmaNetnsMode m, struct nl_msg **ret);
int rdma_msg_port_get(uint32_t dev_index, uint32_t port, struct nl_msg **ret);
int rdma_msg_dev_move(uint32_t dev_index, int netns_fd, struct nl_msg **ret);
int rdma_msg_dev_rename(uint32_t dev_index, const char *name, struct nl_msg **ret);
int rdma_parse_sys(const struct nlmsghdr *h, RdmaNetnsMode *ret);
int rdma_parse_dev(const struct nlmsghdr *h, RdmaDevice *ret);
int rdma_parse_port(const struct nlmsghdr *h, RdmaPort *ret);
