/* SPDX-License-Identifier: Apache-2.0 */
/* A fake Kubernetes API server for tests (see fakeapi.h). */
#include "fakeapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "waitscale.h"

#define MAX_EVENTS 4096
#define MAX_BODY (8u << 20)

typedef struct Event {
    long rv;
    char *path; /* of the object */
    char *type;
    json_t *obj;
} Event;

typedef struct Failure {
    char *method, *prefix;
    unsigned n;
    int status;
} Failure;

typedef struct Counter {
    char *method, *path;
} Counter;

struct FakeApi {
    struct MHD_Daemon *d;
    char url[64];
    pthread_mutex_t lock;
    pthread_cond_t changed;
    json_t *objects; /* path -> object */
    long rv;
    long compacted; /* watches from an rv below this get 410 */
    Event events[MAX_EVENTS];
    size_t n_events;
    unsigned watch_epoch; /* bumped by fakeapi_end_watches */
    unsigned open_watches;
    bool stopping;
    char *token;
    char last_auth[512];
    Failure fail;
    Counter *log;
    size_t n_log;
    unsigned long uid_seq;
    json_t *managed; /* "<path>|<field manager>" -> keys of status.devices it applied */
};

/* ---- helpers ---- */

static json_t *status_obj(int code, const char *reason, const char *msg) {
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1", "status",
                     "Failure", "message", msg, "reason", reason, "code", code);
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : strdup("");
    struct MHD_Response *r;
    enum MHD_Result ret;

    json_decref(body);
    if (!text)
        return MHD_NO;
    r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result fail(struct MHD_Connection *c, int status, const char *reason,
                            const char *msg) {
    return reply(c, status, status_obj(status, reason, msg));
}

static bool under(const char *path, const char *collection) {
    size_t n = strlen(collection);

    return strncmp(path, collection, n) == 0 && path[n] == '/' && !strchr(path + n + 1, '/');
}

static json_t *field(json_t *obj, const char *dotted) {
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", dotted);
    for (char *k = strtok_r(buf, ".", &save); k && obj; k = strtok_r(NULL, ".", &save))
        obj = json_object_get(obj, k);
    return obj;
}

/* "a=b,c=d" */
static bool selected(json_t *obj, const char *selector) {
    char buf[1024], *save = NULL;

    if (!selector || !*selector)
        return true;
    snprintf(buf, sizeof(buf), "%s", selector);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            return false;
        *eq = 0;
        json_t *v = field(obj, t);
        if (!json_is_string(v) || strcmp(json_string_value(v), eq + 1) != 0)
            return false;
    }
    return true;
}

static void event_add(FakeApi *f, const char *type, const char *path, json_t *obj) {
    if (f->n_events == MAX_EVENTS) {
        Event *e = &f->events[0];
        free(e->path);
        free(e->type);
        json_decref(e->obj);
        memmove(&f->events[0], &f->events[1], sizeof(Event) * (MAX_EVENTS - 1));
        f->n_events--;
        f->compacted = f->events[0].rv;
    }
    f->events[f->n_events++] = (Event){
        .rv = f->rv, .path = strdup(path), .type = strdup(type), .obj = json_deep_copy(obj)};
    pthread_cond_broadcast(&f->changed);
}

static void stamp(FakeApi *f, json_t *obj, bool create) {
    json_t *m = json_object_get(obj, "metadata");
    char rv[32];

    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(obj, "metadata", m);
    }
    f->rv++;
    snprintf(rv, sizeof(rv), "%ld", f->rv);
    json_object_set_new(m, "resourceVersion", json_string(rv));
    if (create || !json_object_get(m, "uid")) {
        char uid[64];
        snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012lx", ++f->uid_seq);
        json_object_set_new(m, "uid", json_string(uid));
    }
}

/* ---- the public store ---- */

int fakeapi_put(FakeApi *f, const char *path, json_t *obj) {
    json_t *copy = json_deep_copy(obj);

    if (!copy)
        return -ENOMEM;
    pthread_mutex_lock(&f->lock);
    bool existed = json_object_get(f->objects, path) != NULL;
    stamp(f, copy, !existed);
    json_object_set(f->objects, path, copy);
    event_add(f, existed ? "MODIFIED" : "ADDED", path, copy);
    pthread_mutex_unlock(&f->lock);
    json_decref(copy);
    return 0;
}

json_t *fakeapi_get(FakeApi *f, const char *path) {
    pthread_mutex_lock(&f->lock);
    json_t *o = json_deep_copy(json_object_get(f->objects, path));
    pthread_mutex_unlock(&f->lock);
    return o;
}

