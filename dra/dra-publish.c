/* SPDX-License-Identifier: Apache-2.0 */
/* Keeping the node's ResourceSlices as they should be, against kubelet's wipes and everyone else.
 */
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "dra-slices.h"
#include "kubewatch.h"
#include "log.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

struct SlicePublisher {
    KubeClient *kube;
    const Inventory *inv;
    char driver[64];
    char node[254];
    char node_uid[64];
    char *query;
    pthread_t thread;
    bool started;
    atomic_bool stop;

    pthread_mutex_t lock; /* everything below */
    json_t *observed;     /* name -> our slice as last seen or written */
    bool listed;          /* observed comes from a list: safe to create */
    bool *healthy;
    char **reasons;
    int64_t generation; /* of the pool as we last wrote or found it */
    bool pending;       /* a reconcile is due */
    uint64_t retry_at_ms;
    unsigned backoff_ms;
    RgError err;
    SliceStats stats;
};

static const char *name_of(json_t *obj) {
    json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");

    return json_is_string(n) ? json_string_value(n) : NULL;
}

static json_t *spec_get(json_t *slice, const char *a, const char *b) {
    json_t *v = json_object_get(json_object_get(slice, "spec"), a);

    return b ? json_object_get(v, b) : v;
}

/* Is got (from the API server) the device we want? Only what we set
 * counts: the server adds defaults and a taint's timeAdded. */
static bool device_same(json_t *want, json_t *got) {
    json_t *wt = json_object_get(want, "taints"), *gt = json_object_get(got, "taints");

    if (!json_equal(json_object_get(want, "name"), json_object_get(got, "name")) ||
        !json_equal(json_object_get(want, "attributes"), json_object_get(got, "attributes")) ||
        json_array_size(wt) != json_array_size(gt))
        return false;
    for (size_t i = 0; i < json_array_size(wt); i++) {
        json_t *w = json_array_get(wt, i), *g = json_array_get(gt, i);
        static const char *const keys[] = {"key", "value", "effect"};
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
            if (!json_equal(json_object_get(w, keys[k]), json_object_get(g, keys[k])))
                return false;
    }
    return true;
}

static bool chunk_same(json_t *devices, size_t index, json_t *got) {
    size_t first = index * DRA_SLICE_MAX_DEVICES, n = json_array_size(devices);
    size_t want = n - first < DRA_SLICE_MAX_DEVICES ? n - first : DRA_SLICE_MAX_DEVICES;

    if (n == 0)
        want = 0;
    if (json_array_size(got) != want)
        return false;
    for (size_t i = 0; i < want; i++)
        if (!device_same(json_array_get(devices, first + i), json_array_get(got, i)))
            return false;
    return true;
}

/* Do the observed slices say what devices says, as one complete pool? */
static bool in_sync(SlicePublisher *p, json_t *devices, int64_t *ret_gen) {
    size_t count = dra_slice_count(json_array_size(devices)), matched = 0;
    int64_t gen = -1;
    const char *name;
    json_t *s;

    if (json_object_size(p->observed) != count)
        return false;
    for (size_t i = 0; i < count; i++)
        json_object_foreach(p->observed, name, s) {
            int64_t g = json_integer_value(spec_get(s, "pool", "generation"));
            if (json_integer_value(spec_get(s, "pool", "resourceSliceCount")) != (json_int_t)count)
                return false;
            if (gen >= 0 && g != gen)
                return false;
            gen = g;
            if (chunk_same(devices, i, spec_get(s, "devices", NULL))) {
                matched++;
                break;
            }
        }
    *ret_gen = gen;
    return matched == count && gen >= p->generation;
}

static int64_t max_generation(SlicePublisher *p) {
    int64_t g = p->generation;
    const char *name;
    json_t *s;

    json_object_foreach(p->observed, name, s) {
        int64_t o = json_integer_value(spec_get(s, "pool", "generation"));
        if (o > g)
            g = o;
    }
    return g;
}

static SliceInput input(SlicePublisher *p) {
    return (SliceInput){.inv = p->inv,
                        .driver = p->driver,
                        .node = p->node,
                        .node_uid = p->node_uid,
                        .healthy = p->healthy,
                        .reasons = (const char *const *)p->reasons};
}

/* Write every slice of the pool at generation gen: update what there is,
 * create what is missing, delete what is left over. */
