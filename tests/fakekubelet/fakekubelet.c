/* SPDX-License-Identifier: Apache-2.0 */
/* Fake kubelet: what kubelet does to a device plugin, over the same gRPC layer. */
#include "fakekubelet.h"
#include "waitscale.h"

#include <dirent.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "pb.h"
#include "podresources.pb-c.h"
#include "rpc.h"
#include "strv.h"

#define FK_MAX_RESOURCES 64
#define FK_MAX_PODS 256

typedef struct Entry {
    char resource[256];
    char endpoint[256];
    unsigned registrations;  /* accepted, by every kubelet start of this FakeKubelet */
    unsigned registered_now; /* accepted by the kubelet running now */
    unsigned refused;        /* refused: "device plugin already connected" */
    bool connected;          /* the newest registration's ListAndWatch is open */
    bool opt_preferred, opt_prestart;
    RpcChannel *channel;
    pthread_t thread;
    bool thread_running;
    bool stop;
    FkDevice *devices;
    size_t n_devices;
    uint64_t seq;
    bool listed;           /* the newest registration's stream delivered a list */
    unsigned streams_lost; /* streams that ended while kubelet still wanted them */
} Entry;

typedef struct Pod {
    char ns[128], name[128], resource[256];
    char **ids;
    char claim[256]; /* a DRA claim of the pod's namespace its container uses, "" for none */
} Pod;

struct FakeKubelet {
    char dir[4096], dp_dir[4096], pr_dir[4096];
    RpcServer *registration, *podresources;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    Entry entries[FK_MAX_RESOURCES];
    size_t n_entries;
    Pod pods[FK_MAX_PODS];
    size_t n_pods;
    bool get_disabled;
    unsigned stall_ms; /* PodResources answers this late (a loaded kubelet) */
    unsigned gen;      /* kubelet starts: servers_start counts them */
    bool serving;      /* false from the start of servers_stop */
};

typedef struct StreamArg {
    FakeKubelet *k;
    Entry *e;
} StreamArg;

static uint64_t mono_ms(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait on the condition until pred holds or the deadline passes; lock held. */
static int wait_locked(FakeKubelet *k, uint64_t deadline) {
    struct timespec ts;
    uint64_t now = mono_ms();

    if (now >= deadline)
        return -ETIMEDOUT;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t left = deadline - now;
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&k->cond, &k->lock, &ts);
    return 0;
}

static Entry *entry_find(FakeKubelet *k, const char *resource) {
    for (size_t i = 0; i < k->n_entries; i++)
        if (streq(k->entries[i].resource, resource))
            return &k->entries[i];
    return NULL;
}

static void stream_update(FakeKubelet *k, Entry *e, const uint8_t *buf, size_t len) {
    V1beta1__ListAndWatchResponse *r = v1beta1__list_and_watch_response__unpack(NULL, len, buf);
    FkDevice *d;

    if (!r)
        return;
    d = calloc(r->n_devices ? r->n_devices : 1, sizeof(*d));
    for (size_t i = 0; d && i < r->n_devices; i++) {
        snprintf(d[i].id, sizeof(d[i].id), "%s", r->devices[i]->id);
        d[i].healthy = streq(r->devices[i]->health, "Healthy");
        d[i].numa = r->devices[i]->topology && r->devices[i]->topology->n_nodes
                        ? (int)r->devices[i]->topology->nodes[0]->id
                        : -1;
    }
    pthread_mutex_lock(&k->lock);
    if (d) {
        free(e->devices);
        e->devices = d;
        e->n_devices = r->n_devices;
        e->seq++;
        e->listed = true;
    }
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* kubelet's client.Run: one ListAndWatch, Recv until it breaks. */
static void *stream_thread(void *arg) {
    StreamArg *sa = arg;
    FakeKubelet *k = sa->k;
    Entry *e = sa->e;
    _cleanup_(rpc_client_stream_freep) RpcClientStream *s = NULL;
    bool stop = false;

    free(sa);
    if (rpc_client_stream_open(e->channel, "/v1beta1.DevicePlugin/ListAndWatch", NULL, 0, &s) < 0)
        goto lost;
    for (;;) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;

        pthread_mutex_lock(&k->lock);
        stop = e->stop;
        pthread_mutex_unlock(&k->lock);
        if (stop)
            break;
        int r = rpc_client_stream_recv(s, 100, &buf, &len, NULL);
        if (r == -ETIMEDOUT)
            continue;
        if (r < 0)
            break;
        stream_update(k, e, buf, len);
    }
lost:
    /* kubelet did not end it (no restart, no newer registration): the
     * plugin closed the stream of its current registration */
    pthread_mutex_lock(&k->lock);
    if (!stop && !e->stop)
        e->streams_lost++;
    /* kubelet's client is gone with its stream: the same endpoint may
     * register again */
    e->connected = false;
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

/* Drop the connection to a plugin; lock not held. */
static void entry_disconnect(FakeKubelet *k, Entry *e) {
    pthread_mutex_lock(&k->lock);
    e->stop = true;
    bool running = e->thread_running;
    e->thread_running = false;
    pthread_mutex_unlock(&k->lock);
    if (running)
        pthread_join(e->thread, NULL);
    rpc_channel_free(e->channel);
    e->channel = NULL;
}

static int register_fail(RgError *err, const char *msg, const char *what) {
    return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "%s: %s", msg, what);
}

