/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA resource health service (KEP-4680): every unit's health, streamed to kubelet. */
#include <time.h>

#include "arena.h"
#include "dra.h"
#include "drahealth.pb-c.h"
#include "log.h"
#include "pb.h"

/* At most max bytes of s, never ending inside a UTF-8 sequence: kubelet's
 * proto3 decoding refuses a string that is not valid UTF-8. */
static int utf8_cut(const char *s, int max) {
    int n = (int)strnlen(s, (size_t)max + 1);

    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static Drahealth__DeviceHealth *device_new(Arena *a, const char *pool, const Unit *u, bool healthy,
                                           const char *reason, int64_t now_s) {
    Drahealth__DeviceHealth *dh = arena_new(a, Drahealth__DeviceHealth);
    Drahealth__DeviceIdentifier *id = arena_new(a, Drahealth__DeviceIdentifier);

    if (!dh || !id)
        return NULL;
    drahealth__device_health__init(dh);
    drahealth__device_identifier__init(id);
    id->pool_name = (char *)pool;
    id->device_name = (char *)u->id;
    dh->device = id;
    dh->health = healthy ? DRAHEALTH__HEALTH_STATUS__HEALTHY : DRAHEALTH__HEALTH_STATUS__UNHEALTHY;
    dh->last_updated_time = now_s;
    dh->health_check_timeout_seconds = DRA_HEALTH_TIMEOUT_S;
    if (!healthy && reason) {
        dh->message = arena_printf(a, "%.*s", utf8_cut(reason, DRA_HEALTH_MESSAGE_MAX), reason);
        if (!dh->message)
            return NULL;
    }
    return dh;
}

int dra_health_pack(const Inventory *inv, const char *pool, const bool *healthy,
                    const char *const *reasons, int64_t now_s, uint8_t **ret, size_t *ret_len) {
    _cleanup_arena_ Arena a = {0};
    Drahealth__NodeWatchResourcesResponse resp = DRAHEALTH__NODE_WATCH_RESOURCES_RESPONSE__INIT;

    resp.devices = arena_array(&a, Drahealth__DeviceHealth *, inv->n_units);
    if (!resp.devices)
        return -ENOMEM;
    /* the complete list: kubelet reconciles each message as the whole */
    for (size_t i = 0; i < inv->n_units; i++) {
        Drahealth__DeviceHealth *dh =
            device_new(&a, pool, &inv->units[i], healthy[i], reasons ? reasons[i] : NULL, now_s);
        if (!dh)
            return -ENOMEM;
        resp.devices[resp.n_devices++] = dh;
    }
    return pb_pack(&resp.base, ret, ret_len);
}

/* Every unit as the health module last read it, at one reading. */
static int snapshot(DraDriver *d, uint8_t **ret, size_t *ret_len) {
    size_t n = d->inv->n_units;
    _cleanup_free_ bool *healthy = calloc(n ? n : 1, sizeof(bool));
    _cleanup_free_ const char **reasons = calloc(n ? n : 1, sizeof(char *));

    if (!healthy || !reasons)
        return -ENOMEM;
    health_read(d->health, healthy, reasons);
    return dra_health_pack(d->inv, d->node, healthy, reasons, (int64_t)time(NULL), ret, ret_len);
}

int dra_health_broadcast(DraDriver *d) {
    _cleanup_free_ uint8_t *buf = NULL;
    size_t len = 0;
    int r;

    if (!d->dra || !d->health)
        return 0;
    r = snapshot(d, &buf, &len);
    if (r < 0)
        return r;
    return rpc_server_broadcast(d->dra, DRA_METHOD_WATCH_V1, buf, len) +
           rpc_server_broadcast(d->dra, DRA_METHOD_WATCH_V1ALPHA1, buf, len);
}

/* A watch opened: the snapshot now, then every change and every resend
 * (dra_health_broadcast). The request is empty today; fields a later
 * kubelet may add are skipped by the decoder. */
static int on_watch(DraDriver *d, const char *service, const uint8_t *req, size_t len,
                    uint8_t **ret, size_t *ret_len, RgError *err) {
    _cleanup_pb_ Drahealth__NodeWatchResourcesRequest *w =
        drahealth__node_watch_resources_request__unpack(NULL, len, req);
    int r;

    if (!w)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT,
                        "malformed NodeWatchResourcesRequest");
    if (!d->health)
        return rg_error(err, RPC_UNAVAILABLE, RPC_UNAVAILABLE, "health not read yet");
    r = snapshot(d, ret, ret_len);
    if (r < 0)
        return rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "out of memory");
    log_info(NULL, NULL, "kubelet watches the units' health (%s): %zu units, sent again every %d s",
             service, d->inv->n_units, DRA_HEALTH_RESEND_S);
    return RPC_OK;
}

static int on_watch_v1(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, RgError *err) {
    return on_watch(userdata, DRA_HEALTH_V1, req, len, ret, ret_len, err);
}

static int on_watch_v1alpha1(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                             size_t *ret_len, RgError *err) {
    return on_watch(userdata, DRA_HEALTH_V1ALPHA1, req, len, ret, ret_len, err);
}

const RpcMethod dra_health_methods[] = {
    {DRA_METHOD_WATCH_V1, RPC_KIND_SERVER_STREAM, on_watch_v1},
    {DRA_METHOD_WATCH_V1ALPHA1, RPC_KIND_SERVER_STREAM, on_watch_v1alpha1},
};
const size_t dra_n_health_methods = ELEMENTSOF(dra_health_methods);
