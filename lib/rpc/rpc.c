/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC core wrapper: the only file that includes grpc/grpc.h. */
#include "rpc.h"

#include "failpoint.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Every tag handed to gRPC points at one of these, inside its owner. */
typedef enum TagKind {
    TAG_NEW_CALL = 0, /* a registered method got a call */
    TAG_GENERIC_CALL, /* a call to a method we do not serve */
    TAG_UNARY_DONE,   /* the reply batch of a unary call finished */
    TAG_STREAM_SEND,  /* one message of a stream was sent */
    TAG_STREAM_CLOSE, /* the peer closed or cancelled a stream */
    TAG_SHUTDOWN,     /* the server finished shutting down */
} TagKind;

typedef struct Tag {
    TagKind kind;
} Tag;

typedef struct MethodSlot {
    Tag tag;
    const RpcMethod *method;
    void *handle;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
} MethodSlot;

typedef struct GenericSlot {
    Tag tag;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
} GenericSlot;

typedef struct UnaryReply {
    Tag tag;
    grpc_call *call;
    grpc_byte_buffer *resp;
    grpc_slice details;
    int cancelled;
} UnaryReply;

typedef struct ServerStream {
    Tag send_tag;
    Tag close_tag;
    const char *path;
    grpc_call *call;
    grpc_byte_buffer *inflight;
    grpc_byte_buffer *pending; /* newest unsent snapshot, or NULL */
    bool sending;
    bool closed;
    int cancelled;
    struct ServerStream *next;
} ServerStream;

struct RpcServer {
    grpc_server *server;
    grpc_completion_queue *cq;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock; /* streams, stopping; taken before handlers run */
    bool stopping;
    Tag shutdown_tag;
    MethodSlot *slots;
    size_t n_slots;
    GenericSlot generic;
    ServerStream *streams;
    void *userdata;
    char *socket_path;
    ino_t socket_ino;
};

static gpr_timespec deadline_in(int ms) {
    if (ms < 0)
        return gpr_inf_future(GPR_CLOCK_REALTIME);
    return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static grpc_byte_buffer *buffer_from(const uint8_t *data, size_t len) {
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)data, len);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);

    grpc_slice_unref(s);
    return bb;
}

/* Copy a received buffer out; an empty message gives a 0-length buffer. */
static int buffer_read(grpc_byte_buffer *bb, uint8_t **ret, size_t *ret_len) {
    grpc_byte_buffer_reader r;

    if (!grpc_byte_buffer_reader_init(&r, bb))
        return -EBADMSG;
    grpc_slice s = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    size_t n = GRPC_SLICE_LENGTH(s);
    uint8_t *out = malloc(n ? n : 1);
    if (!out) {
        grpc_slice_unref(s);
        return -ENOMEM;
    }
    memcpy(out, GRPC_SLICE_START_PTR(s), n);
    grpc_slice_unref(s);
    *ret = out;
    *ret_len = n;
    return 0;
}

static void slot_request(RpcServer *s, MethodSlot *slot) {
    grpc_metadata_array_init(&slot->md);
    slot->payload = NULL;
    slot->call = NULL;
    grpc_server_request_registered_call(s->server, slot->handle, &slot->call, &slot->deadline,
                                        &slot->md, &slot->payload, s->cq, s->cq, &slot->tag);
}

static void generic_request(RpcServer *s) {
    grpc_metadata_array_init(&s->generic.md);
    grpc_call_details_init(&s->generic.details);
    s->generic.call = NULL;
    grpc_server_request_call(s->server, &s->generic.call, &s->generic.details, &s->generic.md,
                             s->cq, s->cq, &s->generic.tag);
}

