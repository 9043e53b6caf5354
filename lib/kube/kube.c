/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to the API server: one JSON in, one JSON out, errors with the Status. */
#include <stdio.h>

#include "kube-private.h"
#include "kubecurl.h"

typedef struct Body {
    char *data;
    size_t len, cap, max;
    bool too_big;
} Body;

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
    Body *b = userdata;
    size_t n = size * nmemb;

    if (b->len + n > b->max) {
        b->too_big = true;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

static int set_blob(CURL *c, CURLoption file_opt, CURLoption blob_opt, const KubeBlob *b) {
    if (b->data) {
        struct curl_blob blob = {.data = b->data, .len = b->len, .flags = CURL_BLOB_COPY};
        return kube_curl.easy_setopt(c, blob_opt, &blob) == CURLE_OK ? 0 : -EINVAL;
    }
    if (b->file)
        return kube_curl.easy_setopt(c, file_opt, b->file) == CURLE_OK ? 0 : -EINVAL;
    return 0;
}

int kube_setup_handle(KubeClient *k, void *handle, const char *token, void **headers) {
    CURL *c = handle;
    struct curl_slist **h = (struct curl_slist **)headers, *n;
    _cleanup_free_ char *auth = NULL;
    int r = 0;

    kube_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    kube_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    kube_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    /* never through a proxy from the environment: the API server is ours to reach */
    kube_curl.easy_setopt(c, CURLOPT_PROXY, "");
    kube_curl.easy_setopt(c, CURLOPT_NOPROXY, "*");
    kube_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    kube_curl.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    kube_curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    kube_curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    r = r ?: set_blob(c, CURLOPT_CAINFO, CURLOPT_CAINFO_BLOB, &k->ca);
    r = r ?: set_blob(c, CURLOPT_SSLCERT, CURLOPT_SSLCERT_BLOB, &k->cert);
    r = r ?: set_blob(c, CURLOPT_SSLKEY, CURLOPT_SSLKEY_BLOB, &k->key);
    if (r < 0)
        return r;
    n = kube_curl.slist_append(*h, "Accept: application/json");
    if (!n)
        return -ENOMEM;
    *h = n;
    if (token) {
        if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
            auth = NULL;
            return -ENOMEM;
        }
        n = kube_curl.slist_append(*h, auth);
        if (!n)
            return -ENOMEM;
        *h = n;
    }
    return 0;
}

static const char *reason_of(long status) {
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "";
    }
}

int kube_status_error(const char *method, const char *path, long status, const char *body,
                      size_t len, RgError *err) {
    int r = status == 404                    ? -ENOENT
            : status == 409                  ? -EEXIST
            : status == 410                  ? -ESTALE
            : status == 401 || status == 403 ? -EACCES
            : status == 400 || status == 422 ? -EINVAL
            : status == 429                  ? -EAGAIN
                                             : -EIO;
    json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *m = json_object_get(st, "message");
    const char *msg = json_is_string(m) ? json_string_value(m) : "";

    /* the path without its query: the message stays short and names the object */
    rg_error(err, r, (int)status, "%s %.*s: %ld %s%s%.300s", method, (int)strcspn(path, "?"), path,
             status, reason_of(status), *msg ? ": " : "", msg);
    json_decref(st);
    return r;
}

int kube_curl_error(const char *method, const char *path, int code, const char *detail,
                    RgError *err) {
    int r = code == CURLE_OPERATION_TIMEDOUT     ? -ETIMEDOUT
            : code == CURLE_COULDNT_CONNECT      ? -ECONNREFUSED
            : code == CURLE_COULDNT_RESOLVE_HOST ? -ECONNREFUSED
            : code == CURLE_OUT_OF_MEMORY        ? -ENOMEM
            : code == CURLE_ABORTED_BY_CALLBACK  ? -ECANCELED
                                                 : -EIO;

    return rg_error(err, r, 0, "%s %.*s: %s", method, (int)strcspn(path, "?"), path,
                    detail && *detail ? detail : kube_curl.easy_strerror((CURLcode)code));
}