static int delete_locked(FakeApi *f, const char *path) {
    json_t *o = json_incref(json_object_get(f->objects, path));

    if (!o)
        return -ENOENT;
    json_object_del(f->objects, path);
    f->rv++;
    char rv[32];
    snprintf(rv, sizeof(rv), "%ld", f->rv);
    json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string(rv));
    event_add(f, "DELETED", path, o);
    json_decref(o);
    return 0;
}

int fakeapi_delete(FakeApi *f, const char *path) {
    pthread_mutex_lock(&f->lock);
    int r = delete_locked(f, path);
    pthread_mutex_unlock(&f->lock);
    return r;
}

static json_t *list_locked(FakeApi *f, const char *collection, const char *selector) {
    json_t *items = json_array(), *o;
    const char *path;
    char rv[32];

    json_object_foreach(f->objects, path, o) if (under(path, collection) && selected(o, selector))
        json_array_append(items, o);
    snprintf(rv, sizeof(rv), "%ld", f->rv);
    return json_pack("{s:s,s:s,s:{s:s},s:o}", "kind", "List", "apiVersion", "v1", "metadata",
                     "resourceVersion", rv, "items", items);
}

json_t *fakeapi_list(FakeApi *f, const char *collection) {
    pthread_mutex_lock(&f->lock);
    json_t *l = list_locked(f, collection, NULL);
    pthread_mutex_unlock(&f->lock);
    return l;
}

size_t fakeapi_count(FakeApi *f, const char *collection) {
    json_t *l = fakeapi_list(f, collection);
    size_t n = json_array_size(json_object_get(l, "items"));

    json_decref(l);
    return n;
}

void fakeapi_compact(FakeApi *f) {
    pthread_mutex_lock(&f->lock);
    f->rv++; /* as if writes elsewhere went by: every resourceVersion seen so far is too old */
    f->compacted = f->rv;
    pthread_mutex_unlock(&f->lock);
}

void fakeapi_end_watches(FakeApi *f) {
    pthread_mutex_lock(&f->lock);
    f->watch_epoch++;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}

void fakeapi_fail_next(FakeApi *f, const char *method, const char *prefix, unsigned n, int status) {
    pthread_mutex_lock(&f->lock);
    free(f->fail.method);
    free(f->fail.prefix);
    f->fail = (Failure){.method = method ? strdup(method) : NULL,
                        .prefix = strdup(prefix ? prefix : ""),
                        .n = n,
                        .status = status};
    pthread_mutex_unlock(&f->lock);
}

void fakeapi_set_token(FakeApi *f, const char *token) {
    pthread_mutex_lock(&f->lock);
    free(f->token);
    f->token = token ? strdup(token) : NULL;
    pthread_mutex_unlock(&f->lock);
}

unsigned fakeapi_requests(FakeApi *f, const char *method, const char *prefix) {
    unsigned n = 0;

    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n_log; i++)
        if ((!method || strcmp(method, f->log[i].method) == 0) &&
            strncmp(f->log[i].path, prefix, strlen(prefix)) == 0)
            n++;
    pthread_mutex_unlock(&f->lock);
    return n;
}

unsigned fakeapi_open_watches(FakeApi *f) {
    pthread_mutex_lock(&f->lock);
    unsigned n = f->open_watches;
    pthread_mutex_unlock(&f->lock);
    return n;
}

void fakeapi_last_auth(FakeApi *f, char *buf, size_t n) {
    pthread_mutex_lock(&f->lock);
    snprintf(buf, n, "%s", f->last_auth);
    pthread_mutex_unlock(&f->lock);
}

bool fakeapi_wait(FakeApi *f, bool (*fn)(FakeApi *, void *), void *arg, int timeout_ms) {
    int waited = 0, limit = wait_scaled_ms(timeout_ms);

    for (;;) {
        if (fn(f, arg))
            return true;
        if (waited >= limit)
            return false;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000L};
        nanosleep(&ts, NULL);
        waited += 10;
    }
}

/* ---- watch streams ---- */

typedef struct Watch {
    FakeApi *f;
    char *collection, *selector;
    long rv;
    size_t next; /* index into events of the next one to look at */
    unsigned epoch;
    time_t deadline;
    char *pending;
    size_t pending_len, pending_off;
    bool gone_sent, done;
} Watch;

