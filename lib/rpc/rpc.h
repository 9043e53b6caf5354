/* SPDX-License-Identifier: Apache-2.0 */
/* A thin gRPC core wrapper: unix-socket servers and clients moving raw bytes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "pb.h"

struct stat;

/* gRPC status codes used at our boundaries (grpc/status.h values). */
enum {
    RPC_OK = 0,
    RPC_CANCELLED = 1,
    RPC_UNKNOWN = 2,
    RPC_INVALID_ARGUMENT = 3,
    RPC_DEADLINE_EXCEEDED = 4,
    RPC_NOT_FOUND = 5,
    RPC_RESOURCE_EXHAUSTED = 8,
    RPC_FAILED_PRECONDITION = 9,
    RPC_UNIMPLEMENTED = 12,
    RPC_INTERNAL = 13,
    RPC_UNAVAILABLE = 14,
};

#define RPC_MAX_MESSAGE (16u << 20) /* receive limit, both directions */

/* A unary handler's last step: m packed into *ret, RPC_OK, or
 * RESOURCE_EXHAUSTED when memory ran out. */
static inline int rpc_reply_pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len,
                                 RgError *err) {
    if (pb_pack(m, ret, ret_len) < 0)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    return RPC_OK;
}

/*
 * Unary handler. Returns RPC_OK and a malloc'd response (length may be 0 for
 * an empty message), or a non-zero status with err->msg as the details.
 */
typedef int (*rpc_unary_fn)(void *userdata, const uint8_t *req, size_t len, uint8_t **ret_resp,
                            size_t *ret_len, RgError *err);

/*
 * Server-streaming handler: returns the first message of the stream (as a
 * unary handler does); later messages go out with rpc_server_broadcast().
 */
typedef rpc_unary_fn rpc_stream_open_fn;

typedef enum RpcKind {
    RPC_KIND_UNARY = 0,
    RPC_KIND_SERVER_STREAM,
} RpcKind;

typedef struct RpcMethod {
    const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
    RpcKind kind;
    rpc_unary_fn handler;
} RpcMethod;

typedef struct RpcServer RpcServer;

/*
 * Bind socket_path (a stale socket there is replaced), start serving the
 * methods on a thread of its own and return once calls can be accepted.
 * methods must outlive the server. Handlers run on the server's thread.
 */
int rpc_server_start(const char *socket_path, const RpcMethod *methods, size_t n_methods,
                     void *userdata, RpcServer **ret);
/* Cancel every call, drain, join the thread, destroy, remove the socket
 * (only if it is still the one we bound). NULL-safe. */
void rpc_server_stop(RpcServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcServer *, rpc_server_stop);

/*
 * Send data to every open stream of method path. A stream with a send in
 * flight keeps only the newest pending message: streams carry full
 * snapshots, so a slow reader gets the latest state, never a backlog.
 * Thread-safe. Returns the number of streams reached.
 */
int rpc_server_broadcast(RpcServer *s, const char *path, const uint8_t *data, size_t len);
/* Number of open streams of method path. */
size_t rpc_server_stream_count(RpcServer *s, const char *path);

/* Client side. */
typedef struct RpcChannel RpcChannel;

/* A channel to the unix socket at socket_path, dialed by path: it connects at
 * its first call (or rpc_channel_connect), and again when the connection
 * drops, to whatever server then has the path. Thread-safe. */
int rpc_channel_new(const char *socket_path, RpcChannel **ret);
/*
 * A channel on one connection to the socket at socket_path, pinned to the
 * socket that is there: *ret_st is its stat, taken before connect and found
 * the same after (device, inode, mtime), so the connection is to exactly the
 * server that owned that socket, never to one that replaced it meanwhile.
 * -ESTALE when the socket was replaced during the connect, -errno when it
 * is missing or refuses. Calls on it fail (UNAVAILABLE) once that server is
 * gone: they never wait for the next one.
 */
int rpc_channel_new_pinned(const char *socket_path, struct stat *ret_st, RpcChannel **ret);
/* Start connecting now rather than at the first call. */
void rpc_channel_connect(RpcChannel *c);
void rpc_channel_free(RpcChannel *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcChannel *, rpc_channel_free);

/*
 * Unary call with a deadline. 0 and a malloc'd response on status OK;
 * otherwise -ETIMEDOUT (DEADLINE_EXCEEDED), -ECONNREFUSED (UNAVAILABLE) or
 * -EPROTO (any other status), with err->code the gRPC status and err->msg
 * its details.
 */
int rpc_call_unary(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                   int timeout_ms, uint8_t **ret_resp, size_t *ret_len, RgError *err);

/*
 * The same call in two halves, for a caller that must stay responsive while
 * the peer takes its time: start it (never blocks), wait for its end on any
 * one thread, cancel it from any other (wait then returns at once, with
 * status CANCELLED). Free after wait has returned, or instead of waiting
 * (that cancels and reaps the call).
 */
typedef struct RpcUnaryCall RpcUnaryCall;
/* Flags of rpc_unary_start. WAIT_FOR_READY: a refused or failed connect
 * does not fail the call; it is retried (quickly at first) until the
 * deadline. For a server that may be starting: a socket bound but not yet
 * listening refuses. */
#define RPC_CALL_WAIT_FOR_READY (1u << 0)
int rpc_unary_start(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                    int timeout_ms, unsigned flags, RpcUnaryCall **ret);
int rpc_unary_wait(RpcUnaryCall *u, const char *method, uint8_t **ret_resp, size_t *ret_len,
                   RgError *err);
void rpc_unary_cancel(RpcUnaryCall *u);
void rpc_unary_free(RpcUnaryCall *u);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcUnaryCall *, rpc_unary_free);

typedef struct RpcClientStream RpcClientStream;

int rpc_client_stream_open(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                           RpcClientStream **ret);
/* Next message: 0 and data; -ETIMEDOUT when none came in timeout_ms (< 0:
 * wait forever; the receive stays armed for the next call); -EPIPE when the
 * stream ended, with the final status in err. */
int rpc_client_stream_recv(RpcClientStream *s, int timeout_ms, uint8_t **ret, size_t *ret_len,
                           RgError *err);
void rpc_client_stream_free(RpcClientStream *s); /* cancels if still open */
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcClientStream *, rpc_client_stream_free);
