/* SPDX-License-Identifier: Apache-2.0 */
/* Bare rtnetlink for the floors of tests/bench: one request, one ack, no library between the
 * program and the kernel (what the kernel alone costs). */
#pragma once

#include <linux/netlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any request built here. */
#define RAWNL_MSG_MAX 256

/* An rtnetlink socket in the calling thread's namespace, with extended acks; -errno. */
int rawnl_socket(void);
/* The attribute type with len bytes of data at the end of h. */
void rawnl_put_attr(struct nlmsghdr *h, unsigned short type, const void *data, size_t len);
/* The RTM_NEWLINK (seq) on ifindex at h (RAWNL_MSG_MAX bytes of room): into the
 * namespace at ns_fd (< 0: stay), renamed name (NULL: keep), and up if up. */
void rawnl_link_msg(struct nlmsghdr *h, int ifindex, int ns_fd, const char *name, bool up,
                    uint32_t seq);
/* Send req on sk and wait for its ack: 0, or the kernel's -errno. */
int rawnl_ack(int sk, struct nlmsghdr *req);
/* One RTM_NEWLINK on ifindex, acked: see rawnl_link_msg(). */
int rawnl_link(int sk, int ifindex, int ns_fd, const char *name, bool up);
/* One RTM_NEWADDR (replace) of the IPv4 address addr/prefixlen on ifindex, acked. */
int rawnl_addr4(int sk, int ifindex, const uint8_t addr[4], unsigned prefixlen);