static void watch_free(void *cls) {
    Watch *w = cls;

    pthread_mutex_lock(&w->f->lock);
    w->f->open_watches--;
    pthread_mutex_unlock(&w->f->lock);
    free(w->collection);
    free(w->selector);
    free(w->pending);
    free(w);
}

static char *event_line(const char *type, json_t *obj) {
    json_t *e = json_pack("{s:s,s:O}", "type", type, "object", obj);
    char *s = json_dumps(e, JSON_COMPACT);
    char *line = NULL;

    json_decref(e);
    if (s && asprintf(&line, "%s\n", s) < 0)
        line = NULL;
    free(s);
    return line;
}

/* The next line for w, or NULL when there is none yet. Lock held. */
static char *watch_next_locked(Watch *w) {
    if (w->rv < w->f->compacted && !w->gone_sent) {
        w->gone_sent = true;
        w->done = true;
        json_t *st = status_obj(410, "Expired", "too old resource version");
        char *l = event_line("ERROR", st);
        json_decref(st);
        return l;
    }
    /* events is a sliding window: find where rv left off */
    for (size_t i = 0; i < w->f->n_events; i++) {
        Event *e = &w->f->events[i];
        if (e->rv <= w->rv)
            continue;
        w->rv = e->rv;
        if (!under(e->path, w->collection) || !selected(e->obj, w->selector))
            continue;
        return event_line(e->type, e->obj);
    }
    return NULL;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max) {
    Watch *w = cls;
    FakeApi *f = w->f;

    if (w->pending && w->pending_off < w->pending_len) {
        size_t n = w->pending_len - w->pending_off;
        if (n > max)
            n = max;
        memcpy(buf, w->pending + w->pending_off, n);
        w->pending_off += n;
        return (ssize_t)n;
    }
    free(w->pending);
    w->pending = NULL;
    if (w->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        if (f->stopping || f->watch_epoch != w->epoch || time(NULL) >= w->deadline) {
            pthread_mutex_unlock(&f->lock);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        char *line = watch_next_locked(w);
        if (line) {
            pthread_mutex_unlock(&f->lock);
            w->pending = line;
            w->pending_len = strlen(line);
            w->pending_off = 0;
            return watch_read(cls, pos, buf, max);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&f->changed, &f->lock, &ts);
    }
}

static enum MHD_Result start_watch(FakeApi *f, struct MHD_Connection *c, const char *collection) {
    const char *rv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
    const char *to = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
    const char *sel = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");
    Watch *w = calloc(1, sizeof(*w));
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (!w)
        return MHD_NO;
    w->f = f;
    w->collection = strdup(collection);
    w->selector = sel ? strdup(sel) : NULL;
    w->rv = rv ? atol(rv) : 0;
    w->deadline = time(NULL) + (to ? atol(to) : 300);
    pthread_mutex_lock(&f->lock);
    if (!rv)
        w->rv = f->rv; /* no rv: from now (the test never relies on the initial state) */
    w->epoch = f->watch_epoch;
    f->open_watches++;
    pthread_mutex_unlock(&f->lock);
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_read, w, watch_free);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ---- requests ---- */

typedef struct Upload {
    char *data;
    size_t len;
    bool too_big;
} Upload;

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
    Upload *u = *con_cls;

    if (u) {
        free(u->data);
        free(u);
        *con_cls = NULL;
    }
}

static bool take_failure(FakeApi *f, const char *method, const char *url, int *ret_status) {
    bool hit = false;

    pthread_mutex_lock(&f->lock);
    if (f->fail.n > 0 && (!f->fail.method || strcmp(f->fail.method, method) == 0) &&
        strncmp(url, f->fail.prefix, strlen(f->fail.prefix)) == 0) {
        f->fail.n--;
        *ret_status = f->fail.status;
        hit = true;
    }
    pthread_mutex_unlock(&f->lock);
    return hit;
}

static void log_request(FakeApi *f, const char *method, const char *url) {
    Counter *l = realloc(f->log, sizeof(*l) * (f->n_log + 1));

    if (!l)
        return;
    f->log = l;
    f->log[f->n_log++] = (Counter){.method = strdup(method), .path = strdup(url)};
}

