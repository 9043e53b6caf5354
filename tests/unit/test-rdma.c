/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink's nldev messages: the requests as built, the kernel's answers as read (constructed
 * here as the kernel's nldev.c lays them out), and malformed answers refused. */
#include <errno.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rdma.h"

#define TYPE(cmd) RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, (cmd))
/* An attribute number past every kernel's so far: a newer kernel's, to be skipped. */
#define ATTR_FROM_THE_FUTURE 500

static struct nl_msg *reply(unsigned cmd) {
    struct nl_msg *m = nlmsg_alloc_simple(TYPE(cmd), 0);

    assert_non_null(m);
    return m;
}

/* Attributes of a request: the type, and tb parsed with no policy. */
static void request_attrs(struct nl_msg *m, unsigned cmd, struct nlattr **tb) {
    struct nlmsghdr *h = nlmsg_hdr(m);

    assert_int_equal(h->nlmsg_type, TYPE(cmd));
    assert_int_equal(nlmsg_parse(h, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL), 0);
}

/* RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op) is (5 << 10) + op: the numbers the kernel dispatches on. */
static void test_message_types(void **state) {
    (void)state;
    assert_int_equal(TYPE(RDMA_NLDEV_CMD_GET), 0x1401);
    assert_int_equal(TYPE(RDMA_NLDEV_CMD_SET), 0x1402);
    assert_int_equal(TYPE(RDMA_NLDEV_CMD_PORT_GET), 0x1405);
    assert_int_equal(TYPE(RDMA_NLDEV_CMD_SYS_GET), 0x1406);
    assert_int_equal(TYPE(RDMA_NLDEV_CMD_SYS_SET), 0x1407);
    assert_int_equal(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 66);
    assert_int_equal(RDMA_NLDEV_NET_NS_FD, 68);
}

static void test_sys_set_built(void **state) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    struct nl_msg *m = NULL;

    (void)state;
    assert_int_equal(rdma_msg_sys_set(RDMA_NETNS_EXCLUSIVE, &m), 0);
    request_attrs(m, RDMA_NLDEV_CMD_SYS_SET, tb);
    assert_non_null(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
    assert_int_equal(nla_len(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]), 1);
    assert_int_equal(nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]), 0);
    nlmsg_free(m);
    m = NULL;
    assert_int_equal(rdma_msg_sys_set(RDMA_NETNS_SHARED, &m), 0);
    request_attrs(m, RDMA_NLDEV_CMD_SYS_SET, tb);
    assert_int_equal(nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]), 1);
    nlmsg_free(m);
    m = NULL;
    assert_int_equal(rdma_msg_sys_set((RdmaNetnsMode)2, &m), -EINVAL);
    assert_null(m);
}

static void test_port_get_and_move_built(void **state) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    struct nl_msg *m = NULL;

    (void)state;
    assert_int_equal(rdma_msg_port_get(3, 1, &m), 0);
    request_attrs(m, RDMA_NLDEV_CMD_PORT_GET, tb);
    assert_int_equal(nla_len(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), 4);
    assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), 3);
    assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]), 1);
    nlmsg_free(m);
    m = NULL;
    memset(tb, 0, sizeof(tb));
    assert_int_equal(rdma_msg_dev_move(3, 9, &m), 0);
    request_attrs(m, RDMA_NLDEV_CMD_SET, tb);
    assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), 3);
    assert_int_equal(nla_len(tb[RDMA_NLDEV_NET_NS_FD]), 4);
    assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_NET_NS_FD]), 9);
    nlmsg_free(m);
    m = NULL;
    assert_int_equal(rdma_msg_dev_move(3, -1, &m), -EBADF);
    assert_null(m);
}

