/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC wrapper over a real unix socket: unary, errors, streams, broadcast, shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "rpc.h"

static char dir[64], sock[128];

static int echo(void *u, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                RgError *err) {
    *ret = malloc(len + 1);
    memcpy(*ret, req, len);
    *ret_len = len;
    return RPC_OK;
}

static int refuse(void *u, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                  RgError *err) {
    return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "no thanks: %zu bytes", len);
}

static int first(void *u, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                 RgError *err) {
    *ret = (uint8_t *)strdup("first");
    *ret_len = 5;
    return RPC_OK;
}

static const RpcMethod methods[] = {
    {"/t.T/Echo", RPC_KIND_UNARY, echo},
    {"/t.T/Refuse", RPC_KIND_UNARY, refuse},
    {"/t.T/Watch", RPC_KIND_SERVER_STREAM, first},
};

static int setup(void **state) {
    snprintf(dir, sizeof(dir), "/tmp/rg-rpc-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/s.sock", dir);
    return 0;
}

static int teardown(void **state) {
    unlink(sock);
    rmdir(dir);
    return 0;
}

static void test_unary_roundtrip(void **state) {
    RpcServer *s = NULL;
    RpcChannel *c = NULL;
    uint8_t *resp = NULL;
    size_t len = 0;
    RgError err = {0};
    struct stat st;

    assert_int_equal(rpc_server_start(sock, methods, 3, NULL, &s), 0);
    assert_int_equal(stat(sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(
        rpc_call_unary(c, "/t.T/Echo", (const uint8_t *)"hello", 5, 5000, &resp, &len, &err), 0);
    assert_int_equal(len, 5);
    assert_memory_equal(resp, "hello", 5);
    free(resp);
    /* an empty message is a zero-length buffer, not a missing one */
    assert_int_equal(rpc_call_unary(c, "/t.T/Echo", NULL, 0, 5000, &resp, &len, &err), 0);
    assert_int_equal(len, 0);
    free(resp);
    rpc_channel_free(c);
    rpc_server_stop(s);
    assert_int_equal(access(sock, F_OK), -1);
}

static void test_errors(void **state) {
    RpcServer *s = NULL;
    RpcChannel *c = NULL;
    uint8_t *resp = NULL;
    size_t len;
    RgError err = {0};

    assert_int_equal(rpc_server_start(sock, methods, 3, NULL, &s), 0);
    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(
        rpc_call_unary(c, "/t.T/Refuse", (const uint8_t *)"abc", 3, 5000, &resp, &len, &err),
        -EPROTO);
    assert_int_equal(err.code, RPC_INVALID_ARGUMENT);
    assert_string_equal(err.msg, "no thanks: 3 bytes");
    assert_int_equal(rpc_call_unary(c, "/t.T/Nope", NULL, 0, 5000, &resp, &len, &err), -EPROTO);
    assert_int_equal(err.code, RPC_UNIMPLEMENTED);
    rpc_channel_free(c);
    rpc_server_stop(s);

    /* nobody listening */
    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(rpc_call_unary(c, "/t.T/Echo", NULL, 0, 2000, &resp, &len, &err),
                     -ECONNREFUSED);
    assert_int_equal(err.code, RPC_UNAVAILABLE);
    rpc_channel_free(c);
}

static void wait_streams(RpcServer *s, size_t n) {
    for (int i = 0; i < 500 && rpc_server_stream_count(s, "/t.T/Watch") != n; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    assert_int_equal(rpc_server_stream_count(s, "/t.T/Watch"), n);
}

static void test_stream_broadcast(void **state) {
    RpcServer *s = NULL;
    RpcChannel *c = NULL;
    RpcClientStream *a = NULL, *b = NULL;
    uint8_t *m = NULL;
    size_t len;
    RgError err = {0};

    assert_int_equal(rpc_server_start(sock, methods, 3, NULL, &s), 0);
    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(rpc_client_stream_open(c, "/t.T/Watch", NULL, 0, &a), 0);
    assert_int_equal(rpc_client_stream_open(c, "/t.T/Watch", NULL, 0, &b), 0);
    assert_int_equal(rpc_client_stream_recv(a, 5000, &m, &len, &err), 0);
    assert_memory_equal(m, "first", 5);
    free(m);
    assert_int_equal(rpc_client_stream_recv(b, 5000, &m, &len, &err), 0);
    free(m);
    wait_streams(s, 2);
    assert_int_equal(rpc_client_stream_recv(a, 50, &m, &len, &err), -ETIMEDOUT);
    assert_int_equal(rpc_server_broadcast(s, "/t.T/Watch", (const uint8_t *)"second", 6), 2);
    assert_int_equal(rpc_client_stream_recv(a, 5000, &m, &len, &err), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(m, "second", 6);
    free(m);
    /* a client going away is noticed and its stream dropped */
    rpc_client_stream_free(b);
    wait_streams(s, 1);
    /* server shutdown ends the remaining stream */
    rpc_server_stop(s);
    int r = rpc_client_stream_recv(a, 5000, &m, &len, &err);
    assert_true(r < 0 && r != -ETIMEDOUT);
    assert_true(err.code == RPC_CANCELLED || err.code == RPC_UNAVAILABLE);
    rpc_client_stream_free(a);
    rpc_channel_free(c);
}

/* A unix socket that takes connections into its backlog and never speaks. */
static int silent_server(void) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_true(strlen(sock) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 8), 0);
    return fd;
}

typedef struct Waiter {
    RpcUnaryCall *u;
    int r;
    RgError err;
} Waiter;

static void *waiter_run(void *arg) {
    Waiter *w = arg;
    uint8_t *resp = NULL;
    size_t len = 0;

    w->r = rpc_unary_wait(w->u, "/t.T/Echo", &resp, &len, &w->err);
    free(resp);
    return NULL;
}

/* A call that would hang until its deadline ends when another thread
 * cancels it: the waiter returns CANCELLED, not DEADLINE_EXCEEDED. */
static void test_unary_cancel(void **state) {
    int fd = silent_server();
    RpcChannel *c = NULL;
    Waiter w = {0};
    pthread_t t;

    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(rpc_unary_start(c, "/t.T/Echo", (const uint8_t *)"x", 1, 60000, 0, &w.u), 0);
    assert_int_equal(pthread_create(&t, NULL, waiter_run, &w), 0);
    rpc_unary_cancel(w.u);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(w.r, -EPROTO);
    assert_int_equal(w.err.code, RPC_CANCELLED);
    rpc_unary_free(w.u);
    /* freed without a wait: cancelled and reaped */
    assert_int_equal(rpc_unary_start(c, "/t.T/Echo", NULL, 0, 60000, 0, &w.u), 0);
    rpc_unary_free(w.u);
    rpc_channel_free(c);
    close(fd);
}

/* No server yet: a plain call fails at once (UNAVAILABLE); one that waits
 * for ready is answered by the server that comes up meanwhile. */
static void test_unary_wait_for_ready(void **state) {
    RpcServer *s = NULL;
    RpcChannel *c = NULL;
    uint8_t *resp = NULL;
    size_t len = 0;
    RgError err = {0};
    RpcUnaryCall *u = NULL;

    assert_int_equal(rpc_channel_new(sock, &c), 0);
    assert_int_equal(rpc_call_unary(c, "/t.T/Echo", NULL, 0, 60000, &resp, &len, &err),
                     -ECONNREFUSED);
    assert_int_equal(rpc_unary_start(c, "/t.T/Echo", (const uint8_t *)"late", 4, 60000,
                                     RPC_CALL_WAIT_FOR_READY, &u),
                     0);
    assert_int_equal(rpc_server_start(sock, methods, ELEMENTSOF(methods), NULL, &s), 0);
    assert_int_equal(rpc_unary_wait(u, "/t.T/Echo", &resp, &len, &err), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(resp, "late", 4);
    free(resp);
    rpc_unary_free(u);
    rpc_channel_free(c);
    rpc_server_stop(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_broadcast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unary_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unary_wait_for_ready, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