/* Send the final batch of a unary call: response (if any) and status. */
static void unary_reply(grpc_call *call, int status, const char *details, const uint8_t *resp,
                        size_t len) {
    UnaryReply *u = calloc(1, sizeof(*u));
    grpc_op ops[4];
    size_t n = 0;

    if (!u) {
        grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL);
        grpc_call_unref(call);
        return;
    }
    u->tag.kind = TAG_UNARY_DONE;
    u->call = call;
    u->details = grpc_slice_from_copied_string(details ? details : "");
    memset(ops, 0, sizeof(ops));
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (status == RPC_OK) {
        u->resp = buffer_from(resp, len);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = u->resp;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)status;
    ops[n++].data.send_status_from_server.status_details = &u->details;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &u->cancelled;
    if (grpc_call_start_batch(call, ops, n, &u->tag, NULL) != GRPC_CALL_OK) {
        grpc_call_cancel(call, NULL);
        grpc_call_unref(call);
        if (u->resp)
            grpc_byte_buffer_destroy(u->resp);
        grpc_slice_unref(u->details);
        free(u);
    }
}

static void unary_done(UnaryReply *u) {
    if (u->resp)
        grpc_byte_buffer_destroy(u->resp);
    grpc_slice_unref(u->details);
    grpc_call_unref(u->call);
    free(u);
}

/* Run a handler on the request payload; returns its status. */
static int run_handler(RpcServer *s, MethodSlot *slot, uint8_t **resp, size_t *resp_len,
                       RgError *err) {
    _cleanup_free_ uint8_t *req = NULL;
    size_t req_len = 0;

    if (!slot->payload)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "missing request message");
    if (buffer_read(slot->payload, &req, &req_len) < 0)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "unreadable request message");
    return slot->method->handler(s->userdata, req, req_len, resp, resp_len, err);
}

static void stream_free(ServerStream *st) {
    if (st->inflight)
        grpc_byte_buffer_destroy(st->inflight);
    if (st->pending)
        grpc_byte_buffer_destroy(st->pending);
    grpc_call_unref(st->call);
    free(st);
}

/* Called with s->lock held. Takes ownership of bb. */
static void stream_send_locked(ServerStream *st, grpc_byte_buffer *bb, bool first) {
    grpc_op ops[2];
    size_t n = 0;

    memset(ops, 0, sizeof(ops));
    if (first)
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = bb;
    st->inflight = bb;
    st->sending = true;
    if (grpc_call_start_batch(st->call, ops, n, &st->send_tag, NULL) != GRPC_CALL_OK) {
        st->inflight = NULL;
        st->sending = false;
        grpc_byte_buffer_destroy(bb);
    }
}

static void stream_unlink_locked(RpcServer *s, ServerStream *st) {
    for (ServerStream **p = &s->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            return;
        }
}

/* A new server-streaming call: first snapshot out, then wait for close.
 * The lock is held across the handler so that a broadcast racing with the
 * open can only come after this stream is on the list. */
static void stream_open(RpcServer *s, MethodSlot *slot) {
    _cleanup_free_ uint8_t *resp = NULL;
    size_t len = 0;
    RgError err = {0};
    grpc_op op;

    pthread_mutex_lock(&s->lock);
    int status = run_handler(s, slot, &resp, &len, &err);
    ServerStream *st = status == RPC_OK ? calloc(1, sizeof(*st)) : NULL;
    if (!st) {
        pthread_mutex_unlock(&s->lock);
        unary_reply(slot->call, status == RPC_OK ? RPC_RESOURCE_EXHAUSTED : status,
                    status == RPC_OK ? "out of memory" : err.msg, NULL, 0);
        return;
    }
    st->send_tag.kind = TAG_STREAM_SEND;
    st->close_tag.kind = TAG_STREAM_CLOSE;
    st->path = slot->method->path;
    st->call = slot->call;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &st->cancelled;
    if (grpc_call_start_batch(st->call, &op, 1, &st->close_tag, NULL) != GRPC_CALL_OK) {
        pthread_mutex_unlock(&s->lock);
        grpc_call_cancel(st->call, NULL);
        stream_free(st);
        return;
    }
    st->next = s->streams;
    s->streams = st;
    stream_send_locked(st, buffer_from(resp, len), true);
    pthread_mutex_unlock(&s->lock);
}

