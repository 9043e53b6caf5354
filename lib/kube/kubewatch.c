/* SPDX-License-Identifier: Apache-2.0 */
/* Watches and informers: a stream of events, and list+watch that never misses one. */
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

#include "kube-private.h"
#include "kubecurl.h"
#include "kubewatch.h"

typedef struct Stream {
    char *line;
    size_t len, cap, max;
    bool too_big, bad;
    int cb_result;
    kube_watch_fn fn;
    void *userdata;
    const atomic_bool *stop;
    RgError *err;
} Stream;

static int stream_line(Stream *s) {
    json_error_t je;
    json_t *ev, *type, *obj;
    int r;

    if (s->len == 0)
        return 0;
    ev = json_loadb(s->line, s->len, 0, &je);
    type = json_object_get(ev, "type");
    obj = json_object_get(ev, "object");
    if (!ev || !json_is_string(type) || !json_is_object(obj)) {
        json_decref(ev);
        s->bad = true;
        return rg_error(s->err, -EBADMSG, 0, "a watch event that is not one: %s",
                        ev ? "no type or object" : je.text);
    }
    r = s->fn(s->userdata, json_string_value(type), obj);
    json_decref(ev);
    return r;
}

static size_t stream_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
    Stream *s = userdata;
    size_t n = size * nmemb;

    for (size_t i = 0; i < n; i++) {
        if (ptr[i] == '\n') {
            int r = stream_line(s);
            s->len = 0;
            if (r < 0) {
                s->cb_result = r;
                return 0;
            }
            continue;
        }
        if (s->len + 2 > s->max) {
            s->too_big = true;
            return 0;
        }
        if (s->len + 2 > s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 4096;
            char *l = realloc(s->line, cap);
            if (!l) {
                s->cb_result = -ENOMEM;
                return 0;
            }
            s->line = l;
            s->cap = cap;
        }
        s->line[s->len++] = ptr[i];
        s->line[s->len] = 0;
    }
    return n;
}

static int stream_progress(void *userdata, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    Stream *s = userdata;

    return s->stop && atomic_load(s->stop) ? 1 : 0;
}

int kube_watch(KubeClient *k, const char *path, kube_watch_fn fn, void *userdata,
               const atomic_bool *stop, RgError *err) {
    _cleanup_free_ char *url = NULL, *token = NULL;
    struct curl_slist *headers = NULL;
    char detail[CURL_ERROR_SIZE] = "";
    Stream s = {.max = k->max_body, .fn = fn, .userdata = userdata, .stop = stop, .err = err};
    long status = 0;
    CURL *c;
    CURLcode cc;
    int r;

    r = kube_token(k, false, &token, err);
    if (r < 0)
        return r;
    if (asprintf(&url, "%s%s", k->server, path) < 0) {
        url = NULL;
        return -ENOMEM;
    }
    c = kube_curl.easy_init();
    if (!c)
        return -ENOMEM;
    r = kube_setup_handle(k, c, token, (void **)&headers);
    if (r < 0) {
        kube_curl.slist_free_all(headers);
        kube_curl.easy_cleanup(c);
        return rg_error(err, r, 0, "GET %s: cannot set up the watch", path);
    }
    kube_curl.easy_setopt(c, CURLOPT_URL, url);
    kube_curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
    kube_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    kube_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
    kube_curl.easy_setopt(c, CURLOPT_WRITEDATA, &s);
    kube_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    kube_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stream_progress);
    kube_curl.easy_setopt(c, CURLOPT_XFERINFODATA, &s);
    kube_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    cc = kube_curl.easy_perform(c);
    kube_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    kube_curl.easy_cleanup(c);
    kube_curl.slist_free_all(headers);
    if (cc == CURLE_OK && status >= 200 && status <= 299 && s.len > 0 && s.cb_result >= 0)
        s.cb_result = stream_line(&s); /* a last event without its newline */
    if (s.cb_result < 0) {
        free(s.line);
        return s.cb_result;
    }
    if (s.too_big) {
        free(s.line);
        return rg_error(err, -EFBIG, 0, "GET %.*s: a watch event is over %zu bytes",
                        (int)strcspn(path, "?"), path, s.max);
    }
    if (status != 0 && (status < 200 || status > 299)) {
        r = kube_status_error("GET", path, status, s.line, s.len, err);
        free(s.line);
        return r;
    }
    free(s.line);
    if (cc != CURLE_OK)
        return kube_curl_error("GET", path, cc, detail, err);
    return 0;
}

/* ---- list + watch ---- */

static const char *resource_version(json_t *obj) {
    json_t *rv = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");

    return json_is_string(rv) ? json_string_value(rv) : NULL;
}