static enum MHD_Result do_create(FakeApi *f, struct MHD_Connection *c, const char *collection,
                                 json_t *body) {
    json_t *m = json_object_get(body, "metadata");
    json_t *name = json_object_get(m, "name"), *gen = json_object_get(m, "generateName");
    char path[1024], made[300];

    if (!json_is_object(m) || (!json_is_string(name) && !json_is_string(gen)))
        return fail(c, 422, "Invalid", "metadata.name or generateName is required");
    pthread_mutex_lock(&f->lock);
    if (!json_is_string(name)) {
        snprintf(made, sizeof(made), "%s%05lx", json_string_value(gen), ++f->uid_seq & 0xfffff);
        json_object_set_new(m, "name", json_string(made));
        name = json_object_get(m, "name");
    }
    if (snprintf(path, sizeof(path), "%s/%s", collection, json_string_value(name)) >=
        (int)sizeof(path)) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 422, "Invalid", "name too long");
    }
    if (json_object_get(f->objects, path)) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 409, "AlreadyExists", "already exists");
    }
    json_object_del(m, "resourceVersion");
    stamp(f, body, true);
    json_object_set(f->objects, path, body);
    event_add(f, "ADDED", path, body);
    json_t *copy = json_deep_copy(body);
    pthread_mutex_unlock(&f->lock);
    return reply(c, 201, copy);
}

/* next (taken) is the object at url now: stamped, stored, its event, and
 * the answer. Called with the lock held; releases it. */
static enum MHD_Result store_modified(FakeApi *f, struct MHD_Connection *c, const char *url,
                                      json_t *next) {
    stamp(f, next, false);
    json_object_set(f->objects, url, next);
    event_add(f, "MODIFIED", url, next);
    json_t *copy = json_deep_copy(next);
    json_decref(next);
    pthread_mutex_unlock(&f->lock);
    return reply(c, 200, copy);
}

static enum MHD_Result do_update(FakeApi *f, struct MHD_Connection *c, const char *url,
                                 json_t *body, bool merge) {
    pthread_mutex_lock(&f->lock);
    json_t *old = json_object_get(f->objects, url);
    if (!old) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 404, "NotFound", "not found");
    }
    json_t *want = field(body, "metadata.resourceVersion");
    json_t *have = field(old, "metadata.resourceVersion");
    if (!merge && json_is_string(want) && !json_equal(want, have)) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 409, "Conflict", "the object has been modified");
    }
    json_t *next = merge ? json_deep_copy(old) : json_incref(body);
    if (merge)
        json_object_update_recursive(next, body);
    json_t *uid = json_incref(field(old, "metadata.uid"));
    if (uid)
        json_object_set_new(json_object_get(next, "metadata"), "uid", uid);
    return store_modified(f, c, url, next);
}

static enum MHD_Result do_delete_collection(FakeApi *f, struct MHD_Connection *c,
                                            const char *collection) {
    const char *sel = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");

    pthread_mutex_lock(&f->lock);
    json_t *l = list_locked(f, collection, sel);
    json_t *items = json_object_get(l, "items"), *o;
    size_t i;
    json_array_foreach(items, i, o) {
        char path[1024];
        if (snprintf(path, sizeof(path), "%s/%s", collection,
                     json_string_value(field(o, "metadata.name"))) < (int)sizeof(path))
            delete_locked(f, path);
    }
    pthread_mutex_unlock(&f->lock);
    return reply(c, 200, l);
}

/* "driver/pool/device" of a status.devices entry, or NULL: not one. */
static char *device_key(json_t *e) {
    const char *d = json_string_value(json_object_get(e, "driver")),
               *p = json_string_value(json_object_get(e, "pool")),
               *n = json_string_value(json_object_get(e, "device"));
    char *k = NULL;

    return d && p && n && asprintf(&k, "%s/%s/%s", d, p, n) >= 0 ? k : NULL;
}

static bool key_in(json_t *keys, const char *k) {
    size_t i;
    json_t *v;

    json_array_foreach(keys, i, v) if (strcmp(json_string_value(v), k) == 0) return true;
    return false;
}

/* What the API server checks of an applied status.devices entry that the
 * DRA tests can get wrong: its device is one of the claim's allocation
 * results, and networkData has at most 16 IPs, each a CIDR. */
static const char *device_invalid(json_t *claim, json_t *e, const char *k) {
    json_t *results = field(claim, "status.allocation.devices.results"), *r, *ips, *ip;
    bool allocated = false;
    size_t i;

    json_array_foreach(results, i, r) {
        char *rk = device_key(r);
        allocated = allocated || (rk && strcmp(rk, k) == 0);
        free(rk);
    }
    if (!allocated)
        return "status.devices: not an allocated device";
    ips = field(e, "networkData.ips");
    if (ips && (!json_is_array(ips) || json_array_size(ips) > 16))
        return "status.devices.networkData.ips: at most 16";
    json_array_foreach(ips, i,
                       ip) if (!json_is_string(ip) ||
                               !strchr(json_string_value(ip),
                                       '/')) return "status.devices.networkData.ips: not a CIDR";
    return NULL;
}