/* The entry of resource, made if new; lock held. */
static Entry *entry_get_locked(FakeKubelet *k, const char *resource) {
    Entry *e = entry_find(k, resource);

    if (!e && k->n_entries < FK_MAX_RESOURCES) {
        e = &k->entries[k->n_entries++];
        snprintf(e->resource, sizeof(e->resource), "%s", resource);
    }
    return e;
}

/*
 * What kubelet 1.37 refuses before it takes a registration in, lock held:
 * one that came to a kubelet that has since stopped (the process died
 * under the call: nobody answers it), and a second registration of an
 * endpoint whose client is still connected (PluginConnected: "device plugin
 * already connected: <socket>"; kubelet keeps the first, and its handler's
 * bookkeeping of that path is lost, which wedges the resource).
 */
static int register_check_locked(FakeKubelet *k, unsigned gen, const Entry *e, const char *endpoint,
                                 RgError *err) {
    if (!k->serving || k->gen != gen)
        return rg_error(err, RPC_UNAVAILABLE, RPC_UNAVAILABLE, "kubelet stopped during Register");
    if (e->connected && streq(e->endpoint, endpoint))
        return rg_error(err, RPC_UNKNOWN, RPC_UNKNOWN, "device plugin already connected: %s/%s",
                        k->dp_dir, endpoint);
    return RPC_OK;
}

/* Dial the plugin and ask its options, before Register returns, as kubelet does. */
static int plugin_options(FakeKubelet *k, const char *endpoint, RpcChannel **ret_ch,
                          V1beta1__DevicePluginOptions **ret_opts, RgError *err) {
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    _cleanup_free_ uint8_t *resp = NULL;
    char path[8192];
    size_t len;
    int r;

    snprintf(path, sizeof(path), "%s/%s", k->dp_dir, endpoint);
    r = rpc_channel_new(path, &ch);
    if (r < 0)
        return rg_error(err, RPC_INTERNAL, RPC_INTERNAL, "channel: %s", strerror(-r));
    r = rpc_call_unary(ch, "/v1beta1.DevicePlugin/GetDevicePluginOptions", NULL, 0, 10000, &resp,
                       &len, err);
    if (r < 0)
        return rg_error(err, RPC_UNAVAILABLE, RPC_UNAVAILABLE, "GetDevicePluginOptions: %s",
                        err->msg);
    *ret_opts = v1beta1__device_plugin_options__unpack(NULL, len, resp);
    if (!*ret_opts)
        return register_fail(err, "bad DevicePluginOptions", endpoint);
    *ret_ch = TAKE_PTR(ch);
    return RPC_OK;
}