typedef struct WatchState {
    KubeInformer *inf;
    char rv[64];
    bool gone; /* an ERROR event with 410: the resourceVersion is too old */
} WatchState;

static int on_event(void *userdata, const char *type, json_t *obj) {
    WatchState *w = userdata;
    const char *rv = resource_version(obj);

    if (streq(type, "ERROR")) {
        json_t *code = json_object_get(obj, "code");
        if (json_integer_value(code) == 410) {
            w->gone = true;
            return -ESTALE;
        }
        json_t *m = json_object_get(obj, "message");
        return rg_error(w->inf->err, -EIO, (int)json_integer_value(code), "watch error: %.300s",
                        json_is_string(m) ? json_string_value(m) : "(no message)");
    }
    if (rv && strlen(rv) < sizeof(w->rv))
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
    if (streq(type, "BOOKMARK"))
        return 0;
    return w->inf->event ? w->inf->event(w->inf->userdata, type, obj) : 0;
}

static int list(KubeInformer *inf, WatchState *w) {
    _cleanup_free_ char *path = NULL;
    json_t *l = NULL;
    int r;

    if (asprintf(&path, "%s%s%s", inf->path, inf->query ? "?" : "", inf->query ? inf->query : "") <
        0)
        return -ENOMEM;
    r = kube_get(inf->client, path, &l, inf->err);
    if (r < 0)
        return r;
    inf->lists++;
    const char *rv = resource_version(l);
    json_t *items = json_object_get(l, "items");
    if (!rv || strlen(rv) >= sizeof(w->rv) || !json_is_array(items)) {
        json_decref(l);
        return rg_error(inf->err, -EBADMSG, 0, "GET %s: a list without items or resourceVersion",
                        inf->path);
    }
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
    r = inf->relisted ? inf->relisted(inf->userdata, items) : 0;
    json_decref(l);
    return r;
}

static int watch(KubeInformer *inf, WatchState *w) {
    _cleanup_free_ char *path = NULL, *rv = kube_escape(w->rv);

    if (!rv || asprintf(&path,
                        "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u&"
                        "resourceVersion=%s%s%s",
                        inf->path, inf->watch_timeout_s ? inf->watch_timeout_s : 300, rv,
                        inf->query ? "&" : "", inf->query ? inf->query : "") < 0)
        return -ENOMEM;
    inf->watches++;
    return kube_watch(inf->client, path, on_event, w, inf->stop, inf->err);
}

static bool stopped(const KubeInformer *inf) {
    return inf->stop && atomic_load(inf->stop);
}

/* Sleep ms in steps, waking early when stopped. */
static void nap(const KubeInformer *inf, unsigned ms) {
    while (ms > 0 && !stopped(inf)) {
        unsigned step = ms < 50 ? ms : 50;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

unsigned kube_backoff_next(unsigned *backoff_ms, unsigned min_ms, unsigned max_ms) {
    unsigned b = *backoff_ms ? *backoff_ms : min_ms, j = 0;

    *backoff_ms = b >= max_ms / 2 ? max_ms : b * 2;
    if (getrandom(&j, sizeof(j), GRND_NONBLOCK) != sizeof(j))
        j = (unsigned)time(NULL);
    /* full jitter over the upper half: [b/2, b] */
    return b / 2 + (b / 2 ? j % (b / 2 + 1) : 0);
}

int kube_informer_run(KubeInformer *inf) {
    WatchState w = {.inf = inf};
    unsigned backoff = 0;
    unsigned min_ms = inf->backoff_min_ms ? inf->backoff_min_ms : 500;
    unsigned max_ms = inf->backoff_max_ms ? inf->backoff_max_ms : 30000;
    bool listed = false;
    int r;

    while (!stopped(inf)) {
        if (!listed) {
            r = list(inf, &w);
            if (r < 0) {
                if (inf->failed)
                    inf->failed(inf->userdata, r, inf->err);
                nap(inf, kube_backoff_next(&backoff, min_ms, max_ms));
                continue;
            }
            listed = true;
        }
        w.gone = false;
        r = watch(inf, &w);
        if (r == -ECANCELED && stopped(inf))
            break;
        if (w.gone || r == -ESTALE) {
            /* 410 Gone: the resourceVersion is compacted away; list again */
            listed = false;
            continue;
        }
        if (r < 0) {
            if (inf->failed)
                inf->failed(inf->userdata, r, inf->err);
            listed = false;
            nap(inf, kube_backoff_next(&backoff, min_ms, max_ms));
            continue;
        }
        backoff = 0; /* the server ended the watch (timeoutSeconds): go on from rv */
    }
    return 0;
}