/*
 * Server-side apply (application/apply-patch+yaml, ?fieldManager=), as far
 * as the DRA tests need it: status.devices is a map list keyed by driver,
 * pool and device; the manager's entries replace what it applied before
 * (those it applies no more go), other managers' stay; the applied
 * metadata.uid, when given, must be the object's (409).
 */
static enum MHD_Result do_apply(FakeApi *f, struct MHD_Connection *c, const char *url,
                                json_t *body) {
    const char *manager = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldManager");
    json_t *applied = field(body, "status.devices"), *uid = field(body, "metadata.uid"), *e;
    char owner[1200];
    const char *bad = NULL;
    size_t i;

    if (!manager || !*manager)
        return fail(c, 400, "BadRequest", "PATCH with apply patch requires fieldManager");
    if (applied && !json_is_array(applied))
        return fail(c, 422, "Invalid", "status.devices: not a list");
    snprintf(owner, sizeof(owner), "%s|%s", url, manager);
    pthread_mutex_lock(&f->lock);
    json_t *old = json_object_get(f->objects, url);
    if (!old) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 404, "NotFound", "not found");
    }
    if (uid && !json_equal(uid, field(old, "metadata.uid"))) {
        pthread_mutex_unlock(&f->lock);
        return fail(c, 409, "Conflict", "Precondition failed: UID in precondition does not match");
    }
    json_t *keys = json_array(), *mine = json_object_get(f->managed, owner), *next;
    json_array_foreach(applied, i, e) {
        char *k = device_key(e);
        bad = bad ? bad : !k ? "status.devices: driver, pool and device are required" : NULL;
        bad = bad ? bad : device_invalid(old, e, k);
        if (k)
            json_array_append_new(keys, json_string(k));
        free(k);
    }
    if (bad) {
        pthread_mutex_unlock(&f->lock);
        json_decref(keys);
        return fail(c, 422, "Invalid", bad);
    }
    next = json_deep_copy(old);
    json_t *status = json_object_get(next, "status"), *devices = json_array();
    json_array_foreach(field(next, "status.devices"), i, e) {
        char *k = device_key(e);
        if (k && !key_in(keys, k) && !(mine && key_in(mine, k)))
            json_array_append(devices, e);
        free(k);
    }
    json_array_foreach(applied, i, e) json_array_append(devices, e);
    if (json_array_size(devices) > 0)
        json_object_set_new(status, "devices", devices);
    else {
        json_object_del(status, "devices");
        json_decref(devices);
    }
    json_object_set_new(f->managed, owner, keys);
    return store_modified(f, c, url, next);
}

/* /api/v1/<plural>, /apis/<group>/<version>/<plural>, and their
 * /namespaces/<ns>/<plural>: a collection; one more segment: an object. */
