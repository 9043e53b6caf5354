/* SPDX-License-Identifier: Apache-2.0 */
/* Link lookups, health and the link monitor against real links in a private netns, of the
 * kind the harness names (testns.h: veth, dummy, macvlan). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <cmocka.h>

#include "netlink.h"
#include "netlink-private.h"
#include "netns.h"
#include "proc.h"
#include "testns.h"

#define WAIT_MS 10000
#define MAX_EVENTS 4096

/* iproute2 as an independent witness for what our own code reads back. */
_printf_(1, 2) static void ip(const char *fmt, ...) {
    char args[256], cmd[320];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "ip %s >/dev/null 2>&1", args);
    st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("'%s' failed", cmd);
}

/* Link a of the rail kind, up with carrier; b: what it needs beside it
 * (a veth's peer, a macvlan's lower link). */
static void link_up(const char *a, const char *b) {
    assert_int_equal(testns_kind_link_add(a, b), 0);
    assert_int_equal(testns_link_set_up(a, true), 0);
}

static bool kind_is(RailKind k) {
    return testns_rail_kind_used() == k;
}

static Netlink *nl; /* in the private namespace */

typedef struct Want {
    const char *name;
    bool healthy;
} Want;

static bool link_health_is(void *arg) {
    const Want *w = arg;
    Link l;

    return link_get_by_name(nl, w->name, &l) == 0 && link_healthy(&l) == w->healthy;
}

static void wait_health(const char *name, bool healthy) {
    Want w = {name, healthy};

    if (!testns_wait_until(link_health_is, &w, WAIT_MS))
        fail_msg("%s never became %s", name, healthy ? "healthy" : "unhealthy");
}

static Link get(const char *name) {
    Link l;

    assert_int_equal(link_get_by_name(nl, name, &l), 0);
    return l;
}

static int group_setup(void **state) {
    testns_require_root();
    (void)testns_rail_kind(); /* 77 when this kernel lacks it */
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(netlink_open(-1, &nl), 0);
    return 0;
}

static int group_teardown(void **state) {
    netlink_close(TAKE_PTR(nl));
    return 0;
}

static void test_loopback(void **state) {
    Link l = get("lo");

    assert_int_equal(l.ifindex, 1);
    assert_string_equal(l.name, "lo");
    assert_true(l.flags & IFF_UP);
    assert_true(l.flags & IFF_LOOPBACK);
    /* lo never reports carrier: operstate UNKNOWN, and that is healthy */
    assert_int_equal(l.operstate, IF_OPER_UNKNOWN);
    assert_true(link_healthy(&l));
}

static void test_get_fields(void **state) {
    static const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    Link a, b;

    link_up("nlt-a", "nlt-b");
    ip("link set dev nlt-a address 02:11:22:33:44:55 mtu 9000 alias railgate:u0:nlt-a");
    a = get("nlt-a");
    assert_true(a.ifindex > 1);
    assert_string_equal(a.name, "nlt-a");
    assert_string_equal(a.alias, "railgate:u0:nlt-a");
    assert_int_equal(a.mtu, 9000);
    assert_true(a.has_mac);
    assert_memory_equal(a.mac, mac, 6);
    assert_true(a.flags & IFF_UP);
    assert_int_equal(link_get(nl, a.ifindex, &b), 0);
    assert_int_equal(b.ifindex, a.ifindex);
    assert_string_equal(b.name, "nlt-a");
    assert_string_equal(b.alias, a.alias);
    wait_health("nlt-a", true);
    if (!kind_is(RAIL_KIND_DUMMY))
        assert_string_equal(get("nlt-b").alias, "");
    assert_int_equal(testns_kind_link_del("nlt-a", "nlt-b"), 0);
    assert_int_equal(link_get_by_name(nl, "nlt-a", &b), -ENODEV);
    assert_int_equal(link_get_by_name(nl, "nlt-b", &b), -ENODEV);
}

static void test_missing_and_invalid(void **state) {
    Link l, sentinel;

    memset(&l, 0xa5, sizeof(l));
    sentinel = l;
    assert_int_equal(link_get_by_name(nl, "nlt-none", &l), -ENODEV);
    assert_int_equal(link_get(nl, 999999, &l), -ENODEV);
    assert_int_equal(link_get_by_name(nl, NULL, &l), -EINVAL);
    assert_int_equal(link_get_by_name(nl, "", &l), -EINVAL);
    assert_int_equal(link_get_by_name(nl, "this-name-is-too-long", &l), -EINVAL);
    assert_int_equal(link_get_by_name(nl, "lo", NULL), -EINVAL);
    assert_int_equal(link_get(nl, 0, &l), -ENODEV);
    assert_int_equal(link_get(nl, -3, &l), -ENODEV);
    assert_memory_equal(&l, &sentinel, sizeof(l));
    assert_int_equal(testns_link_del("nlt-none"), -ENODEV);
    assert_int_equal(testns_link_set_up("nlt-none", true), -ENODEV);
}

/* Connections opened and closed, here and in another namespace, and
 * lookups on one kept open, leave no fd behind; refused lookups leave
 * nothing unread on the socket for the next request to trip over. */