static void stream_sent(RpcServer *s, ServerStream *st) {
    pthread_mutex_lock(&s->lock);
    grpc_byte_buffer_destroy(st->inflight);
    st->inflight = NULL;
    st->sending = false;
    if (st->closed) {
        pthread_mutex_unlock(&s->lock);
        stream_free(st);
        return;
    }
    if (st->pending && !s->stopping) {
        grpc_byte_buffer *bb = st->pending;
        st->pending = NULL;
        stream_send_locked(st, bb, false);
    }
    pthread_mutex_unlock(&s->lock);
}

static void stream_closed(RpcServer *s, ServerStream *st) {
    bool free_now;

    pthread_mutex_lock(&s->lock);
    st->closed = true;
    stream_unlink_locked(s, st);
    free_now = !st->sending;
    pthread_mutex_unlock(&s->lock);
    if (free_now)
        stream_free(st);
}

static void new_call(RpcServer *s, MethodSlot *slot, bool ok) {
    grpc_call *call = slot->call;
    bool stopping;

    pthread_mutex_lock(&s->lock);
    stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);

    if (ok && call) {
        if (slot->method->kind == RPC_KIND_SERVER_STREAM)
            stream_open(s, slot);
        else {
            _cleanup_free_ uint8_t *resp = NULL;
            size_t len = 0;
            RgError err = {0};
            int status = run_handler(s, slot, &resp, &len, &err);
            unary_reply(call, status, status == RPC_OK ? NULL : err.msg, resp, len);
        }
    } else if (call)
        grpc_call_unref(call);
    if (slot->payload)
        grpc_byte_buffer_destroy(slot->payload);
    grpc_metadata_array_destroy(&slot->md);
    if (!stopping)
        slot_request(s, slot);
}

static void generic_call(RpcServer *s, bool ok) {
    bool stopping;

    pthread_mutex_lock(&s->lock);
    stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    if (ok && s->generic.call)
        unary_reply(s->generic.call, RPC_UNIMPLEMENTED, "method not served here", NULL, 0);
    else if (s->generic.call)
        grpc_call_unref(s->generic.call);
    grpc_call_details_destroy(&s->generic.details);
    grpc_metadata_array_destroy(&s->generic.md);
    if (!stopping)
        generic_request(s);
}

static void *server_loop(void *arg) {
    RpcServer *s = arg;

    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        Tag *t = ev.tag;
        switch (t->kind) {
        case TAG_NEW_CALL:
            new_call(s, container_of(t, MethodSlot, tag), ev.success);
            break;
        case TAG_GENERIC_CALL:
            generic_call(s, ev.success);
            break;
        case TAG_UNARY_DONE:
            unary_done(container_of(t, UnaryReply, tag));
            break;
        case TAG_STREAM_SEND:
            stream_sent(s, container_of(t, ServerStream, send_tag));
            break;
        case TAG_STREAM_CLOSE:
            stream_closed(s, container_of(t, ServerStream, close_tag));
            break;
        case TAG_SHUTDOWN:
            grpc_completion_queue_shutdown(s->cq);
            break;
        }
    }
    return NULL;
}

static int server_bind(RpcServer *s, const char *socket_path) {
    _cleanup_free_ char *addr = NULL;
    struct stat st;

    if (asprintf(&addr, "unix:%s", socket_path) < 0)
        return -ENOMEM;
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port == 0)
        return -EADDRINUSE;
    /* Only root (kubelet) talks to a device plugin. */
    (void)chmod(socket_path, 0600);
    if (stat(socket_path, &st) == 0)
        s->socket_ino = st.st_ino;
    return 0;
}