static int write_pool(SlicePublisher *p, json_t *devices, int64_t gen) {
    SliceInput in = input(p);
    size_t count = dra_slice_count(json_array_size(devices));
    json_t *left = json_array(), *s;
    const char *key;
    int r = 0;

    json_object_foreach(p->observed, key, s) json_array_append_new(left, json_string(key));
    for (size_t i = 0; i < count && r >= 0; i++) {
        json_t *spec = dra_slice_spec(&in, devices, i, gen), *obj, *got = NULL;
        _cleanup_free_ char *path = NULL;
        if (!spec) {
            r = -ENOMEM;
            break;
        }
        if (json_array_size(left) > 0) {
            const char *name = json_string_value(json_array_get(left, 0));
            obj = json_deep_copy(json_object_get(p->observed, name));
            json_object_set_new(obj, "spec", spec);
            if (asprintf(&path, DRA_SLICES_PATH "/%s", name) < 0)
                path = NULL;
            r = path ? kube_request(p->kube, "PUT", path, NULL, obj, &got, &p->err) : -ENOMEM;
            if (r >= 0)
                p->stats.updates++;
            json_array_remove(left, 0);
        } else {
            obj = dra_slice_object(&in, spec);
            r = obj ? kube_request(p->kube, "POST", DRA_SLICES_PATH, NULL, obj, &got, &p->err)
                    : -ENOMEM;
            if (r >= 0)
                p->stats.creates++;
            json_decref(spec);
        }
        json_decref(obj);
        /* what we wrote is what we know: the next event or reconcile must
         * not take the slice for missing and make it twice */
        if (r >= 0 && name_of(got))
            json_object_set(p->observed, name_of(got), got);
        json_decref(got);
    }
    for (size_t i = 0; i < json_array_size(left) && r >= 0; i++) {
        const char *name = json_string_value(json_array_get(left, i));
        json_t *m = json_object_get(json_object_get(p->observed, name), "metadata");
        json_t *opts = json_pack("{s:s,s:s,s:{s:O,s:O}}", "apiVersion", "v1", "kind",
                                 "DeleteOptions", "preconditions", "uid", json_object_get(m, "uid"),
                                 "resourceVersion", json_object_get(m, "resourceVersion"));
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, DRA_SLICES_PATH "/%s", name) < 0)
            path = NULL;
        r = path && opts ? kube_request(p->kube, "DELETE", path, NULL, opts, NULL, &p->err)
                         : -ENOMEM;
        if (r == -ENOENT)
            r = 0;
        json_decref(opts);
        if (r >= 0) {
            p->stats.deletes++;
            json_object_del(p->observed, name);
        }
    }
    json_decref(left);
    return r;
}

static void reconcile_locked(SlicePublisher *p) {
    SliceInput in = input(p);
    json_t *devices;
    int64_t gen;
    int r;

    if (!p->listed || clock_monotonic_ms() < p->retry_at_ms)
        return;
    devices = dra_slice_devices(&in);
    if (!devices)
        return;
    if (in_sync(p, devices, &gen)) {
        p->generation = gen;
        p->pending = false;
        p->stats.in_sync = true;
        p->stats.generation = gen;
        json_decref(devices);
        return;
    }
    gen = max_generation(p) + 1;
    r = write_pool(p, devices, gen);
    json_decref(devices);
    p->stats.in_sync = false;
    if (r < 0) {
        p->stats.failures++;
        p->retry_at_ms = clock_monotonic_ms() +
                         (p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS);
        if (p->backoff_ms > BACKOFF_MAX_MS)
            p->backoff_ms = BACKOFF_MAX_MS;
        p->pending = true;
        log_warn(NULL, NULL, "ResourceSlices of %s not published (retry in %u ms): %s", p->node,
                 p->backoff_ms, p->err.msg);
        return;
    }
    p->backoff_ms = 0;
    p->retry_at_ms = 0;
    p->generation = gen;
    p->stats.generation = gen;
    p->pending = false;
    log_info(NULL, NULL, "ResourceSlices of %s published: pool generation %lld, %zu units", p->node,
             (long long)gen, p->inv->n_units);
}

/* ---- the informer's callbacks (its thread) ---- */

static bool ours(SlicePublisher *p, json_t *obj) {
    json_t *d = spec_get(obj, "driver", NULL), *n = spec_get(obj, "nodeName", NULL);

    return json_is_string(d) && streq(json_string_value(d), p->driver) && json_is_string(n) &&
           streq(json_string_value(n), p->node) && name_of(obj);
}

