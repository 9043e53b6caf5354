/* SPDX-License-Identifier: Apache-2.0 */
/* Bare rtnetlink for the floors of tests/bench (rawnl.h). */
#include "rawnl.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int rawnl_socket(void) {
    int one = 1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

    if (fd < 0)
        return -errno;
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    return fd;
}

void rawnl_put_attr(struct nlmsghdr *h, unsigned short type, const void *data, size_t len) {
    struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    memcpy(RTA_DATA(a), data, len);
    h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

void rawnl_link_msg(struct nlmsghdr *h, int ifindex, int ns_fd, const char *name, bool up,
                    uint32_t seq) {
    struct ifinfomsg *ifi;
    uint32_t fd = (uint32_t)ns_fd;

    memset(h, 0, NLMSG_SPACE(sizeof(*ifi)));
    h->nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
    h->nlmsg_type = RTM_NEWLINK;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    h->nlmsg_seq = seq;
    ifi = NLMSG_DATA(h);
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = ifindex;
    if (up) {
        ifi->ifi_change = IFF_UP;
        ifi->ifi_flags = IFF_UP;
    }
    if (ns_fd >= 0)
        rawnl_put_attr(h, IFLA_NET_NS_FD, &fd, sizeof(fd));
    if (name)
        rawnl_put_attr(h, IFLA_IFNAME, name, strlen(name) + 1);
}

int rawnl_ack(int sk, struct nlmsghdr *req) {
    char ack[1024];

    if (send(sk, req, req->nlmsg_len, 0) < 0)
        return -errno;
    ssize_t n = recv(sk, ack, sizeof(ack), 0);
    if (n < 0)
        return -errno;
    struct nlmsghdr *h = (struct nlmsghdr *)ack;
    if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR)
        return -EPROTO;
    return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

int rawnl_link(int sk, int ifindex, int ns_fd, const char *name, bool up) {
    union {
        struct nlmsghdr h;
        char buf[RAWNL_MSG_MAX];
    } req;

    rawnl_link_msg(&req.h, ifindex, ns_fd, name, up, 0);
    return rawnl_ack(sk, &req.h);
}

int rawnl_addr4(int sk, int ifindex, const uint8_t addr[4], unsigned prefixlen) {
    union {
        struct nlmsghdr h;
        char buf[RAWNL_MSG_MAX];
    } req = {0};
    struct ifaddrmsg *ifa;

    req.h.nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
    req.h.nlmsg_type = RTM_NEWADDR;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    ifa = NLMSG_DATA(&req.h);
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = (unsigned char)prefixlen;
    ifa->ifa_index = (unsigned)ifindex;
    rawnl_put_attr(&req.h, IFA_LOCAL, addr, 4);
    rawnl_put_attr(&req.h, IFA_ADDRESS, addr, 4);
    return rawnl_ack(sk, &req.h);
}