static bool is_collection(const char *url) {
    char buf[1024], *save = NULL;
    size_t n = 0, skip;
    bool ns = false;

    snprintf(buf, sizeof(buf), "%s", url);
    skip = strncmp(url, "/apis/", 6) == 0 ? 3 : 2;
    for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save), n++)
        if (n == skip && strcmp(t, "namespaces") == 0)
            ns = true;
    n -= skip;
    return ns && n >= 2 ? n == 3 : n == 1; /* /api/v1/namespaces is a collection too */
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
    FakeApi *f = cls;
    Upload *u = *con_cls;
    int status;

    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (u->len + *upload_data_size > MAX_BODY)
            u->too_big = true;
        else {
            char *d = realloc(u->data, u->len + *upload_data_size + 1);
            if (!d)
                return MHD_NO;
            memcpy(d + u->len, upload_data, *upload_data_size);
            u->data = d;
            u->len += *upload_data_size;
            u->data[u->len] = 0;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }

    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    pthread_mutex_lock(&f->lock);
    log_request(f, method, url);
    snprintf(f->last_auth, sizeof(f->last_auth), "%s", auth ? auth : "");
    bool authorized = true;
    if (f->token) {
        char want[600];
        snprintf(want, sizeof(want), "Bearer %s", f->token);
        authorized = auth && strcmp(auth, want) == 0;
    }
    pthread_mutex_unlock(&f->lock);
    if (!authorized)
        return fail(c, 401, "Unauthorized", "Unauthorized");
    if (take_failure(f, method, url, &status))
        return fail(c, status, "InternalError", "injected failure");
    if (u->too_big)
        return fail(c, 413, "RequestEntityTooLarge", "too large");

    /* the status subresource is the object itself here */
    char object_url[1024];
    size_t ul = strlen(url);
    if (ul > 7 && ul < sizeof(object_url) && strcmp(url + ul - 7, "/status") == 0) {
        snprintf(object_url, sizeof(object_url), "%.*s", (int)(ul - 7), url);
        url = object_url;
    }
    json_t *body = NULL;
    if (u->len) {
        body = json_loadb(u->data, u->len, 0, NULL);
        if (!json_is_object(body)) {
            json_decref(body);
            return fail(c, 400, "BadRequest", "the body is not a JSON object");
        }
    }
    enum MHD_Result ret;
    if (strcmp(method, "GET") == 0) {
        const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
        if (watch && (strcmp(watch, "1") == 0 || strcmp(watch, "true") == 0))
            ret = start_watch(f, c, url);
        else {
            json_t *o = fakeapi_get(f, url);
            if (o)
                ret = reply(c, 200, o);
            else if (!is_collection(url))
                ret = fail(c, 404, "NotFound", "not found");
            else {
                const char *sel =
                    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");
                pthread_mutex_lock(&f->lock);
                json_t *l = list_locked(f, url, sel);
                pthread_mutex_unlock(&f->lock);
                ret = reply(c, 200, l);
            }
        }
    } else if (strcmp(method, "POST") == 0)
        ret = body ? do_create(f, c, url, body) : fail(c, 400, "BadRequest", "no body");
    else if (strcmp(method, "PUT") == 0)
        ret = body ? do_update(f, c, url, body, false) : fail(c, 400, "BadRequest", "no body");
    else if (strcmp(method, "PATCH") == 0 && body && ctype &&
             strncmp(ctype, "application/apply-patch", 23) == 0)
        ret = do_apply(f, c, url, body);
    else if (strcmp(method, "PATCH") == 0)
        ret = body ? do_update(f, c, url, body, true) : fail(c, 400, "BadRequest", "no body");
    else if (strcmp(method, "DELETE") == 0) {
        json_t *o = fakeapi_get(f, url);
        if (o) {
            fakeapi_delete(f, url);
            ret = reply(c, 200, o);
        } else
            ret = do_delete_collection(f, c, url);
    } else
        ret = fail(c, 405, "MethodNotAllowed", "method not allowed");
    json_decref(body);
    return ret;
}

int fakeapi_start(FakeApi **ret) {
    FakeApi *f = calloc(1, sizeof(*f));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};

    if (!f)
        return -ENOMEM;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    f->objects = json_object();
    f->managed = json_object();
    f->rv = 100;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, handle, f, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_done, f, MHD_OPTION_END);
    if (!f->d) {
        json_decref(f->objects);
        free(f);
        return -EADDRNOTAVAIL;
    }
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", (unsigned)i->port);
    *ret = f;
    return 0;
}

void fakeapi_stop(FakeApi *f) {
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->stopping = true;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    MHD_stop_daemon(f->d);
    for (size_t i = 0; i < f->n_events; i++) {
        free(f->events[i].path);
        free(f->events[i].type);
        json_decref(f->events[i].obj);
    }
    for (size_t i = 0; i < f->n_log; i++) {
        free(f->log[i].method);
        free(f->log[i].path);
    }
    free(f->log);
    free(f->fail.method);
    free(f->fail.prefix);
    free(f->token);
    json_decref(f->objects);
    json_decref(f->managed);
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const char *fakeapi_url(const FakeApi *f) {
    return f->url;
}

int fakeapi_write_kubeconfig(const FakeApi *f, const char *path, const char *token) {
    json_t *user = token ? json_pack("{s:s}", "token", token) : json_object();
    json_t *kc =
        json_pack("{s:s,s:s,s:[{s:s,s:{s:s}}],s:[{s:s,s:o}],s:[{s:s,s:{s:s,s:s}}],s:s}",
                  "apiVersion", "v1", "kind", "Config", "clusters", "name", "fake", "cluster",
                  "server", f->url, "users", "name", "u", "user", user, "contexts", "name", "c",
                  "context", "cluster", "fake", "user", "u", "current-context", "c");
    int r = kc && json_dump_file(kc, path, 0) == 0 ? 0 : -EIO;

    json_decref(kc);
    return r;
}