static int on_relisted(void *userdata, json_t *items) {
    SlicePublisher *p = userdata;
    size_t i;
    json_t *o;

    pthread_mutex_lock(&p->lock);
    json_object_clear(p->observed);
    json_array_foreach(items, i, o) if (ours(p, o)) json_object_set(p->observed, name_of(o), o);
    p->listed = true;
    p->pending = true;
    p->stats.lists++;
    reconcile_locked(p);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* resourceVersions are opaque, but etcd's are numbers: an event older than
 * what a write of ours returned does not take its place */
static bool older(json_t *a, json_t *b) {
    json_t *ra = json_object_get(json_object_get(a, "metadata"), "resourceVersion");
    json_t *rb = json_object_get(json_object_get(b, "metadata"), "resourceVersion");
    char *ea, *eb;

    if (!json_is_string(ra) || !json_is_string(rb))
        return false;
    unsigned long long x = strtoull(json_string_value(ra), &ea, 10);
    unsigned long long y = strtoull(json_string_value(rb), &eb, 10);
    return !*ea && !*eb && x < y;
}

static int on_event(void *userdata, const char *type, json_t *obj) {
    SlicePublisher *p = userdata;

    if (!ours(p, obj))
        return 0;
    pthread_mutex_lock(&p->lock);
    json_t *had = json_object_get(p->observed, name_of(obj));
    if (streq(type, "DELETED"))
        json_object_del(p->observed, name_of(obj));
    else if (!had || !older(obj, had))
        json_object_set(p->observed, name_of(obj), obj);
    p->pending = true;
    reconcile_locked(p);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

static void on_failed(void *userdata, int r, const RgError *err) {
    SlicePublisher *p = userdata;

    pthread_mutex_lock(&p->lock);
    p->stats.failures++;
    pthread_mutex_unlock(&p->lock);
    log_warn(NULL, NULL, "watching the ResourceSlices of %s: %s", p->node, err->msg);
}

static void fetch_node_uid(SlicePublisher *p) {
    _cleanup_free_ char *path = NULL;
    RgError err = {0};
    json_t *node = NULL;

    if (asprintf(&path, "/api/v1/nodes/%s", p->node) < 0)
        return;
    if (kube_get(p->kube, path, &node, &err) < 0) {
        log_warn(NULL, NULL, "slices without an owner (node %s not read: %s)", p->node, err.msg);
        return;
    }
    json_t *uid = json_object_get(json_object_get(node, "metadata"), "uid");
    if (json_is_string(uid))
        snprintf(p->node_uid, sizeof(p->node_uid), "%s", json_string_value(uid));
    json_decref(node);
}

static void *run(void *arg) {
    SlicePublisher *p = arg;
    RgError err = {0};
    KubeInformer inf = {.client = p->kube,
                        .path = DRA_SLICES_PATH,
                        .query = p->query,
                        .relisted = on_relisted,
                        .event = on_event,
                        .failed = on_failed,
                        .userdata = p,
                        .stop = &p->stop,
                        .backoff_min_ms = BACKOFF_MIN_MS,
                        .backoff_max_ms = BACKOFF_MAX_MS,
                        .err = &err};

    fetch_node_uid(p);
    kube_informer_run(&inf);
    return NULL;
}

int slice_publisher_start(KubeClient *kube, const Inventory *inv, const char *driver,
                          const char *node, SlicePublisher **ret) {
    SlicePublisher *p = calloc(1, sizeof(*p));
    _cleanup_free_ char *sel = NULL, *esc = NULL;
    int r;

    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->kube = kube;
    p->inv = inv;
    snprintf(p->driver, sizeof(p->driver), "%s", driver);
    snprintf(p->node, sizeof(p->node), "%s", node);
    p->observed = json_object();
    p->healthy = calloc(inv->n_units ? inv->n_units : 1, sizeof(bool));
    p->reasons = calloc(inv->n_units ? inv->n_units : 1, sizeof(char *));
    r = asprintf(&sel, "spec.driver=%s,spec.nodeName=%s", driver, node) < 0 ? -ENOMEM : 0;
    if (r < 0)
        sel = NULL;
    if (r >= 0 && (!(esc = kube_escape(sel)) || asprintf(&p->query, "fieldSelector=%s", esc) < 0))
        r = -ENOMEM;
    if (r >= 0 && (!p->observed || !p->healthy || !p->reasons))
        r = -ENOMEM;
    for (size_t i = 0; r >= 0 && i < inv->n_units; i++)
        p->healthy[i] = true;
    if (r >= 0)
        r = -pthread_create(&p->thread, NULL, run, p);
    if (r < 0) {
        slice_publisher_stop(p);
        return r;
    }
    (void)pthread_setname_np(p->thread, "rg-dra-slices");
    p->started = true;
    *ret = p;
    return 0;
}

void slice_publisher_set_health(SlicePublisher *p, const bool *healthy,
                                const char *const *reasons) {
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->inv->n_units; i++) {
        const char *why = healthy[i] ? NULL : (reasons && reasons[i] ? reasons[i] : "unhealthy");
        if (p->healthy[i] == healthy[i] && streq_ptr(p->reasons[i], why))
            continue;
        p->healthy[i] = healthy[i];
        free(p->reasons[i]);
        p->reasons[i] = why ? strdup(why) : NULL;
        p->pending = true;
    }
    pthread_mutex_unlock(&p->lock);
}

void slice_publisher_tick(SlicePublisher *p) {
    pthread_mutex_lock(&p->lock);
    if (p->pending)
        reconcile_locked(p);
    pthread_mutex_unlock(&p->lock);
}

void slice_publisher_stats(SlicePublisher *p, SliceStats *ret) {
    pthread_mutex_lock(&p->lock);
    *ret = p->stats;
    pthread_mutex_unlock(&p->lock);
}

void slice_publisher_stop(SlicePublisher *p) {
    if (!p)
        return;
    atomic_store(&p->stop, true);
    if (p->started)
        pthread_join(p->thread, NULL);
    for (size_t i = 0; p->reasons && i < p->inv->n_units; i++)
        free(p->reasons[i]);
    free(p->reasons);
    free(p->healthy);
    json_decref(p->observed);
    free(p->query);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