static void test_rename_built(void **state) {
    struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {0};
    struct nl_msg *m = NULL;
    char long_name[RDMA_DEV_NAME_MAX + 1];

    (void)state;
    assert_int_equal(rdma_msg_dev_rename(7, "mlx5_0", &m), 0);
    request_attrs(m, RDMA_NLDEV_CMD_SET, tb);
    assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), 7);
    assert_string_equal(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), "mlx5_0");
    /* a rename is no move: the kernel takes the name and ignores the rest */
    assert_null(tb[RDMA_NLDEV_NET_NS_FD]);
    nlmsg_free(m);
    m = NULL;
    /* refused before a message: a pattern, an empty name, one too long */
    assert_int_equal(rdma_msg_dev_rename(7, "mlx5_%d", &m), -EINVAL);
    assert_int_equal(rdma_msg_dev_rename(7, "", &m), -EINVAL);
    assert_int_equal(rdma_msg_dev_rename(7, NULL, &m), -EINVAL);
    memset(long_name, 'm', sizeof(long_name));
    long_name[RDMA_DEV_NAME_MAX] = 0;
    assert_int_equal(rdma_msg_dev_rename(7, long_name, &m), -EINVAL);
    long_name[RDMA_DEV_NAME_MAX - 1] = 0;
    assert_int_equal(rdma_msg_dev_rename(7, long_name, &m), 0);
    nlmsg_free(m);
}

/* nldev_sys_get_doit(): the mode, then copy-on-fork (5.13), then what a
 * newer kernel adds (privileged Q_Key, 6.7, and later ones). */
static int sys_with(int mode, bool more, unsigned cmd, RdmaNetnsMode *got) {
    struct nl_msg *m = reply(cmd);
    int r;

    if (mode >= 0)
        assert_int_equal(nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, (uint8_t)mode), 0);
    if (more) {
        assert_int_equal(nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1), 0);
        assert_int_equal(nla_put_u8(m, ATTR_FROM_THE_FUTURE, 1), 0);
    }
    r = rdma_parse_sys(nlmsg_hdr(m), got);
    nlmsg_free(m);
    return r;
}

static void test_sys_reply(void **state) {
    RdmaNetnsMode got = RDMA_NETNS_SHARED;

    (void)state;
    assert_int_equal(sys_with(0, true, RDMA_NLDEV_CMD_SYS_GET, &got), 0);
    assert_int_equal(got, RDMA_NETNS_EXCLUSIVE);
    assert_int_equal(sys_with(1, false, RDMA_NLDEV_CMD_SYS_GET, &got), 0);
    assert_int_equal(got, RDMA_NETNS_SHARED);
    assert_string_equal(rdma_netns_mode_name(RDMA_NETNS_EXCLUSIVE), "exclusive");
    assert_string_equal(rdma_netns_mode_name(RDMA_NETNS_SHARED), "shared");
    /* refused: no mode, a mode the kernel never sends, another command's answer */
    assert_int_equal(sys_with(-1, true, RDMA_NLDEV_CMD_SYS_GET, &got), -EBADMSG);
    assert_int_equal(sys_with(2, false, RDMA_NLDEV_CMD_SYS_GET, &got), -EBADMSG);
    assert_int_equal(sys_with(1, false, RDMA_NLDEV_CMD_GET, &got), -EBADMSG);
}

/* A mode attribute too short for its u8 (an empty payload). */
static void test_sys_reply_short_attr(void **state) {
    struct nl_msg *m = reply(RDMA_NLDEV_CMD_SYS_GET);
    RdmaNetnsMode got;

    (void)state;
    assert_int_equal(nla_put(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0, NULL), 0);
    assert_int_equal(rdma_parse_sys(nlmsg_hdr(m), &got), -EBADMSG);
    nlmsg_free(m);
}

/* A device as nldev's fill_dev_info() lays it out (index, name, its port
 * count in PORT_INDEX, a node GUID, ...). */
static struct nl_msg *dev_msg(uint32_t index, const void *name, int name_len) {
    struct nl_msg *m = reply(RDMA_NLDEV_CMD_GET);

    assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index), 0);
    if (name)
        assert_int_equal(nla_put(m, RDMA_NLDEV_ATTR_DEV_NAME, name_len, name), 0);
    assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1), 0);
    assert_int_equal(nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, 0x0200c0fffe000001ull), 0);
    assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce"), 0);
    assert_int_equal(nla_put_u32(m, ATTR_FROM_THE_FUTURE, 7), 0);
    return m;
}

static int dev_parse(uint32_t index, const void *name, int name_len, RdmaDevice *d) {
    struct nl_msg *m = dev_msg(index, name, name_len);
    int r = rdma_parse_dev(nlmsg_hdr(m), d);

    nlmsg_free(m);
    return r;
}

static void test_dev_reply(void **state) {
    char long_name[RDMA_DEV_NAME_MAX + 1];
    RdmaDevice d;

    (void)state;
    assert_int_equal(dev_parse(4, "rxe0", 5, &d), 0);
    assert_int_equal(d.index, 4);
    assert_string_equal(d.name, "rxe0");
    assert_int_equal(d.n_ports, 1);
    assert_true(d.node_guid == 0x0200c0fffe000001ull);
    /* the longest name: 63 bytes and its NUL */
    memset(long_name, 'm', sizeof(long_name));
    long_name[RDMA_DEV_NAME_MAX - 1] = 0;
    assert_int_equal(dev_parse(5, long_name, RDMA_DEV_NAME_MAX, &d), 0);
    assert_int_equal(strlen(d.name), RDMA_DEV_NAME_MAX - 1);
    /* refused: no name, an empty one, one without its NUL, one too long */
    assert_int_equal(dev_parse(4, NULL, 0, &d), -EBADMSG);
    assert_int_equal(dev_parse(4, "", 1, &d), -EBADMSG);
    assert_int_equal(dev_parse(4, "rxe0", 4, &d), -EBADMSG);
    long_name[RDMA_DEV_NAME_MAX - 1] = 'm';
    long_name[RDMA_DEV_NAME_MAX] = 0;
    assert_int_equal(dev_parse(4, long_name, RDMA_DEV_NAME_MAX + 1, &d), -EBADMSG);
}

/* The node GUID: a u64 when said, 0 when not; one of another size is
 * refused. */
static int guid_parse(bool put, bool u32, RdmaDevice *d) {
    struct nl_msg *m = reply(RDMA_NLDEV_CMD_GET);
    int r;

    assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 4), 0);
    assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"), 0);
    if (put && u32)
        assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_NODE_GUID, 1), 0);
    else if (put)
        assert_int_equal(nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, 0xb8cef6030012ab34ULL), 0);
    r = rdma_parse_dev(nlmsg_hdr(m), d);
    nlmsg_free(m);
    return r;
}

static void test_dev_reply_guid(void **state) {
    RdmaDevice d;

    (void)state;
    assert_int_equal(guid_parse(true, false, &d), 0);
    assert_true(d.node_guid == 0xb8cef6030012ab34ULL);
    assert_int_equal(guid_parse(false, false, &d), 0);
    assert_true(d.node_guid == 0);
    assert_int_equal(guid_parse(true, true, &d), -EBADMSG);
}

static void test_dev_reply_malformed(void **state) {
    struct nl_msg *m = reply(RDMA_NLDEV_CMD_GET);
    RdmaDevice d;

    (void)state;
    /* an index of two bytes */
    assert_int_equal(nla_put_u16(m, RDMA_NLDEV_ATTR_DEV_INDEX, 4), 0);
    assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"), 0);
    assert_int_equal(rdma_parse_dev(nlmsg_hdr(m), &d), -EBADMSG);
    nlmsg_free(m);
    /* no index */
    m = reply(RDMA_NLDEV_CMD_GET);
    assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"), 0);
    assert_int_equal(rdma_parse_dev(nlmsg_hdr(m), &d), -EBADMSG);
    nlmsg_free(m);
    /* an attribute whose length runs past the message */
    m = dev_msg(4, "rxe0", 5);
    struct nlmsghdr *h = nlmsg_hdr(m);
    struct nlattr *a = nlmsg_attrdata(h, 0);
    a->nla_len = (uint16_t)(h->nlmsg_len + 64);
    assert_int_equal(rdma_parse_dev(h, &d), -EBADMSG);
    nlmsg_free(m);
    assert_int_equal(rdma_parse_dev(NULL, &d), -EBADMSG);
}