static int on_register(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, RgError *err) {
    FakeKubelet *k = userdata;
    _cleanup_pb_ V1beta1__RegisterRequest *rr = v1beta1__register_request__unpack(NULL, len, req);
    _cleanup_pb_ V1beta1__DevicePluginOptions *opts = NULL;
    V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
    RpcChannel *ch = NULL;
    unsigned gen;
    int r;

    pthread_mutex_lock(&k->lock);
    gen = k->gen;
    pthread_mutex_unlock(&k->lock);
    if (!rr)
        return register_fail(err, "malformed RegisterRequest", "");
    if (!streq(rr->version, "v1beta1"))
        return register_fail(err, "unsupported version", rr->version);
    if (!strchr(rr->resource_name, '/') || strlen(rr->resource_name) >= 256)
        return register_fail(err, "not an extended resource name", rr->resource_name);
    if (!*rr->endpoint || strchr(rr->endpoint, '/') || strlen(rr->endpoint) >= 256)
        return register_fail(err, "bad endpoint", rr->endpoint);
    r = plugin_options(k, rr->endpoint, &ch, &opts, err);
    if (r != RPC_OK)
        return r;

    pthread_mutex_lock(&k->lock);
    Entry *e = entry_get_locked(k, rr->resource_name);
    r = e ? register_check_locked(k, gen, e, rr->endpoint, err)
          : register_fail(err, "too many resources", rr->resource_name);
    if (e && r == RPC_UNKNOWN)
        e->refused++;
    pthread_mutex_unlock(&k->lock);
    if (r != RPC_OK) {
        rpc_channel_free(ch);
        return r;
    }
    entry_disconnect(k, e); /* a registration at another endpoint replaces the old one */
    StreamArg *sa = calloc(1, sizeof(*sa));
    pthread_mutex_lock(&k->lock);
    snprintf(e->endpoint, sizeof(e->endpoint), "%s", rr->endpoint);
    e->channel = ch;
    e->opt_preferred = opts->get_preferred_allocation_available;
    e->opt_prestart = opts->pre_start_required;
    e->stop = false;
    e->listed = false;
    e->registrations++;
    e->registered_now++;
    e->connected = true;
    if (sa) {
        sa->k = k;
        sa->e = e;
        e->thread_running = pthread_create(&e->thread, NULL, stream_thread, sa) == 0;
        if (!e->thread_running)
            free(sa);
    }
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    return pb_pack(&empty.base, ret, ret_len) < 0 ? RPC_RESOURCE_EXHAUSTED : RPC_OK;
}

static V1__PodResources *pod_message(const Pod *p) {
    V1__PodResources *pr = calloc(1, sizeof(*pr));
    V1__ContainerResources *c = calloc(1, sizeof(*c));
    V1__ContainerDevices *d = calloc(1, sizeof(*d));
    V1__DynamicResource *dr = calloc(1, sizeof(*dr));

    if (!pr || !c || !d || !dr) {
        free(pr);
        free(c);
        free(d);
        free(dr);
        return NULL;
    }
    v1__pod_resources__init(pr);
    v1__container_resources__init(c);
    v1__container_devices__init(d);
    v1__dynamic_resource__init(dr);
    dr->claim_name = (char *)p->claim;
    dr->claim_namespace = (char *)p->ns;
    c->dynamic_resources = calloc(1, sizeof(*c->dynamic_resources));
    if (c->dynamic_resources)
        c->dynamic_resources[0] = dr;
    else
        free(dr);
    c->n_dynamic_resources = p->claim[0] && c->dynamic_resources ? 1 : 0;
    pr->name = (char *)p->name;
    pr->namespace_ = (char *)p->ns;
    d->resource_name = (char *)p->resource;
    d->device_ids = p->ids;
    d->n_device_ids = strv_length(p->ids);
    c->name = (char *)"main";
    c->n_devices = 1;
    c->devices = calloc(1, sizeof(*c->devices));
    if (c->devices)
        c->devices[0] = d;
    pr->n_containers = 1;
    pr->containers = calloc(1, sizeof(*pr->containers));
    if (pr->containers)
        pr->containers[0] = c;
    return pr;
}

static void pod_message_free(V1__PodResources *pr) {
    if (!pr)
        return;
    if (pr->containers) {
        V1__ContainerResources *c = pr->containers[0];
        if (c->devices)
            free(c->devices[0]);
        free(c->devices);
        if (c->dynamic_resources)
            free(c->dynamic_resources[0]);
        free(c->dynamic_resources);
        free(c);
    }
    free(pr->containers);
    free(pr);
}

static int on_list(void *userdata, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                   RgError *err) {
    FakeKubelet *k = userdata;
    V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
    int r;

    pthread_mutex_lock(&k->lock);
    resp.pod_resources = calloc(k->n_pods + 1, sizeof(*resp.pod_resources));
    for (size_t i = 0; resp.pod_resources && i < k->n_pods; i++) {
        V1__PodResources *pr = pod_message(&k->pods[i]);
        if (pr)
            resp.pod_resources[resp.n_pod_resources++] = pr;
    }
    r = pb_pack(&resp.base, ret, ret_len);
    pthread_mutex_unlock(&k->lock);
    for (size_t i = 0; i < resp.n_pod_resources; i++)
        pod_message_free(resp.pod_resources[i]);
    free(resp.pod_resources);
    return r < 0 ? rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "oom") : RPC_OK;
}