static int perform(KubeClient *k, CURL *c, const char *method, const char *path,
                   const char *content_type, const char *payload, const char *token, Body *b,
                   long *ret_status, RgError *err) {
    _cleanup_free_ char *url = NULL, *ct = NULL;
    struct curl_slist *headers = NULL;
    char detail[CURL_ERROR_SIZE] = "";
    CURLcode cc;
    int r;

    if (asprintf(&url, "%s%s", k->server, path) < 0)
        return -ENOMEM;
    kube_curl.easy_reset(c);
    r = kube_setup_handle(k, c, token, (void **)&headers);
    if (r >= 0 && payload) {
        if (asprintf(&ct, "Content-Type: %s", content_type ? content_type : "application/json") <
            0) {
            ct = NULL;
            r = -ENOMEM;
        } else {
            struct curl_slist *n = kube_curl.slist_append(headers, ct);
            r = n ? 0 : -ENOMEM;
            if (n)
                headers = n;
        }
    }
    if (r < 0) {
        kube_curl.slist_free_all(headers);
        return rg_error(err, r, 0, "%s %s: cannot set up the request", method, path);
    }
    kube_curl.easy_setopt(c, CURLOPT_URL, url);
    kube_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (streq(method, "GET"))
        kube_curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (payload) {
        kube_curl.easy_setopt(c, CURLOPT_POSTFIELDS, payload);
        kube_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    }
    kube_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    kube_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, k->timeout_ms);
    kube_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
    kube_curl.easy_setopt(c, CURLOPT_WRITEDATA, b);
    kube_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    cc = kube_curl.easy_perform(c);
    kube_curl.easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    kube_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    kube_curl.slist_free_all(headers);
    if (b->too_big)
        return rg_error(err, -EFBIG, 0, "%s %.*s: the answer is over %zu bytes", method,
                        (int)strcspn(path, "?"), path, b->max);
    if (cc != CURLE_OK)
        return kube_curl_error(method, path, cc, detail, err);
    kube_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
    return 0;
}

int kube_request(KubeClient *k, const char *method, const char *path, const char *content_type,
                 json_t *body, json_t **ret, RgError *err) {
    _cleanup_free_ char *payload = NULL;
    long status = 0;
    int r;

    if (body && !(payload = json_dumps(body, JSON_COMPACT)))
        return -ENOMEM;
    for (int attempt = 0;; attempt++) {
        _cleanup_free_ char *token = NULL;
        Body b = {.max = k->max_body};

        /* a 401 may be a token rotated under us: once more with the file read again */
        r = kube_token(k, attempt > 0, &token, err);
        if (r < 0)
            return r;
        bool shared = pthread_mutex_trylock(&k->curl_lock) == 0;
        CURL *c = shared ? k->curl : NULL;
        if (!c)
            c = kube_curl.easy_init();
        if (shared)
            k->curl = c;
        r = c ? perform(k, c, method, path, content_type, payload, token, &b, &status, err)
              : -ENOMEM;
        if (shared)
            pthread_mutex_unlock(&k->curl_lock);
        else if (c)
            kube_curl.easy_cleanup(c);
        if (r < 0) {
            free(b.data);
            return r;
        }
        if (status == 401 && attempt == 0 && k->token_file) {
            free(b.data);
            continue;
        }
        if (status < 200 || status > 299) {
            r = kube_status_error(method, path, status, b.data, b.len, err);
            free(b.data);
            return r;
        }
        json_t *j = NULL;
        if (b.len > 0) {
            json_error_t je;
            j = json_loadb(b.data, b.len, 0, &je);
            free(b.data);
            if (!j)
                return rg_error(err, -EBADMSG, (int)status, "%s %.*s: the answer is not JSON: %s",
                                method, (int)strcspn(path, "?"), path, je.text);
        }
        if (ret)
            *ret = j;
        else
            json_decref(j);
        return 0;
    }
}

char *kube_escape(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *o = out;

    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~')
            *o++ = (char)*p;
        else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = 0;
    return out;
}