static void test_no_fd_leak(void **state) {
    _cleanup_close_ int self = -EBADF;
    int before;
    Link l;

    assert_int_equal(netns_open_current(&self), 0);
    before = proc_fd_count(getpid());
    for (int i = 0; i < 200; i++) {
        Netlink *c = NULL;
        assert_int_equal(netlink_open(i % 2 ? self : -1, &c), 0);
        assert_int_equal(link_get_by_name(c, "lo", &l), 0);
        assert_int_equal(link_get_by_name(c, "nlt-none", &l), -ENODEV);
        assert_int_equal(link_get_by_name(c, "lo", &l), 0);
        assert_string_equal(l.name, "lo");
        netlink_close(c);
        assert_int_equal(link_get_by_name(nl, "lo", &l), 0);
        assert_int_equal(link_get_by_name(nl, "nlt-none", &l), -ENODEV);
    }
    assert_int_equal(proc_fd_count(getpid()), before);
}

static void test_health_transitions(void **state) {
    Link l;

    link_up("nlt-c", "nlt-d");
    wait_health("nlt-c", true);
    /* the far end gone: nlt-c stays administratively up but has no carrier
     * (a dummy's own carrier off reads as down, a stacked link's as its
     * lower layer down) */
    assert_int_equal(testns_kind_carrier("nlt-c", "nlt-d", false), 0);
    wait_health("nlt-c", false);
    l = get("nlt-c");
    assert_true(l.flags & IFF_UP);
    assert_false(l.flags & IFF_RUNNING);
    assert_int_equal(l.operstate, kind_is(RAIL_KIND_DUMMY) ? IF_OPER_DOWN : IF_OPER_LOWERLAYERDOWN);
    assert_int_equal(testns_kind_carrier("nlt-c", "nlt-d", true), 0);
    wait_health("nlt-c", true);
    /* self down */
    assert_int_equal(testns_link_set_up("nlt-c", false), 0);
    wait_health("nlt-c", false);
    assert_false(get("nlt-c").flags & IFF_UP);
    assert_int_equal(testns_link_set_up("nlt-c", true), 0);
    wait_health("nlt-c", true);
    assert_int_equal(testns_kind_link_del("nlt-c", "nlt-d"), 0);
}

static void test_health_rules(void **state) {
    Link l = {.flags = IFF_UP | IFF_RUNNING, .operstate = IF_OPER_UP};

    assert_true(link_healthy(&l));
    l = (Link){.flags = IFF_UP, .operstate = IF_OPER_UP};
    assert_true(link_healthy(&l));
    l = (Link){.flags = IFF_UP, .operstate = IF_OPER_LOWERLAYERDOWN};
    assert_false(link_healthy(&l));
    l = (Link){.flags = IFF_UP, .operstate = IF_OPER_DOWN};
    assert_false(link_healthy(&l));
    l = (Link){.flags = IFF_UP, .operstate = IF_OPER_DORMANT};
    assert_false(link_healthy(&l));
    l = (Link){.flags = IFF_RUNNING, .operstate = IF_OPER_UP};
    assert_false(link_healthy(&l));
    assert_false(link_healthy(NULL));
}

typedef struct Events {
    LinkMonitor *m;
    LinkEvent ev[MAX_EVENTS];
    size_t n;
    int last; /* last dispatch result */
    bool overrun;
} Events;

static void collect(void *userdata, const LinkEvent *ev) {
    Events *e = userdata;

    if (e->n < MAX_EVENTS)
        e->ev[e->n++] = *ev;
}

static void pump(Events *e) {
    struct pollfd p = {.fd = link_monitor_fd(e->m), .events = POLLIN};

    while (poll(&p, 1, 0) == 1) {
        e->last = link_monitor_dispatch(e->m, collect, e);
        if (e->last == -ENOBUFS)
            e->overrun = true;
        else if (e->last < 0)
            fail_msg("dispatch: %s", strerror(-e->last));
    }
}

typedef struct Expect {
    Events *e;
    LinkEventType type;
    const char *name;
    unsigned mask, flags; /* (ev.flags & mask) == flags */
} Expect;

static bool event_seen(void *arg) {
    Expect *x = arg;

    pump(x->e);
    for (size_t i = 0; i < x->e->n; i++) {
        const LinkEvent *ev = &x->e->ev[i];

        if (ev->type == x->type && streq(ev->link.name, x->name) &&
            (ev->link.flags & x->mask) == x->flags)
            return true;
    }
    return false;
}

static void expect_event(Events *e, LinkEventType type, const char *name, unsigned mask,
                         unsigned flags) {
    Expect x = {e, type, name, mask, flags};

    if (!testns_wait_until(event_seen, &x, WAIT_MS))
        fail_msg("no %s event for %s", type == LINK_EVENT_DEL ? "DEL" : "NEW", name);
    e->n = 0;
}

static Events *events_new(void) {
    Events *e = calloc(1, sizeof(*e));

    assert_non_null(e);
    assert_int_equal(link_monitor_new(&e->m), 0);
    return e;
}