/* A loaded kubelet: the answer comes stall_ms late. */
static void stall(FakeKubelet *k) {
    unsigned ms;

    pthread_mutex_lock(&k->lock);
    ms = k->stall_ms;
    pthread_mutex_unlock(&k->lock);
    if (ms)
        nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000},
                  NULL);
}

static int on_get(void *userdata, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                  RgError *err) {
    FakeKubelet *k = userdata;
    _cleanup_pb_ V1__GetPodResourcesRequest *g =
        v1__get_pod_resources_request__unpack(NULL, len, req);
    V1__GetPodResourcesResponse resp = V1__GET_POD_RESOURCES_RESPONSE__INIT;
    int r = RPC_OK;

    if (!g)
        return rg_error(err, RPC_INVALID_ARGUMENT, RPC_INVALID_ARGUMENT, "malformed request");
    stall(k);
    pthread_mutex_lock(&k->lock);
    if (k->get_disabled)
        r = rg_error(err, RPC_UNKNOWN, RPC_UNKNOWN, "PodResources API Get method disabled");
    for (size_t i = 0; r == RPC_OK && i < k->n_pods && !resp.pod_resources; i++)
        if (streq(k->pods[i].ns, g->pod_namespace) && streq(k->pods[i].name, g->pod_name))
            resp.pod_resources = pod_message(&k->pods[i]);
    if (r == RPC_OK && !resp.pod_resources)
        r = rg_error(err, RPC_UNKNOWN, RPC_UNKNOWN, "pod %s in namespace %s not found", g->pod_name,
                     g->pod_namespace);
    if (r == RPC_OK && pb_pack(&resp.base, ret, ret_len) < 0)
        r = rg_error(err, RPC_RESOURCE_EXHAUSTED, RPC_RESOURCE_EXHAUSTED, "oom");
    pthread_mutex_unlock(&k->lock);
    pod_message_free(resp.pod_resources);
    return r;
}

static const RpcMethod registration_methods[] = {
    {"/v1beta1.Registration/Register", RPC_KIND_UNARY, on_register},
};
static const RpcMethod podresources_methods[] = {
    {"/v1.PodResourcesLister/List", RPC_KIND_UNARY, on_list},
    {"/v1.PodResourcesLister/Get", RPC_KIND_UNARY, on_get},
};

static int mkdir_p(const char *path) {
    char buf[4096];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int servers_start(FakeKubelet *k) {
    char path[8192];
    int r;

    /* a new kubelet: nothing registered with it yet */
    pthread_mutex_lock(&k->lock);
    k->gen++;
    k->serving = true;
    for (size_t i = 0; i < k->n_entries; i++)
        k->entries[i].registered_now = 0;
    pthread_mutex_unlock(&k->lock);

    snprintf(path, sizeof(path), "%s/kubelet.sock", k->dp_dir);
    r = rpc_server_start(path, registration_methods, ELEMENTSOF(registration_methods), k,
                         &k->registration);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "%s/kubelet.sock", k->pr_dir);
    return rpc_server_start(path, podresources_methods, ELEMENTSOF(podresources_methods), k,
                            &k->podresources);
}

static void servers_stop(FakeKubelet *k) {
    /* a Register in progress (its handler waits for the plugin's options)
     * finds the kubelet gone and is not taken in */
    pthread_mutex_lock(&k->lock);
    k->serving = false;
    pthread_mutex_unlock(&k->lock);
    rpc_server_stop(k->registration);
    rpc_server_stop(k->podresources);
    k->registration = k->podresources = NULL;
    for (size_t i = 0; i < k->n_entries; i++)
        entry_disconnect(k, &k->entries[i]);
}