/* fill_port_info(): the device's handle, the port, and the netdev only when
 * it is in the asker's namespace. The kernel answers a PORT_GET with the
 * type of a GET. */
static int port_parse(unsigned cmd, bool ndev_index, const char *ndev_name, uint32_t ifindex,
                      RdmaPort *p) {
    struct nl_msg *m = reply(cmd);
    int r;

    assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 4), 0);
    assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"), 0);
    assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1), 0);
    assert_int_equal(nla_put_u8(m, RDMA_NLDEV_ATTR_PORT_STATE, 4), 0);
    if (ndev_index)
        assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_NDEV_INDEX, ifindex), 0);
    if (ndev_name)
        assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_NDEV_NAME, ndev_name), 0);
    r = rdma_parse_port(nlmsg_hdr(m), p);
    nlmsg_free(m);
    return r;
}

static void test_port_reply(void **state) {
    RdmaPort p;

    (void)state;
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, true, "rail0", 12, &p), 0);
    assert_int_equal(p.dev_index, 4);
    assert_int_equal(p.port, 1);
    assert_int_equal(p.ndev_index, 12);
    assert_string_equal(p.ndev_name, "rail0");
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_PORT_GET, true, "rail0", 12, &p), 0);
    /* the netdev in another namespace: neither attribute */
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, false, NULL, 0, &p), 0);
    assert_int_equal(p.ndev_index, 0);
    assert_string_equal(p.ndev_name, "");
    /* refused: one without the other, ifindex 0, a name past IFNAMSIZ, a SYS_GET's type */
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, true, NULL, 12, &p), -EBADMSG);
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, false, "rail0", 0, &p), -EBADMSG);
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, true, "rail0", 0, &p), -EBADMSG);
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_GET, true, "a-name-of-16-chr", 12, &p), -EBADMSG);
    assert_int_equal(port_parse(RDMA_NLDEV_CMD_SYS_GET, true, "rail0", 12, &p), -EBADMSG);
}

/* A route connection is no RDMA connection: refused before anything is sent. */
static void test_wrong_connection(void **state) {
    Netlink *route = NULL;
    RdmaNetnsMode m;
    RdmaDevice *v = NULL;
    size_t n = 0;

    (void)state;
    assert_int_equal(rdma_netns_mode_get(NULL, &m), -EPROTOTYPE);
    assert_int_equal(netlink_open(-1, &route), 0);
    assert_int_equal(rdma_netns_mode_get(route, &m), -EPROTOTYPE);
    assert_int_equal(rdma_netns_mode_set(route, RDMA_NETNS_SHARED), -EPROTOTYPE);
    assert_int_equal(rdma_dev_list(route, &v, &n), -EPROTOTYPE);
    assert_null(v);
    assert_int_equal(rdma_dev_move(route, 1, 0), -EPROTOTYPE);
    netlink_close(route);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_types),           cmocka_unit_test(test_sys_set_built),
        cmocka_unit_test(test_port_get_and_move_built), cmocka_unit_test(test_sys_reply),
        cmocka_unit_test(test_sys_reply_short_attr),    cmocka_unit_test(test_dev_reply),
        cmocka_unit_test(test_dev_reply_malformed),     cmocka_unit_test(test_port_reply),
        cmocka_unit_test(test_wrong_connection),        cmocka_unit_test(test_rename_built),
        cmocka_unit_test(test_dev_reply_guid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