static void server_destroy(RpcServer *s) {
    if (s->server)
        grpc_server_destroy(s->server);
    if (s->cq)
        grpc_completion_queue_destroy(s->cq);
    pthread_mutex_destroy(&s->lock);
    free(s->slots);
    free(s->socket_path);
    free(s);
    grpc_shutdown();
}

int rpc_server_start(const char *socket_path, const RpcMethod *methods, size_t n_methods,
                     void *userdata, RpcServer **ret) {
    grpc_arg arg = {.type = GRPC_ARG_INTEGER,
                    .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                    .value.integer = (int)RPC_MAX_MESSAGE};
    grpc_channel_args args = {.num_args = 1, .args = &arg};
    RpcServer *s;
    int r;

    grpc_init();
    s = calloc(1, sizeof(*s));
    if (!s) {
        grpc_shutdown();
        return -ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->userdata = userdata;
    s->shutdown_tag.kind = TAG_SHUTDOWN;
    s->generic.tag.kind = TAG_GENERIC_CALL;
    s->socket_path = strdup(socket_path);
    s->slots = calloc(n_methods, sizeof(*s->slots));
    s->server = grpc_server_create(&args, NULL);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    if (!s->socket_path || !s->slots || !s->server || !s->cq) {
        server_destroy(s);
        return -ENOMEM;
    }
    s->n_slots = n_methods;
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    for (size_t i = 0; i < n_methods; i++) {
        s->slots[i].tag.kind = TAG_NEW_CALL;
        s->slots[i].method = &methods[i];
        s->slots[i].handle = grpc_server_register_method(
            s->server, methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
        if (!s->slots[i].handle) {
            server_destroy(s);
            return -EINVAL;
        }
    }
    r = server_bind(s, socket_path);
    if (r < 0) {
        server_destroy(s);
        return r;
    }
    grpc_server_start(s->server);
    for (size_t i = 0; i < n_methods; i++)
        slot_request(s, &s->slots[i]);
    generic_request(s);
    r = -pthread_create(&s->thread, NULL, server_loop, s);
    if (r < 0) {
        /* Nothing drains the queue: shut down synchronously here. */
        s->stopping = true;
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
        server_loop(s);
        server_destroy(s);
        return r;
    }
    (void)pthread_setname_np(s->thread, "rg-grpc-server");
    s->thread_started = true;
    *ret = s;
    return 0;
}

void rpc_server_stop(RpcServer *s) {
    struct stat st;

    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
    grpc_server_cancel_all_calls(s->server);
    if (s->thread_started)
        pthread_join(s->thread, NULL);
    /* Streams whose close raced with the shutdown are gone with their calls. */
    while (s->streams) {
        ServerStream *next = s->streams->next;
        stream_free(s->streams);
        s->streams = next;
    }
    /* gRPC removes the socket it bound; make sure, but never remove a newer
     * socket somebody else bound at the same path. */
    if (stat(s->socket_path, &st) == 0 && st.st_ino == s->socket_ino)
        (void)unlink(s->socket_path);
    server_destroy(s);
}

int rpc_server_broadcast(RpcServer *s, const char *path, const uint8_t *data, size_t len) {
    int n = 0;

    pthread_mutex_lock(&s->lock);
    for (ServerStream *st = s->streams; st && !s->stopping; st = st->next) {
        if (st->closed || strcmp(st->path, path) != 0)
            continue;
        grpc_byte_buffer *bb = buffer_from(data, len);
        if (st->sending) {
            if (st->pending)
                grpc_byte_buffer_destroy(st->pending);
            st->pending = bb;
        } else
            stream_send_locked(st, bb, false);
        n++;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t rpc_server_stream_count(RpcServer *s, const char *path) {
    size_t n = 0;

    pthread_mutex_lock(&s->lock);
    for (ServerStream *st = s->streams; st; st = st->next)
        if (!st->closed && strcmp(st->path, path) == 0)
            n++;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Client side. */

struct RpcChannel {
    grpc_channel *channel;
};

/* A channel to target (dialed), or over the connected fd (>= 0), which it
 * owns from here on, also when it fails. */
static int channel_make(const char *target, int fd, const grpc_channel_args *args,
                        RpcChannel **ret) {
    RpcChannel *c = calloc(1, sizeof(*c));

    if (!c) {
        if (fd >= 0)
            close(fd);
        return -ENOMEM;
    }
    grpc_init();
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    c->channel = fd >= 0 ? grpc_channel_create_from_fd(target, fd, creds, args)
                         : grpc_channel_create(target, creds, args);
    grpc_channel_credentials_release(creds);
    if (!c->channel) {
        free(c);
        grpc_shutdown();
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

int rpc_channel_new(const char *socket_path, RpcChannel **ret) {
    grpc_arg argv[5] = {
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         .value.integer = (int)RPC_MAX_MESSAGE},
        /* a channel of its own connects afresh: a shared subchannel would
         * make a retry sit out the reconnect backoff of an earlier refusal */
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, .value.integer = 1},
        /* a local socket is there or not: reconnect soon (a call that
         * waits for ready), not after gRPC's default second. Not
         * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC takes it as the connect
         * timeout, and a loaded node needs more than a few ms for the
         * handshake. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
         .value.integer = 20},
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, .value.integer = 1000},
        {.type = GRPC_ARG_STRING,
         .key = GRPC_ARG_DEFAULT_AUTHORITY,
         .value.string = (char *)"localhost"},
    };
    grpc_channel_args args = {.num_args = ELEMENTSOF(argv), .args = argv};
    _cleanup_free_ char *target = NULL;

    if (asprintf(&target, "unix:%s", socket_path) < 0)
        return -ENOMEM;
    return channel_make(target, -1, &args, ret);
}

/* Device, inode and creation (mtime: a socket's is never written; ctime
 * moves with a chmod or chown of the same socket). */
static bool same_socket(const struct stat *a, const struct stat *b) {
    return S_ISSOCK(a->st_mode) && a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int rpc_channel_new_pinned(const char *socket_path, struct stat *ret_st, RpcChannel **ret) {
    grpc_arg argv[2] = {
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         .value.integer = (int)RPC_MAX_MESSAGE},
        {.type = GRPC_ARG_STRING,
         .key = GRPC_ARG_DEFAULT_AUTHORITY,
         .value.string = (char *)"localhost"},
    };
    grpc_channel_args args = {.num_args = ELEMENTSOF(argv), .args = argv};
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_free_ char *target = NULL;
    struct stat before, after;
    int fd, r;

    if (strlen(socket_path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    if (asprintf(&target, "unix:%s", socket_path) < 0)
        return -ENOMEM;
    if (stat(socket_path, &before) < 0)
        return -errno;
    if (!S_ISSOCK(before.st_mode))
        return -ENOTSOCK;
    r = failpoint("rpc-pinned-connect");
    if (r < 0)
        return r;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    /* another socket at the path now: we may have reached either server */
    if (stat(socket_path, &after) < 0 || !same_socket(&before, &after)) {
        close(fd);
        return -ESTALE;
    }
    r = channel_make(target, fd, &args, ret);
    if (r >= 0)
        *ret_st = before;
    return r;
}

void rpc_channel_connect(RpcChannel *c) {
    (void)grpc_channel_check_connectivity_state(c->channel, 1);
}

void rpc_channel_free(RpcChannel *c) {
    if (!c)
        return;
    grpc_channel_destroy(c->channel);
    free(c);
    grpc_shutdown();
}

static int status_to_errno(grpc_status_code st) {
    switch (st) {
    case GRPC_STATUS_OK:
        return 0;
    case GRPC_STATUS_DEADLINE_EXCEEDED:
        return -ETIMEDOUT;
    case GRPC_STATUS_UNAVAILABLE:
        return -ECONNREFUSED;
    default:
        return -EPROTO;
    }
}

static void cq_drain_destroy(grpc_completion_queue *cq) {
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
}

static int status_error(grpc_status_code st, grpc_slice details, RgError *err) {
    char *d = grpc_slice_to_c_string(details);
    int r = rg_error(err, status_to_errno(st), (int)st, "%s", d && *d ? d : "(no details)");

    gpr_free(d);
    return r;
}

struct RpcUnaryCall {
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_byte_buffer *send, *recv;
    grpc_metadata_array initial_md, trailing_md;
    grpc_status_code status;
    grpc_slice details;
    bool started, finished;
};

void rpc_unary_free(RpcUnaryCall *u) {
    if (!u)
        return;
    if (u->started && !u->finished) {
        grpc_call_cancel(u->call, NULL);
        grpc_completion_queue_next(u->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    }
    if (u->recv)
        grpc_byte_buffer_destroy(u->recv);
    if (u->send)
        grpc_byte_buffer_destroy(u->send);
    grpc_slice_unref(u->details);
    grpc_metadata_array_destroy(&u->initial_md);
    grpc_metadata_array_destroy(&u->trailing_md);
    if (u->call)
        grpc_call_unref(u->call);
    if (u->cq)
        cq_drain_destroy(u->cq);
    free(u);
}

int rpc_unary_start(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                    int timeout_ms, unsigned flags, RpcUnaryCall **ret) {
    _cleanup_(rpc_unary_freep) RpcUnaryCall *u = calloc(1, sizeof(*u));
    grpc_op ops[6];

    if (!u)
        return -ENOMEM;
    u->details = grpc_empty_slice();
    grpc_metadata_array_init(&u->initial_md);
    grpc_metadata_array_init(&u->trailing_md);
    u->cq = grpc_completion_queue_create_for_next(NULL);
    u->send = buffer_from(req, len);
    if (!u->cq || !u->send)
        return -ENOMEM;
    u->call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, u->cq,
                                       grpc_slice_from_static_string(method), NULL,
                                       deadline_in(timeout_ms), NULL);
    if (!u->call)
        return -ENOMEM;
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (flags & RPC_CALL_WAIT_FOR_READY)
        ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY |
                       GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = u->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &u->initial_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &u->recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &u->trailing_md;
    ops[5].data.recv_status_on_client.status = &u->status;
    ops[5].data.recv_status_on_client.status_details = &u->details;
    if (grpc_call_start_batch(u->call, ops, 6, u, NULL) != GRPC_CALL_OK)
        return -EIO;
    u->started = true;
    *ret = TAKE_PTR(u);
    return 0;
}

int rpc_unary_wait(RpcUnaryCall *u, const char *method, uint8_t **ret_resp, size_t *ret_len,
                   RgError *err) {
    if (!u->finished) {
        grpc_completion_queue_next(u->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        u->finished = true;
    }
    if (u->status != GRPC_STATUS_OK)
        return status_error(u->status, u->details, err);
    if (!u->recv)
        return rg_error(err, -EPROTO, RPC_INTERNAL, "%s: no response message", method);
    return buffer_read(u->recv, ret_resp, ret_len);
}

void rpc_unary_cancel(RpcUnaryCall *u) {
    if (u && u->call)
        grpc_call_cancel(u->call, NULL);
}

int rpc_call_unary(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                   int timeout_ms, uint8_t **ret_resp, size_t *ret_len, RgError *err) {
    _cleanup_(rpc_unary_freep) RpcUnaryCall *u = NULL;
    int r;

    r = rpc_unary_start(c, method, req, len, timeout_ms, 0, &u);
    if (r < 0)
        return rg_error(err, r, RPC_INTERNAL, "could not start call %s", method);
    return rpc_unary_wait(u, method, ret_resp, ret_len, err);
}

struct RpcClientStream {
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_byte_buffer *send;
    grpc_byte_buffer *recv;
    grpc_metadata_array initial_md, trailing_md;
    grpc_status_code status;
    grpc_slice details;
    int start_tag, recv_tag, status_tag; /* addresses are the tags */
    unsigned outstanding;                /* batches not yet completed */
    bool recv_armed, status_done, ended;
};

int rpc_client_stream_open(RpcChannel *c, const char *method, const uint8_t *req, size_t len,
                           RpcClientStream **ret) {
    RpcClientStream *s = calloc(1, sizeof(*s));
    grpc_op ops[4];

    if (!s)
        return -ENOMEM;
    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                       grpc_slice_from_static_string(method), NULL,
                                       gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    s->send = buffer_from(req, len);
    s->details = grpc_empty_slice();
    grpc_metadata_array_init(&s->initial_md);
    grpc_metadata_array_init(&s->trailing_md);
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->initial_md;
    if (grpc_call_start_batch(s->call, ops, 4, &s->start_tag, NULL) == GRPC_CALL_OK)
        s->outstanding++;
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &s->trailing_md;
    ops[0].data.recv_status_on_client.status = &s->status;
    ops[0].data.recv_status_on_client.status_details = &s->details;
    if (grpc_call_start_batch(s->call, ops, 1, &s->status_tag, NULL) == GRPC_CALL_OK)
        s->outstanding++;
    *ret = s;
    return 0;
}

/* Wait for one completion; false on timeout. */
static bool client_stream_wait(RpcClientStream *s, gpr_timespec deadline) {
    grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);

    if (ev.type != GRPC_OP_COMPLETE)
        return false;
    s->outstanding--;
    if (ev.tag == &s->recv_tag)
        s->recv_armed = false;
    else if (ev.tag == &s->status_tag)
        s->status_done = true;
    return true;
}

int rpc_client_stream_recv(RpcClientStream *s, int timeout_ms, uint8_t **ret, size_t *ret_len,
                           RgError *err) {
    gpr_timespec deadline = deadline_in(timeout_ms);

    if (s->ended)
        return rg_error(err, -EPIPE, (int)s->status, "stream ended");
    if (!s->recv_armed) {
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &s->recv;
        s->recv = NULL;
        if (grpc_call_start_batch(s->call, &op, 1, &s->recv_tag, NULL) != GRPC_CALL_OK)
            return rg_error(err, -EIO, RPC_INTERNAL, "could not start receive");
        s->outstanding++;
        s->recv_armed = true;
    }
    while (s->recv_armed)
        if (!client_stream_wait(s, deadline))
            return -ETIMEDOUT;
    if (s->recv) {
        int r = buffer_read(s->recv, ret, ret_len);
        grpc_byte_buffer_destroy(s->recv);
        s->recv = NULL;
        return r;
    }
    /* No message: the stream is over; its status follows. */
    s->ended = true;
    while (!s->status_done)
        if (!client_stream_wait(s, deadline))
            return rg_error(err, -EPIPE, RPC_UNKNOWN, "stream ended");
    return status_error(s->status, s->details, err) ?: rg_error(err, -EPIPE, 0, "stream ended");
}

void rpc_client_stream_free(RpcClientStream *s) {
    if (!s)
        return;
    if (s->outstanding)
        grpc_call_cancel(s->call, NULL);
    while (s->outstanding)
        client_stream_wait(s, gpr_inf_future(GPR_CLOCK_REALTIME));
    if (s->recv)
        grpc_byte_buffer_destroy(s->recv);
    grpc_byte_buffer_destroy(s->send);
    grpc_slice_unref(s->details);
    grpc_metadata_array_destroy(&s->initial_md);
    grpc_metadata_array_destroy(&s->trailing_md);
    grpc_call_unref(s->call);
    cq_drain_destroy(s->cq);
    free(s);
}