int fk_start(const char *kubelet_dir, FakeKubelet **ret) {
    FakeKubelet *k = calloc(1, sizeof(*k));
    int r;

    if (!k)
        return -ENOMEM;
    pthread_mutex_init(&k->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cond, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(k->dir, sizeof(k->dir), "%s", kubelet_dir);
    snprintf(k->dp_dir, sizeof(k->dp_dir), "%.4000s/device-plugins", kubelet_dir);
    snprintf(k->pr_dir, sizeof(k->pr_dir), "%.4000s/pod-resources", kubelet_dir);
    r = mkdir_p(k->dp_dir);
    if (r >= 0)
        r = mkdir_p(k->pr_dir);
    if (r >= 0)
        r = servers_start(k);
    if (r < 0) {
        fk_stop(k);
        return r;
    }
    *ret = k;
    return 0;
}

void fk_stop(FakeKubelet *k) {
    if (!k)
        return;
    servers_stop(k);
    for (size_t i = 0; i < k->n_entries; i++)
        free(k->entries[i].devices);
    for (size_t i = 0; i < k->n_pods; i++)
        strv_free(k->pods[i].ids);
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

/* kubelet's CleanupPluginDirectory: everything but dirs and its checkpoint. */
static void wipe_dp_dir(FakeKubelet *k) {
    DIR *d = opendir(k->dp_dir);
    struct dirent *de;
    char path[8192];

    if (!d)
        return;
    while ((de = readdir(d))) {
        if (de->d_type == DT_DIR || streq(de->d_name, "kubelet_internal_checkpoint"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", k->dp_dir, de->d_name);
        (void)unlink(path);
    }
    closedir(d);
}

int fk_restart(FakeKubelet *k) {
    return fk_restart_gap(k, 0);
}

int fk_restart_gap(FakeKubelet *k, unsigned gap_ms) {
    struct timespec ts = {.tv_sec = gap_ms / 1000, .tv_nsec = (long)(gap_ms % 1000) * 1000000};

    fk_down(k);
    /* the time kubelet takes to come back: no socket, no server */
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    return fk_up(k);
}

void fk_down(FakeKubelet *k) {
    servers_stop(k);
    wipe_dp_dir(k);
}

int fk_up(FakeKubelet *k) {
    return servers_start(k);
}

/* The counter at offset in resource's entry, under the lock; 0 for none. */
static unsigned entry_counter(FakeKubelet *k, const char *resource, size_t offset) {
    unsigned n = 0;

    pthread_mutex_lock(&k->lock);
    Entry *e = entry_find(k, resource);
    if (e)
        memcpy(&n, (const char *)e + offset, sizeof(n));
    pthread_mutex_unlock(&k->lock);
    return n;
}

unsigned fk_streams_lost(FakeKubelet *k, const char *resource) {
    return entry_counter(k, resource, offsetof(Entry, streams_lost));
}

unsigned fk_registrations(FakeKubelet *k, const char *resource) {
    return entry_counter(k, resource, offsetof(Entry, registrations));
}

unsigned fk_registered_now(FakeKubelet *k, const char *resource) {
    return entry_counter(k, resource, offsetof(Entry, registered_now));
}

unsigned fk_refused(FakeKubelet *k, const char *resource) {
    return entry_counter(k, resource, offsetof(Entry, refused));
}

/* Wait until the counter at offset in resource's entry is at least count
 * and the newest registration's stream delivered a list. */
static int wait_registered(FakeKubelet *k, const char *resource, size_t offset, unsigned count,
                           int timeout_ms) {
    uint64_t deadline = mono_ms() + (uint64_t)wait_scaled_ms(timeout_ms);
    int r = 0;

    pthread_mutex_lock(&k->lock);
    for (;;) {
        Entry *e = entry_find(k, resource);
        unsigned n = 0;
        if (e)
            memcpy(&n, (const char *)e + offset, sizeof(n));
        if (e && n >= count && e->listed)
            break;
        r = wait_locked(k, deadline);
        if (r < 0)
            break;
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

int fk_wait_registered_now(FakeKubelet *k, const char *resource, int timeout_ms) {
    return wait_registered(k, resource, offsetof(Entry, registered_now), 1, timeout_ms);
}

int fk_wait_registered(FakeKubelet *k, const char *resource, unsigned count, int timeout_ms) {
    return wait_registered(k, resource, offsetof(Entry, registrations), count, timeout_ms);
}

int fk_devices(FakeKubelet *k, const char *resource, FkDevice **ret, size_t *ret_n,
               uint64_t *ret_seq) {
    int r = -ENOENT;

    pthread_mutex_lock(&k->lock);
    Entry *e = entry_find(k, resource);
    if (e && e->listed) {
        *ret = calloc(e->n_devices ? e->n_devices : 1, sizeof(FkDevice));
        if (*ret) {
            memcpy(*ret, e->devices, e->n_devices * sizeof(FkDevice));
            *ret_n = e->n_devices;
            if (ret_seq)
                *ret_seq = e->seq;
            r = 0;
        } else
            r = -ENOMEM;
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

int fk_wait_update(FakeKubelet *k, const char *resource, uint64_t after, int timeout_ms,
                   uint64_t *ret_seq) {
    uint64_t deadline = mono_ms() + (uint64_t)wait_scaled_ms(timeout_ms);
    int r = 0;

    pthread_mutex_lock(&k->lock);
    for (;;) {
        Entry *e = entry_find(k, resource);
        if (e && e->seq > after) {
            if (ret_seq)
                *ret_seq = e->seq;
            break;
        }
        r = wait_locked(k, deadline);
        if (r < 0)
            break;
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

int fk_wait_health(FakeKubelet *k, const char *resource, const char *id, bool healthy,
                   int timeout_ms) {
    uint64_t deadline = mono_ms() + (uint64_t)wait_scaled_ms(timeout_ms);
    int r = 0;

    pthread_mutex_lock(&k->lock);
    for (;;) {
        Entry *e = entry_find(k, resource);
        bool done = false;
        for (size_t i = 0; e && i < e->n_devices; i++)
            done |= streq(e->devices[i].id, id) && e->devices[i].healthy == healthy;
        if (done)
            break;
        r = wait_locked(k, deadline);
        if (r < 0)
            break;
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

int fk_options(FakeKubelet *k, const char *resource, bool *ret_preferred, bool *ret_prestart) {
    int r = -ENOENT;

    pthread_mutex_lock(&k->lock);
    Entry *e = entry_find(k, resource);
    if (e && e->registrations) {
        *ret_preferred = e->opt_preferred;
        *ret_prestart = e->opt_prestart;
        r = 0;
    }
    pthread_mutex_unlock(&k->lock);
    return r;
}

const char *fk_endpoint(FakeKubelet *k, const char *resource) {
    Entry *e = entry_find(k, resource);

    return e ? e->endpoint : NULL;
}

int fk_call(FakeKubelet *k, const char *resource, const char *method, const uint8_t *req,
            size_t len, uint8_t **ret, size_t *ret_len, RgError *err) {
    _cleanup_(rpc_channel_freep) RpcChannel *ch = NULL;
    char path[8192];
    int r;

    pthread_mutex_lock(&k->lock);
    Entry *e = entry_find(k, resource);
    if (e)
        snprintf(path, sizeof(path), "%s/%s", k->dp_dir, e->endpoint);
    pthread_mutex_unlock(&k->lock);
    if (!e)
        return rg_error(err, -ENOENT, RPC_NOT_FOUND, "%s is not registered", resource);
    r = rpc_channel_new(path, &ch);
    if (r < 0)
        return r;
    return rpc_call_unary(ch, method, req, len, 10000, ret, ret_len, err);
}

int fk_allocate(FakeKubelet *k, const char *resource, char *const *ids, size_t n,
                V1beta1__AllocateResponse **ret, RgError *err) {
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest cr = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest *crs[1] = {&cr};
    _cleanup_free_ uint8_t *buf = NULL, *resp = NULL;
    size_t len, resp_len;
    int r;

    cr.devices_ids = (char **)ids;
    cr.n_devices_ids = n;
    req.container_requests = crs;
    req.n_container_requests = 1;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    r = fk_call(k, resource, "/v1beta1.DevicePlugin/Allocate", buf, len, &resp, &resp_len, err);
    if (r < 0)
        return r;
    *ret = v1beta1__allocate_response__unpack(NULL, resp_len, resp);
    return *ret ? 0 : -EBADMSG;
}

int fk_preferred(FakeKubelet *k, const char *resource, char *const *avail, size_t n_avail,
                 char *const *must, size_t n_must, int size, char ***ret_ids, RgError *err) {
    V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    V1beta1__ContainerPreferredAllocationRequest cr =
        V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
    V1beta1__ContainerPreferredAllocationRequest *crs[1] = {&cr};
    _cleanup_free_ uint8_t *buf = NULL, *resp = NULL;
    _cleanup_pb_ V1beta1__PreferredAllocationResponse *pr = NULL;
    char **ids = NULL;
    size_t len, resp_len;
    int r;

    cr.available_deviceids = (char **)avail;
    cr.n_available_deviceids = n_avail;
    cr.must_include_deviceids = (char **)must;
    cr.n_must_include_deviceids = n_must;
    cr.allocation_size = size;
    req.container_requests = crs;
    req.n_container_requests = 1;
    r = pb_pack(&req.base, &buf, &len);
    if (r < 0)
        return r;
    r = fk_call(k, resource, "/v1beta1.DevicePlugin/GetPreferredAllocation", buf, len, &resp,
                &resp_len, err);
    if (r < 0)
        return r;
    pr = v1beta1__preferred_allocation_response__unpack(NULL, resp_len, resp);
    if (!pr || pr->n_container_responses != 1)
        return -EBADMSG;
    for (size_t i = 0; i < pr->container_responses[0]->n_deviceids; i++)
        if (strv_push(&ids, pr->container_responses[0]->deviceids[i]) < 0) {
            strv_free(ids);
            return -ENOMEM;
        }
    if (!ids)
        ids = calloc(1, sizeof(char *));
    *ret_ids = ids;
    return ids ? 0 : -ENOMEM;
}

int fk_pod_set(FakeKubelet *k, const char *ns, const char *name, const char *resource,
               char *const *ids, size_t n) {
    char **copy = calloc(n + 1, sizeof(char *));

    if (!copy)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(copy[i] = strdup(ids[i]))) {
            strv_free(copy);
            return -ENOMEM;
        }
    fk_pod_remove(k, ns, name);
    pthread_mutex_lock(&k->lock);
    if (k->n_pods == FK_MAX_PODS) {
        pthread_mutex_unlock(&k->lock);
        strv_free(copy);
        return -ENOSPC;
    }
    Pod *p = &k->pods[k->n_pods++];
    *p = (Pod){0};
    snprintf(p->ns, sizeof(p->ns), "%s", ns);
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->resource, sizeof(p->resource), "%s", resource);
    p->ids = copy;
    pthread_mutex_unlock(&k->lock);
    return 0;
}

int fk_pod_claim(FakeKubelet *k, const char *ns, const char *name, const char *claim) {
    int r = 0;

    pthread_mutex_lock(&k->lock);
    Pod *p = NULL;
    for (size_t i = 0; i < k->n_pods && !p; i++)
        if (streq(k->pods[i].ns, ns) && streq(k->pods[i].name, name))
            p = &k->pods[i];
    if (!p && k->n_pods < FK_MAX_PODS) {
        p = &k->pods[k->n_pods++];
        *p = (Pod){0};
        snprintf(p->ns, sizeof(p->ns), "%s", ns);
        snprintf(p->name, sizeof(p->name), "%s", name);
    }
    if (p)
        snprintf(p->claim, sizeof(p->claim), "%s", claim);
    else
        r = -ENOSPC;
    pthread_mutex_unlock(&k->lock);
    return r;
}

int fk_pod_remove(FakeKubelet *k, const char *ns, const char *name) {
    pthread_mutex_lock(&k->lock);
    for (size_t i = 0; i < k->n_pods; i++)
        if (streq(k->pods[i].ns, ns) && streq(k->pods[i].name, name)) {
            strv_free(k->pods[i].ids);
            k->pods[i] = k->pods[--k->n_pods];
            break;
        }
    pthread_mutex_unlock(&k->lock);
    return 0;
}

void fk_podresources_stall(FakeKubelet *k, unsigned ms) {
    pthread_mutex_lock(&k->lock);
    k->stall_ms = ms;
    pthread_mutex_unlock(&k->lock);
}

void fk_podresources_get_disabled(FakeKubelet *k, bool disabled) {
    pthread_mutex_lock(&k->lock);
    k->get_disabled = disabled;
    pthread_mutex_unlock(&k->lock);
}

int fk_resources(FakeKubelet *k, char ***ret) {
    char **l = calloc(1, sizeof(char *));
    int r = l ? 0 : -ENOMEM;

    pthread_mutex_lock(&k->lock);
    for (size_t i = 0; r >= 0 && i < k->n_entries; i++)
        if (k->entries[i].listed && k->entries[i].thread_running)
            r = strv_push(&l, k->entries[i].resource);
    pthread_mutex_unlock(&k->lock);
    if (r < 0) {
        strv_free(l);
        return r;
    }
    *ret = l;
    return 0;
}
