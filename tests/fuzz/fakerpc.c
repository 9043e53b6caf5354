/* SPDX-License-Identifier: Apache-2.0 */
/* rpc.h without gRPC, for fuzz targets: see fakerpc.h. */
#include "fakerpc.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "macro.h"

struct RpcServer {
    const RpcMethod *methods;
    size_t n_methods;
    void *userdata;
};

struct RpcChannel {
    int unused;
};

struct RpcClientStream {
    int unused;
};

static fakerpc_client_fn client_fn;

void fakerpc_set_client(fakerpc_client_fn fn) {
    client_fn = fn;
}

int fakerpc_server_call(RpcServer *s, const char *path, const uint8_t *req, size_t len,
                        uint8_t **ret_resp, size_t *ret_len, RgError *err) {
    *ret_resp = NULL;
    *ret_len = 0;
    for (size_t i = 0; s && i < s->n_methods; i++) {
        if (!streq(s->methods[i].path, path))
            continue;
        /* the real server hands the handler a malloc'd copy, never NULL */
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy)
            return RPC_RESOURCE_EXHAUSTED;
        if (len)
            memcpy(copy, req, len);
        int status = s->methods[i].handler(s->userdata, copy, len, ret_resp, ret_len, err);
        free(copy);
        return status;
    }
    return rg_error(err, RPC_UNIMPLEMENTED, RPC_UNIMPLEMENTED, "no method %s", path);
}

int rpc_server_start(const char *socket_path, const RpcMethod *methods, size_t n_methods,
                     void *userdata, RpcServer **ret) {
    RpcServer *s = calloc(1, sizeof(*s));

    if (!s)
        return -ENOMEM;
    s->methods = methods;
    s->n_methods = n_methods;
    s->userdata = userdata;
    *ret = s;
    return 0;
}

void rpc_server_stop(RpcServer *s) {
    free(s);
}

int rpc_server_broadcast(RpcServer *s, const char *path, const uint8_t *data, size_t len) {
    return 0;
}

size_t rpc_server_stream_count(RpcServer *s, const char *path) {
    return 0;
}

int rpc_channel_new(const char *socket_path, RpcChannel **ret) {
    RpcChannel *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}

int rpc_channel_new_pinned(const char *socket_path, struct stat *ret_st, RpcChannel **ret) {
    memset(ret_st, 0, sizeof(*ret_st));
    return rpc_channel_new(socket_path, ret);
}

void rpc_channel_free(RpcChannel *c) {
    free(c);
}

int rpc_call_unary(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                   int timeout_ms, uint8_t **ret_resp, size_t *ret_len, RgError *err) {
    if (!client_fn)
        return rg_error(err, -ECONNREFUSED, RPC_UNAVAILABLE, "no server");
    return client_fn(method, req, len, ret_resp, ret_len, err);
}

int rpc_client_stream_open(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                           RpcClientStream **ret) {
    return -ECONNREFUSED;
}

int rpc_client_stream_recv(RpcClientStream *s, int timeout_ms, uint8_t **ret, size_t *ret_len,
                           RgError *err) {
    return rg_error(err, -EPIPE, RPC_UNAVAILABLE, "no stream");
}

void rpc_client_stream_free(RpcClientStream *s) {
    free(s);
}

/* A unary call in two halves asks the client hook when it is waited for;
 * without a hook (the device plugin's Register: the fuzz targets drive its
 * handlers, not its loop) it goes nowhere. */
struct RpcUnaryCall {
    uint8_t *req;
    size_t len;
};

int rpc_unary_start(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                    int timeout_ms, unsigned flags, RpcUnaryCall **ret) {
    RpcUnaryCall *u;

    if (!client_fn)
        return -ECONNREFUSED;
    u = calloc(1, sizeof(*u));
    if (!u || !(u->req = malloc(len ? len : 1))) {
        free(u);
        return -ENOMEM;
    }
    if (len)
        memcpy(u->req, req, len);
    u->len = len;
    *ret = u;
    return 0;
}

int rpc_unary_wait(RpcUnaryCall *u, const char *method, uint8_t **ret_resp, size_t *ret_len,
                   RgError *err) {
    return rpc_call_unary(NULL, method, u->req, u->len, 0, ret_resp, ret_len, err);
}

void rpc_unary_cancel(RpcUnaryCall *u) {
}

void rpc_unary_free(RpcUnaryCall *u) {
    if (u)
        free(u->req);
    free(u);
}

void rpc_channel_connect(RpcChannel *c) {
}