static void events_free(Events *e) {
    link_monitor_free(e->m);
    free(e);
}

static void test_monitor_events(void **state) {
    Events *e = events_new();
    int fd = link_monitor_fd(e->m), size = 0;
    socklen_t len = sizeof(size);

    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    /* root may lift the buffer above net.core.rmem_max: room for bursts */
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &len), 0);
    assert_true(size >= 1 << 20);
    assert_int_equal(link_monitor_dispatch(e->m, collect, e), 0); /* nothing yet */
    assert_int_equal(link_monitor_dispatch(e->m, NULL, e), -EINVAL);

    link_up("nlt-e", "nlt-f");
    expect_event(e, LINK_EVENT_NEW, "nlt-e", IFF_UP, IFF_UP);
    assert_int_equal(testns_link_set_up("nlt-e", false), 0);
    expect_event(e, LINK_EVENT_NEW, "nlt-e", IFF_UP, 0);
    assert_int_equal(testns_link_del("nlt-e"), 0);
    expect_event(e, LINK_EVENT_DEL, "nlt-e", 0, 0);
    pump(e);
    /* a veth takes its peer with it; a macvlan's lower link stays */
    if (!kind_is(RAIL_KIND_DUMMY))
        assert_int_equal(link_get_by_name(nl, "nlt-f", &(Link){0}),
                         kind_is(RAIL_KIND_VETH) ? -ENODEV : 0);
    if (kind_is(RAIL_KIND_MACVLAN))
        assert_int_equal(testns_link_del("nlt-f"), 0);
    assert_false(e->overrun);
    events_free(e);
    link_monitor_free(NULL);
}

/* With a tiny receive buffer the kernel drops events: dispatch says so
 * with -ENOBUFS once, and the monitor keeps working after the resync. */
static void test_monitor_overrun(void **state) {
    Events *e = events_new();
    int fd = link_monitor_fd(e->m), tiny = 1, normal = 1 << 20;

    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
    link_up("nlt-g", "nlt-h");
    for (int i = 0; i < 100; i++)
        assert_int_equal(testns_link_set_up("nlt-g", i % 2), 0);
    pump(e);
    assert_true(e->overrun);
    /* linkwatch reports carrier changes a little later: give those room */
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &normal, sizeof(normal)), 0);
    pump(e);
    /* the resync: state read back directly, then events flow again */
    assert_true(get("nlt-g").flags & IFF_UP);
    e->n = 0;
    e->overrun = false;
    assert_int_equal(testns_link_set_up("nlt-g", false), 0);
    expect_event(e, LINK_EVENT_NEW, "nlt-g", IFF_UP, 0);
    assert_int_equal(testns_link_set_up("nlt-g", true), 0);
    expect_event(e, LINK_EVENT_NEW, "nlt-g", IFF_UP, IFF_UP);
    assert_int_equal(testns_kind_link_del("nlt-g", "nlt-h"), 0);
    expect_event(e, LINK_EVENT_DEL, "nlt-g", 0, 0);
    assert_false(e->overrun);
    events_free(e);
}

/* netns_run()'s fn: 1 when the thread runs in the namespace at *arg. */
static int in_ns_of(void *arg) {
    return netns_is_current(*(int *)arg);
}

/* 1 if name is healthy in the namespace at fd, 0 if not, -errno. */
static int lookup_in_ns(int fd, const char *name) {
    _cleanup_(netlink_closep) Netlink *there = NULL;
    Link l;
    int r = netlink_open(fd, &there);

    r = r ?: link_get_by_name(there, name, &l);
    if (r < 0)
        return r;
    return link_healthy(&l) ? 1 : 0;
}

static void test_named_netns(void **state) {
    char path[128], want[64];
    int fd = -EBADF;

    assert_int_equal(testns_named_new("nlt", path, sizeof(path)), 0);
    snprintf(want, sizeof(want), "/run/netns/rgtest-nlt-%d-", (int)getpid());
    assert_memory_equal(path, want, strlen(want));
    assert_int_equal(netns_open(path, &fd), 0);
    /* its own namespace: lo up there, none of ours */
    assert_int_equal(lookup_in_ns(fd, "lo"), 1);
    assert_int_equal(lookup_in_ns(fd, "nlt-none"), -ENODEV);
    /* the calling thread made the socket there and is back home */
    assert_int_equal(netns_is_current(fd), 0);
    assert_int_equal(netns_run(fd, in_ns_of, &fd), 1);
    assert_int_equal(netns_is_current(fd), 0);
    /* not a network namespace: refused, the thread never left */
    _cleanup_close_ int not_ns = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    assert_true(not_ns >= 0);
    assert_int_equal(netns_run(not_ns, in_ns_of, &fd), -EINVAL);
    assert_int_equal(netns_is_current(fd), 0);
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(testns_named_remove(path), -ENOENT);
    assert_int_equal(testns_named_new("bad-tag", path, sizeof(path)), -EINVAL);
    assert_int_equal(testns_named_new("", path, sizeof(path)), -EINVAL);
    assert_int_equal(testns_named_new("nlt", path, 8), -ENAMETOOLONG);
}

