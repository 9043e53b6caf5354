/* SPDX-License-Identifier: Apache-2.0 */
/* Listen addresses: what parses, and what binding a unix socket does to the path. No root. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "listen.h"

static char tmp[64], sock[128], addr[160];

static int setup(void **state) {
    snprintf(tmp, sizeof(tmp), "/tmp/rg-listen-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    snprintf(sock, sizeof(sock), "%s/run/x/metrics.sock", tmp);
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    return 0;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
    return remove(p);
}

static int teardown(void **state) {
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static void test_parse(void **state) {
    static const char *const good[] = {"127.0.0.1:9402", "0.0.0.0:1",
                                       "[::]:9402",      "[::1]:65535",
                                       "[fd00::1:2]:80", "unix:/run/railgate/metrics.sock",
                                       "unix:/m"};
    static const char *const bad[] = {
        "",
        "9402",
        ":9402",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:09402",
        "127.0.0.1:94a2",
        "127.0.0.1:+94",
        "localhost:9402",
        "::1:9402",
        "[::1]",
        "[::1]:",
        "[127.0.0.1]:9402",
        "[]:80",
        "1.2.3:80",
        "[fe80::1%lo]:80",
        "unix:",
        "unix:relative.sock",
        "unix:/dir/",
        "unix:/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    ListenAddress a;

    for (size_t i = 0; i < ELEMENTSOF(good); i++)
        if (listen_address_parse(good[i], &a) < 0 || !listen_address_valid(good[i]))
            fail_msg("refused: %s", good[i]);
    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        if (listen_address_parse(bad[i], &a) == 0 || listen_address_valid(bad[i]))
            fail_msg("taken: %s", bad[i]);
    assert_int_equal(listen_address_parse(NULL, &a), -EINVAL);
    assert_int_equal(listen_address_parse("[::1]:9402", &a), 0);
    assert_int_equal(a.u.sa.sa_family, AF_INET6);
    assert_int_equal(ntohs(a.u.in6.sin6_port), 9402);
    assert_int_equal(a.len, sizeof(struct sockaddr_in6));
    assert_null(listen_address_path(&a));
    assert_int_equal(listen_address_parse("10.1.2.3:80", &a), 0);
    assert_int_equal(a.u.sa.sa_family, AF_INET);
    assert_int_equal(a.u.in4.sin_addr.s_addr, htonl(0x0a010203));
    assert_int_equal(ntohs(a.u.in4.sin_port), 80);
    assert_int_equal(listen_address_parse("unix:/run/m.sock", &a), 0);
    assert_int_equal(a.u.sa.sa_family, AF_UNIX);
    assert_string_equal(listen_address_path(&a), "/run/m.sock");
}

static int bind_unix(mode_t mode, int *ret_fd) {
    ListenOptions o = {.mode = mode, .gid = (gid_t)-1, .backlog = 4};
    ListenAddress a;

    assert_int_equal(listen_address_parse(addr, &a), 0);
    return listen_address_bind(&a, &o, ret_fd);
}

static void test_bind_unix(void **state) {
    int fd = -1, other = -1;
    struct stat st;

    /* the directory is made; the socket gets its mode */
    assert_int_equal(bind_unix(0660, &fd), 0);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);
    /* a live socket is never taken over */
    assert_int_equal(bind_unix(0600, &other), -EADDRINUSE);
    assert_int_equal(other, -1);
    close(fd);
    /* a stale one (its server gone) is replaced */
    assert_int_equal(bind_unix(0600, &fd), 0);
    assert_int_equal(stat(sock, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    close(fd);
    /* anything else at the path stays, and refuses */
    assert_int_equal(unlink(sock), 0);
    fd = open(sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(bind_unix(0600, &other), -EEXIST);
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

/* A group for the socket, where root may give it. */
static void test_bind_unix_group(void **state) {
    ListenOptions o = {.mode = 0660, .gid = 4242, .backlog = 4};
    ListenAddress a;
    struct stat st;
    int fd = -1;

    if (geteuid() != 0)
        skip();
    assert_int_equal(listen_address_parse(addr, &a), 0);
    assert_int_equal(listen_address_bind(&a, &o, &fd), 0);
    assert_int_equal(stat(sock, &st), 0);
    assert_int_equal(st.st_gid, 4242);
    assert_int_equal(st.st_mode & 07777, 0660);
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test_setup_teardown(test_bind_unix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_unix_group, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