/* A link moved out is a DEL here; removing the namespace destroys it (the
 * kernel deletes a virtual link with its namespace), and a veth's peer goes
 * with it; a macvlan's lower link, here, stays. */
static void test_move_to_named_netns(void **state) {
    Events *e = events_new();
    char path[128];
    int fd = -EBADF;

    link_up("nlt-i", "nlt-j");
    assert_int_equal(testns_named_new("nlt", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    pump(e);
    e->n = 0;
    assert_int_equal(testns_link_set_netns("nlt-i", fd), 0);
    expect_event(e, LINK_EVENT_DEL, "nlt-i", 0, 0);
    assert_int_equal(link_get_by_name(nl, "nlt-i", &(Link){0}), -ENODEV);
    assert_true(lookup_in_ns(fd, "nlt-i") >= 0);
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
    if (kind_is(RAIL_KIND_VETH))
        expect_event(e, LINK_EVENT_DEL, "nlt-j", 0, 0);
    if (kind_is(RAIL_KIND_MACVLAN)) {
        assert_int_equal(link_get_by_name(nl, "nlt-j", &(Link){0}), 0);
        assert_int_equal(testns_link_del("nlt-j"), 0);
    }
    events_free(e);
}

/* The ifindex of name in the namespace at fd, or -errno. */
static int ifindex_in_ns(int fd, const char *name) {
    _cleanup_(netlink_closep) Netlink *there = NULL;
    Link l;
    int r = netlink_open(fd, &there);

    r = r ?: link_get_by_name(there, name, &l);
    return r < 0 ? r : l.ifindex;
}

/* Delete name in the namespace at fd. */
static int del_in_ns(int fd, const char *name) {
    _cleanup_(netlink_closep) Netlink *there = NULL;
    int r = netlink_open(fd, &there), ifindex = ifindex_in_ns(fd, name);

    if (r < 0 || ifindex < 0)
        return r < 0 ? r : ifindex;
    return link_delete(there, ifindex);
}

static bool nsid_dead(void *arg) {
    return netlink_nsid_alive(nl, *(int *)arg) == 0;
}

/*
 * An id leads to a live namespace while anything holds it (here an fd,
 * after its name went); once its last holder let go the kernel tears it
 * down and no longer resolves the id. A monitor that listens to every
 * namespace with an id hears a link go there; the host's alone does not.
 * (A veth on every kernel: what the CNI's wait for a dying pod sees.)
 */
static void test_nsid_alive(void **state) {
    Events *all = events_new(), *here = events_new();
    char path[128];
    int fd, nsid = -1;

    assert_int_equal(link_monitor_listen_all_nsid(all->m), 0);
    assert_int_equal(link_monitor_listen_all_nsid(NULL), -EINVAL);
    assert_int_equal(veth_add(nl, "nlt-n", "nlt-o"), 0);
    assert_int_equal(veth_add(nl, "nlt-p", "nlt-q"), 0);
    assert_int_equal(testns_named_new("nlt", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(testns_link_set_netns("nlt-o", fd), 0);
    assert_int_equal(testns_link_set_netns("nlt-p", fd), 0);
    assert_int_equal(testns_link_set_netns("nlt-q", fd), 0);
    assert_int_equal(netlink_nsid(nl, fd, &nsid), 0);
    assert_true(nsid >= 0);
    assert_int_equal(netlink_nsid_alive(nl, nsid), 1);
    assert_int_equal(netlink_nsid_alive(nl, nsid + 1000), 0);
    assert_int_equal(netlink_nsid_alive(nl, -1), 0);
    pump(all);
    pump(here);
    all->n = here->n = 0;
    assert_int_equal(del_in_ns(fd, "nlt-p"), 0);
    expect_event(all, LINK_EVENT_DEL, "nlt-p", 0, 0);
    pump(here);
    for (size_t i = 0; i < here->n; i++)
        assert_false(streq(here->ev[i].link.name, "nlt-p"));
    /* unmounted and held: alive; let go: torn down, its veth with it */
    assert_int_equal(testns_named_remove(path), 0);
    assert_int_equal(netlink_nsid_alive(nl, nsid), 1);
    close(fd);
    assert_true(testns_wait_until(nsid_dead, &nsid, WAIT_MS));
    expect_event(here, LINK_EVENT_DEL, "nlt-n", 0, 0);
    assert_int_equal(link_get_by_name(nl, "nlt-n", &(Link){0}), -ENODEV);
    events_free(all);
    events_free(here);
}

static bool nsid_listed(int nsid) {
    _cleanup_free_ int *ids = NULL;
    size_t n = 0;
    bool found = false;

    assert_int_equal(netlink_nsid_list(nl, &ids, &n), 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(ids[i] >= 0);
        found |= ids[i] == nsid;
    }
    return found;
}

static bool nsid_gone(void *arg) {
    return !nsid_listed(*(int *)arg);
}

/* The link named name in v[0..n), or NULL. */
static const Link *find_named(const Link *v, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (streq(v[i].name, name))
            return &v[i];
    return NULL;
}

/*
 * Another namespace read from this one by its id, nothing opened there:
 * the id a veth's move gave it is listed (RTM_GETNSID dump) while it lives
 * and not once it is gone; a dump there (IFLA_TARGET_NETNSID) has its links
 * as that namespace has them (its own lo, the veth at its ifindex there,
 * its peer named by the id this namespace has for the peer's, ours), none
 * of ours; a parent filter no link there has keeps none; an id that leads
 * nowhere is the kernel's EINVAL. iproute2 is the witness of the ids.
 */
static void test_nsid_list_and_dump_in(void **state) {
    _cleanup_free_ Link *v = NULL;
    char path[128], cmd[256];
    int fd = -EBADF, nsid = -1, st;
    size_t n = 0;
    Link peer;

    assert_int_equal(veth_add(nl, "nlt-s", "nlt-t"), 0);
    assert_int_equal(testns_link_set_up("nlt-t", true), 0);
    assert_int_equal(testns_named_new("nlt", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(netlink_nsid(nl, fd, &nsid), 0);
    assert_int_equal(nsid, -1); /* no id until something names it */
    assert_int_equal(testns_link_set_netns("nlt-s", fd), 0);
    assert_int_equal(netlink_nsid(nl, fd, &nsid), 0);
    assert_true(nsid >= 0);
    assert_true(nsid_listed(nsid));
    snprintf(cmd, sizeof(cmd), "ip netns list-id | grep -q '^nsid %d '", nsid);
    st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    peer = get("nlt-t");
    assert_int_equal(peer.link_netnsid, nsid);
    assert_int_equal(link_dump_in(nl, nsid, NULL, &v, &n), 0);
    const Link *s = find_named(v, n, "nlt-s"), *lo = find_named(v, n, "lo");
    assert_non_null(s);
    assert_non_null(lo);
    assert_int_equal(lo->ifindex, 1);
    assert_null(find_named(v, n, "nlt-t"));
    assert_string_equal(s->kind, "veth");
    assert_int_equal(s->ifindex, peer.link);
    assert_int_equal(s->link, peer.ifindex);
    assert_int_equal(ifindex_in_ns(fd, "nlt-s"), s->ifindex);
    free(TAKE_PTR(v));
    assert_int_equal(link_dump_in(nl, nsid, "pci/0000:ff:1f.7", &v, &n), 0);
    assert_int_equal(n, 0);
    free(TAKE_PTR(v));
    /* the one by ifindex agrees */
    Link one;
    assert_int_equal(link_get_in(nl, peer.link, nsid, &one), 0);
    assert_string_equal(one.name, "nlt-s");
    /* here, as link_dump has it */
    assert_int_equal(link_dump_in(nl, LINK_NETNSID_SELF, NULL, &v, &n), 0);
    assert_non_null(find_named(v, n, "nlt-t"));
    assert_null(find_named(v, n, "nlt-s"));
    free(TAKE_PTR(v));
    assert_int_equal(link_dump_in(nl, nsid + 1000, NULL, &v, &n), -EINVAL);
    assert_int_equal(link_dump_in(nl, LINK_NETNSID_UNASSIGNED, NULL, &v, &n), -EINVAL);
    assert_int_equal(link_dump_in(nl, nsid, "", &v, &n), -EINVAL);

    /* gone: its id is dropped, its veth and the peer here with it */
    assert_int_equal(testns_named_remove(path), 0);
    close(fd);
    if (!testns_wait_until(nsid_gone, &nsid, WAIT_MS))
        fail_msg("id %d still listed after its namespace went", nsid);
    assert_int_equal(link_dump_in(nl, nsid, NULL, &v, &n), -EINVAL);
    assert_int_equal(netlink_nsid_list(nl, NULL, &n), -EINVAL);
}

/* Does `ip -d link show dev <dev>` (iproute2, a witness of its own) print needle? */
static bool ip_details_have(const char *dev, const char *needle) {
    char cmd[256];
    int st;

    snprintf(cmd, sizeof(cmd), "ip -d link show dev %s 2>/dev/null | grep -qF '%s'", dev, needle);
    st = system(cmd);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * A VLAN on a link of the rail kind, made as the CNI makes a rail's anchor
 * (802.1ad 4094, loose binding), and what the anchor relies on: iproute2
 * and our reader agree on its id, protocol, flags and lower; the same id
 * and protocol twice on one lower is EEXIST; the lower going up leaves it
 * down; moved into another namespace, the lower takes none of its VLANs
 * along and the VLAN names it there (IFLA_LINK, IFLA_LINK_NETNSID), at the
 * ifindex it has there; deleted there, it takes its VLAN with it. A kernel
 * without 8021q refuses the kind with its own words (the development
 * machines' kernel): that is checked instead.
 */
static void test_vlan_upper(void **state) {
    char path[128];
    int fd = -EBADF, nsid = -1, r;
    Link lower, v, w;

    link_up("nlt-v", "nlt-vp");
    lower = get("nlt-v");
    r = vlan_add(nl, "nlt-v.a", lower.ifindex, ETH_P_8021AD, 4094, VLAN_FLAG_LOOSE_BINDING);
    if (r == -EOPNOTSUPP) {
        char msg[256] = "";
        assert_true(netlink_kernel_message(nl, r, msg, sizeof(msg)));
        assert_non_null(strstr(msg, "Unknown device type"));
        printf("vlan: this kernel has no 8021q driver (kernel: %s): checked that it says so\n",
               msg);
        assert_int_equal(testns_kind_link_del("nlt-v", "nlt-vp"), 0);
        return;
    }
    assert_int_equal(r, 0);
    v = get("nlt-v.a");
    assert_string_equal(v.kind, "vlan");
    assert_int_equal(v.vlan_id, 4094);
    assert_int_equal(v.vlan_proto, ETH_P_8021AD);
    assert_true(v.vlan_flags & VLAN_FLAG_LOOSE_BINDING);
    assert_int_equal(v.link, lower.ifindex);
    assert_int_equal(v.link_netnsid, -1);
    assert_false(v.flags & IFF_UP);
    assert_true(
        ip_details_have("nlt-v.a", "vlan protocol 802.1ad id 4094 <REORDER_HDR,LOOSE_BINDING>"));
    /* the id is the lower's to give once per protocol */
    assert_int_equal(vlan_add(nl, "nlt-v.b", lower.ifindex, ETH_P_8021AD, 4094, 0), -EEXIST);
    assert_int_equal(vlan_add(nl, "nlt-v.b", lower.ifindex, ETH_P_8021Q, 0, 0), -EINVAL);
    assert_int_equal(vlan_add(nl, "nlt-v.b", lower.ifindex, 0x0800, 5, 0), -EINVAL);
    /* loose binding: the lower's admin state is not the VLAN's */
    assert_int_equal(testns_link_set_up("nlt-v", false), 0);
    assert_int_equal(testns_link_set_up("nlt-v", true), 0);
    assert_false(get("nlt-v.a").flags & IFF_UP);
    /* the lower moves, its VLAN stays and names it where it went */
    assert_int_equal(testns_named_new("nlt", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(testns_link_set_netns("nlt-v", fd), 0);
    w = get("nlt-v.a");
    assert_int_equal(w.ifindex, v.ifindex);
    assert_int_equal(netlink_nsid(nl, fd, &nsid), 0);
    assert_true(nsid >= 0);
    assert_int_equal(w.link_netnsid, nsid);
    assert_int_equal(w.link, ifindex_in_ns(fd, "nlt-v"));
    assert_false(w.flags & IFF_UP);
    /* deleted where it is, the lower takes its VLAN along */
    assert_int_equal(del_in_ns(fd, "nlt-v"), 0);
    assert_int_equal(link_get_by_name(nl, "nlt-v.a", &w), -ENODEV);
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
    if (kind_is(RAIL_KIND_MACVLAN))
        assert_int_equal(testns_link_del("nlt-vp"), 0);
}

static void test_addr_add(void **state) {
    char cmd[128];

    link_up("nlt-k", "nlt-l");
    assert_int_equal(testns_addr_add("nlt-k", "10.99.0.1/24"), 0);
    assert_int_equal(testns_addr_add("nlt-k", "fd00:99::1/64"), 0);
    assert_int_equal(testns_addr_add("nlt-k", "10.99.0.1/24"), -EEXIST);
    assert_int_equal(testns_addr_add("nlt-k", "not-an-address"), -EINVAL);
    assert_int_equal(testns_addr_add("nlt-none", "10.99.1.1/24"), -ENODEV);
    snprintf(cmd, sizeof(cmd), "ip -o addr show dev nlt-k | grep -q 'inet 10.99.0.1/24'");
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "ip -o addr show dev nlt-k | grep -q 'inet6 fd00:99::1/64'");
    assert_int_equal(system(cmd), 0);
    assert_int_equal(testns_kind_link_del("nlt-k", "nlt-l"), 0);
}

#define BATCH_N 8

/* 8 veth pairs nlb<i> / nlbp<i> in the private namespace, their ifindexes in ifx. */
static void batch_links(int ifx[BATCH_N]) {
    for (int i = 0; i < BATCH_N; i++) {
        char a[IF_NAMESIZE], b[IF_NAMESIZE];
        Link l;

        snprintf(a, sizeof(a), "nlb%d", i);
        snprintf(b, sizeof(b), "nlbp%d", i);
        assert_int_equal(veth_add(nl, a, b), 0);
        assert_int_equal(link_get_by_name(nl, a, &l), 0);
        ifx[i] = l.ifindex;
    }
}

/*
 * One batch of 8 moves into another namespace, renamed there, where the
 * 5th name is taken: the kernel goes on after the refusal, so the other 7
 * are moved and renamed, the 5th holds the kernel's errno (moved, under its
 * own name: the move comes before the rename), and no other entry has an
 * error. Then 8 MTU changes where the 5th is past the
 * device's maximum: the kernel's words are on that entry alone.
 */
static void test_batch_partial(void **state) {
    _cleanup_(netlink_closep) Netlink *there = NULL;
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    int ifx[BATCH_N], fd = -EBADF, mtu_ifx[BATCH_N];
    char path[128];
    Link l;

    batch_links(ifx);
    assert_int_equal(testns_named_new("nlb", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(netlink_open(fd, &there), 0);
    assert_int_equal(veth_add(there, "nlbm4", "nlbx4"), 0); /* the 5th's name, taken */
    assert_int_equal(netlink_batch_new(nl, &b), 0);
    for (int i = 0; i < BATCH_N; i++) {
        LinkChange c = LINK_CHANGE_INIT;
        char name[IF_NAMESIZE];

        snprintf(name, sizeof(name), "nlbm%d", i);
        c.netns_fd = fd;
        c.name = name;
        c.state = LINK_SET_UP;
        assert_int_equal(link_change_batch(b, ifx[i], &c, "moving", &ifx[i]), i);
    }
    assert_int_equal(netlink_batch_commit(b), 0);
    for (int i = 0; i < BATCH_N; i++) {
        const NetlinkBatchEntry *e = netlink_batch_entry(b, (size_t)i);
        char name[IF_NAMESIZE], here[IF_NAMESIZE];

        snprintf(name, sizeof(name), "nlbm%d", i);
        snprintf(here, sizeof(here), "nlb%d", i);
        assert_ptr_equal(e->tag, &ifx[i]);
        assert_string_equal(e->what, "moving");
        if (i == 4) {
            /* the kernel moves first, then refuses the name: there under its own */
            assert_int_equal(e->err, -EEXIST);
            assert_int_equal(link_get_by_name(nl, here, &l), -ENODEV);
            assert_int_equal(link_get_by_name(there, here, &l), 0);
            continue;
        }
        assert_int_equal(e->err, 0);
        assert_int_equal(link_get_by_name(nl, here, &l), -ENODEV);
        assert_int_equal(link_get_by_name(there, name, &l), 0);
        assert_true(l.flags & IFF_UP);
    }
    assert_ptr_equal(netlink_batch_first_error(b), netlink_batch_entry(b, 4));
    netlink_batch_free(TAKE_PTR(b));

    /* the kernel's words on the refused entry alone */
    for (int i = 0; i < BATCH_N; i++) {
        char name[IF_NAMESIZE];

        snprintf(name, sizeof(name), "nlbm%d", i == 4 ? 0 : i);
        assert_int_equal(link_get_by_name(there, i == 4 ? "nlbx4" : name, &l), 0);
        mtu_ifx[i] = l.ifindex;
    }
    assert_int_equal(netlink_batch_new(there, &b), 0);
    for (int i = 0; i < BATCH_N; i++) {
        LinkChange c = LINK_CHANGE_INIT;

        c.mtu = i == 4 ? 70000 : 1400 + (unsigned)i; /* a veth's maximum is 65535 */
        assert_int_equal(link_change_batch(b, mtu_ifx[i], &c, "mtu", NULL), i);
    }
    assert_int_equal(netlink_batch_commit(b), 0);
    for (int i = 0; i < BATCH_N; i++) {
        const NetlinkBatchEntry *e = netlink_batch_entry(b, (size_t)i);

        assert_int_equal(link_get(there, mtu_ifx[i], &l), 0);
        if (i == 4) {
            /* nlbx4: the veth that held the 5th name, refused and untouched */
            assert_int_equal(e->err, -EINVAL);
            assert_true(e->ext_ack[0] != 0);
            assert_int_equal(l.mtu, 1500);
            continue;
        }
        assert_int_equal(e->err, 0);
        assert_string_equal(e->ext_ack, "");
        assert_int_equal(l.mtu, 1400 + (unsigned)i);
    }
    netlink_close(TAKE_PTR(there));
    close(fd);
    assert_int_equal(testns_named_remove(path), 0);
}

/*
 * A batch whose answers overflow the receive queue (shrunk here behind the
 * connection's back) breaks the conversation: the entries not answered hold
 * -ECONNABORTED, and the next request works, on a new socket.
 */
static void test_batch_overflow(void **state) {
    _cleanup_(netlink_closep) Netlink *c = NULL;
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    LinkReply r[64];
    int small = 4096, fd, aborted = 0, answered = 0;
    Link l;

    assert_int_equal(netlink_open(-1, &c), 0);
    fd = netlink_socket_fd(c);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    assert_int_equal(netlink_batch_new(c, &b), 0);
    for (int i = 0; i < 64; i++)
        assert_int_equal(link_get_batch(b, 1, NULL, LINK_NETNSID_SELF, &r[i], "reading", NULL), i);
    assert_int_equal(netlink_batch_commit(b), -ENOBUFS);
    for (size_t i = 0; i < 64; i++) {
        int k = link_reply_result(netlink_batch_entry(b, i), &r[i]);

        aborted += k == -ECONNABORTED;
        answered += k == 0;
        assert_true(k == 0 || k == -ECONNABORTED);
    }
    assert_true(aborted > 0);
    assert_true(answered < 64);
    assert_int_equal(link_get_by_name(c, "lo", &l), 0);
    assert_int_equal(l.ifindex, 1);
    assert_true(netlink_socket_fd(c) >= 0);
}

/*
 * Uppers from one look for many rails: what the look shows stacked is read
 * again before it goes (one deleted since is passed over), and one stacked
 * after the look stays for the sweep after the move; a rail the look does not
 * show is the caller's to look for.
 */
static void test_uppers_seen(void **state) {
    _cleanup_free_ Link *seen = NULL;
    size_t k = 0;
    unsigned n = 9;
    char path[128];
    int fd = -EBADF;
    Link rail, l;

    /* a rail as a pod has it: its veth peer in another namespace (one
     * beside it would be stacked on it: its IFLA_LINK names it) */
    assert_int_equal(veth_add(nl, "nlu0", "nlup0"), 0);
    assert_int_equal(testns_named_new("nlu", path, sizeof(path)), 0);
    assert_int_equal(netns_open(path, &fd), 0);
    assert_int_equal(testns_link_set_netns("nlup0", fd), 0);
    close(fd);
    assert_int_equal(link_get_by_name(nl, "nlu0", &rail), 0);
    assert_int_equal(link_add(nl, "nlum0", "macvlan", rail.ifindex), 0);
    assert_int_equal(link_add(nl, "nlum1", "macvlan", rail.ifindex), 0);
    assert_int_equal(link_dump(nl, NULL, &seen, &k), 0);
    /* made before nlum1 goes, so that it cannot take nlum1's ifindex (a
     * link at an ifindex the look shows stacked is read again, and goes if
     * it is stacked now, whichever link it is) */
    assert_int_equal(link_add(nl, "nlum2", "macvlan", rail.ifindex), 0);
    assert_int_equal(link_get_by_name(nl, "nlum1", &l), 0);
    assert_int_equal(link_delete(nl, l.ifindex), 0);
    assert_int_equal(veth_add(nl, "nlu1", "nlup1"), 0);
    assert_int_equal(link_get_by_name(nl, "nlu1", &l), 0);
    assert_int_equal(link_delete_uppers_seen(nl, l.ifindex, seen, k, NULL, 0, &n), -ENOENT);
    assert_int_equal(link_delete_uppers_seen(nl, rail.ifindex, seen, k, NULL, 0, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(link_get_by_name(nl, "nlum0", &l), -ENODEV);
    assert_int_equal(link_get_by_name(nl, "nlum2", &l), 0);
    assert_int_equal(link_delete(nl, l.ifindex), 0);
    assert_int_equal(testns_named_remove(path), 0); /* nlu0 goes with its peer */
    assert_int_equal(testns_link_del("nlu1"), 0);
}

/* Children: exit() and a fatal signal both remove the child's namespaces. */
static pid_t child_named(int sig, char *path, size_t n) {
    int p[2];
    pid_t pid;
    ssize_t k;

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char mine[128];
        int r = sig ? testns_named_new("nltsig", mine, sizeof(mine))
                    : testns_enter_named("nltexit", mine, sizeof(mine));

        if (r < 0)
            _exit(2);
        if (write(p[1], mine, strlen(mine) + 1) < 0)
            _exit(3);
        if (sig)
            raise(sig);
        exit(0);
    }
    close(p[1]);
    k = read(p[0], path, n - 1);
    close(p[0]);
    assert_true(k > 0);
    path[k] = 0;
    return pid;
}

static void test_named_netns_cleanup(void **state) {
    char path[128];
    int st;
    pid_t pid;

    pid = child_named(0, path, sizeof(path));
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(access(path, F_OK), -1);

    pid = child_named(SIGTERM, path, sizeof(path));
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    assert_int_equal(access(path, F_OK), -1);
}

static bool flag_set(void *arg) {
    return *(volatile bool *)arg;
}

static void test_wait_until(void **state) {
    bool yes = true, no = false;

    assert_true(testns_wait_until(flag_set, &yes, 0));
    assert_false(testns_wait_until(flag_set, &no, 20));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback),
        cmocka_unit_test(test_get_fields),
        cmocka_unit_test(test_missing_and_invalid),
        cmocka_unit_test(test_no_fd_leak),
        cmocka_unit_test(test_health_transitions),
        cmocka_unit_test(test_health_rules),
        cmocka_unit_test(test_monitor_events),
        cmocka_unit_test(test_monitor_overrun),
        cmocka_unit_test(test_named_netns),
        cmocka_unit_test(test_move_to_named_netns),
        cmocka_unit_test(test_vlan_upper),
        cmocka_unit_test(test_nsid_alive),
        cmocka_unit_test(test_nsid_list_and_dump_in),
        cmocka_unit_test(test_addr_add),
        cmocka_unit_test(test_batch_partial),
        cmocka_unit_test(test_batch_overflow),
        cmocka_unit_test(test_uppers_seen),
        cmocka_unit_test(test_named_netns_cleanup),
        cmocka_unit_test(test_wait_until),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
