/* SPDX-License-Identifier: Apache-2.0 */
/* Where the API server is and who we are: in-cluster or a JSON kubeconfig. */
#include <stdio.h>
#include <sys/stat.h>

#include "fileio.h"
#include "jsonread.h"
#include "kube-private.h"
#include "kubecurl.h"

int kube_client_alloc(KubeClient **ret, RgError *err) {
    KubeClient *k;
    int r;

    r = kube_curl_load(err);
    if (r < 0)
        return r;
    k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    pthread_mutex_init(&k->lock, NULL);
    pthread_mutex_init(&k->curl_lock, NULL);
    k->timeout_ms = KUBE_DEFAULT_TIMEOUT_MS;
    k->max_body = KUBE_DEFAULT_MAX_BODY;
    *ret = k;
    return 0;
}

static void blob_done(KubeBlob *b) {
    free(b->file);
    free(b->data);
}

void kube_client_free(KubeClient *k) {
    if (!k)
        return;
    if (k->curl)
        kube_curl.easy_cleanup(k->curl);
    free(k->server);
    blob_done(&k->ca);
    blob_done(&k->cert);
    blob_done(&k->key);
    free(k->static_token);
    free(k->token_file);
    free(k->token);
    pthread_mutex_destroy(&k->lock);
    pthread_mutex_destroy(&k->curl_lock);
    free(k);
}

void kube_client_set_timeout(KubeClient *k, long timeout_ms) {
    k->timeout_ms = timeout_ms > 0 ? timeout_ms : KUBE_DEFAULT_TIMEOUT_MS;
}

void kube_client_set_max_body(KubeClient *k, size_t max_body) {
    k->max_body = max_body > 0 ? max_body : KUBE_DEFAULT_MAX_BODY;
}

const char *kube_client_server(const KubeClient *k) {
    return k->server;
}

/* A bearer token goes into a header: printable ASCII only (a newline in it
 * would add a header of the file's choosing). Trailing whitespace is cut. */
static int token_clean(char *t, const char *what, RgError *err) {
    size_t n = strlen(t);

    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = 0;
    if (n == 0)
        return rg_error(err, -EINVAL, 0, "%s: the token is empty", what);
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0x21 || t[i] > 0x7e)
            return rg_error(err, -EINVAL, 0, "%s: the token holds a byte that is not printable",
                            what);
    return 0;
}

static time_t mono_s(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static int token_reread_locked(KubeClient *k, bool force, RgError *err) {
    _cleanup_free_ char *t = NULL;
    struct stat st;
    int r;

    if (stat(k->token_file, &st) < 0)
        return rg_error(err, -errno, 0, "%s: %s", k->token_file, strerror(errno));
    if (!force && k->token && st.st_mtim.tv_sec == k->token_mtime.tv_sec &&
        st.st_mtim.tv_nsec == k->token_mtime.tv_nsec &&
        mono_s() - k->token_read_at < KUBE_TOKEN_REREAD_S)
        return 0;
    /* a projected token is a symlink into a ..data dir that the kubelet swaps */
    r = fileio_read_file(k->token_file, KUBE_MAX_CONFIG, &t, NULL);
    if (r < 0)
        return rg_error(err, r, 0, "%s: %s", k->token_file, strerror(-r));
    r = token_clean(t, k->token_file, err);
    if (r < 0)
        return r;
    free(k->token);
    k->token = TAKE_PTR(t);
    k->token_mtime = st.st_mtim;
    k->token_read_at = mono_s();
    return 0;
}

/* The token a new client starts with, when it has a token file. */
static int token_first(KubeClient *k, RgError *err) {
    int r;

    if (!k->token_file)
        return 0;
    pthread_mutex_lock(&k->lock);
    r = token_reread_locked(k, true, err);
    pthread_mutex_unlock(&k->lock);
    return r;
}

int kube_token(KubeClient *k, bool force, char **ret, RgError *err) {
    int r = 0;

    pthread_mutex_lock(&k->lock);
    if (k->token_file)
        r = token_reread_locked(k, force, err);
    char *t = NULL;
    if (r >= 0 && k->token && !(t = strdup(k->token)))
        r = -ENOMEM;
    pthread_mutex_unlock(&k->lock);
    if (r < 0 && k->token_file && k->token && !force) {
        /* the file is briefly gone while the kubelet swaps it: keep the last one */
        pthread_mutex_lock(&k->lock);
        t = strdup(k->token);
        pthread_mutex_unlock(&k->lock);
        r = t ? 0 : -ENOMEM;
    }
    if (r < 0)
        return r;
    *ret = t;
    return 0;
}

/* ---- in-cluster ---- */

static bool valid_host(const char *h) {
    return *h && strlen(h) <= 253 && all_chars(h, strlen(h), ".-:", true);
}

int kube_client_in_cluster(const char *sa_dir, KubeClient **ret, RgError *err) {
    _cleanup_(kube_client_freep) KubeClient *k = NULL;
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    char *end;
    int r;

    if (!sa_dir)
        sa_dir = KUBE_SA_DIR;
    if (!host || !port)
        return rg_error(err, -ENOENT, 0,
                        "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                        "are not set (give a kubeconfig with KUBECONFIG)");
    if (!valid_host(host))
        return rg_error(err, -EINVAL, 0, "KUBERNETES_SERVICE_HOST \"%.64s\" is not a host", host);
    errno = 0;
    long p = strtol(port, &end, 10);
    if (errno || *end || p < 1 || p > 65535)
        return rg_error(err, -EINVAL, 0, "KUBERNETES_SERVICE_PORT \"%.16s\" is not a port", port);
    r = kube_client_alloc(&k, err);
    if (r < 0)
        return r;
    /* an IPv6 service address goes in brackets */
    if (asprintf(&k->server, strchr(host, ':') ? "https://[%s]:%ld" : "https://%s:%ld", host, p) <
        0) {
        k->server = NULL;
        return -ENOMEM;
    }
    if (asprintf(&k->ca.file, "%s/ca.crt", sa_dir) < 0 ||
        asprintf(&k->token_file, "%s/token", sa_dir) < 0) {
        k->ca.file = k->token_file = NULL;
        return -ENOMEM;
    }
    if (access(k->ca.file, R_OK) < 0)
        return rg_error(err, -errno, 0, "%s: %s", k->ca.file, strerror(errno));
    r = token_first(k, err);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(k);
    return 0;
}

/* ---- kubeconfig (JSON) ---- */

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with padding; whitespace is skipped. */
static int b64_decode(const char *s, char **ret, size_t *ret_len) {
    size_t n = strlen(s), o = 0;
    _cleanup_free_ char *out = malloc(n / 4 * 3 + 4);
    unsigned acc = 0, bits = 0;
    bool pad = false;

    if (!out)
        return -ENOMEM;
    for (const char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            continue;
        if (*p == '=') {
            pad = true;
            continue;
        }
        int v = b64_value(*p);
        if (v < 0 || pad)
            return -EINVAL;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)(acc >> bits & 0xff);
        }
    }
    out[o] = 0;
    *ret_len = o;
    *ret = TAKE_PTR(out);
    return 0;
}

/* "name": find the entry of list (clusters, users, contexts) named name. */
static json_t *named(json_t *list, const char *name) {
    size_t i;
    json_t *e;

    json_array_foreach(list, i, e) {
        json_t *n = json_object_get(e, "name");
        if (json_is_string(n) && streq(json_string_value(n), name))
            return e;
    }
    return NULL;
}

static int path_near(const char *kubeconfig, const char *file, char **ret) {
    const char *slash = strrchr(kubeconfig, '/');

    if (file[0] == '/' || !slash)
        *ret = strdup(file);
    else if (asprintf(ret, "%.*s/%s", (int)(slash - kubeconfig), kubeconfig, file) < 0)
        *ret = NULL;
    return *ret ? 0 : -ENOMEM;
}

/* obj's "<key>" (a file) or "<key>-data" (base64) into b. 1 if found. */
static int get_blob(const JsonReader *p, const char *kubeconfig, json_t *obj, const char *path,
                    const char *key, KubeBlob *b) {
    char data_key[64];
    const char *file = NULL, *data = NULL;
    int r;

    snprintf(data_key, sizeof(data_key), "%s-data", key);
    r = jr_get_string(p, obj, path, key, NULL, &file);
    if (r < 0)
        return r;
    r = jr_get_string(p, obj, path, data_key, NULL, &data);
    if (r < 0)
        return r;
    if (data) {
        r = b64_decode(data, &b->data, &b->len);
        if (r == -ENOMEM)
            return jr_oom(p);
        if (r < 0)
            return jr_fail(p, jpath_key(path, data_key).s, "is not base64");
        return 1;
    }
    if (file) {
        if (path_near(kubeconfig, file, &b->file) < 0)
            return jr_oom(p);
        return 1;
    }
    return 0;
}

static int kubeconfig_parse(json_t *root, const char *path, KubeClient *k, RgError *err) {
    JsonReader p = {.name = path, .err = err};
    const char *current = NULL, *cluster_name = NULL, *user_name = NULL, *server = NULL,
               *token = NULL, *token_file = NULL;
    json_t *contexts = NULL, *clusters = NULL, *users = NULL, *context, *cluster, *user, *o = NULL;
    int r;

    if (!json_is_object(root))
        return jr_fail(&p, "$", "must be an object (a kubeconfig in JSON)");
    if ((r = jr_get_string(&p, root, "$", "current-context", NULL, &current)) <= 0)
        return r < 0 ? r : jr_missing(&p, "$", "current-context");
    if ((r = jr_get_array(&p, root, "$", "contexts", 64, &contexts)) <= 0 ||
        (r = jr_get_array(&p, root, "$", "clusters", 64, &clusters)) <= 0 ||
        (r = jr_get_array(&p, root, "$", "users", 64, &users)) < 0)
        return r < 0 ? r : jr_fail(&p, "$", "needs contexts and clusters");
    context = named(contexts, current);
    if (!context || !(o = json_object_get(context, "context")) || !json_is_object(o))
        return jr_fail(&p, "$.contexts", "has no context \"%.64s\"", current);
    if ((r = jr_get_string(&p, o, "$.contexts[].context", "cluster", NULL, &cluster_name)) <= 0)
        return r < 0 ? r : jr_missing(&p, "$.contexts[].context", "cluster");
    if ((r = jr_get_string(&p, o, "$.contexts[].context", "user", NULL, &user_name)) < 0)
        return r;
    cluster = named(clusters, cluster_name);
    if (!cluster || !json_is_object(o = json_object_get(cluster, "cluster")))
        return jr_fail(&p, "$.clusters", "has no cluster \"%.64s\"", cluster_name);
    if ((r = jr_get_string(&p, o, "$.clusters[].cluster", "server", NULL, &server)) <= 0)
        return r < 0 ? r : jr_missing(&p, "$.clusters[].cluster", "server");
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return jr_fail(&p, "$.clusters[].cluster.server", "must be an https:// (or http://) URL");
    json_t *insecure = json_object_get(o, "insecure-skip-tls-verify");
    if (json_is_true(insecure))
        return jr_fail(&p, "$.clusters[].cluster.insecure-skip-tls-verify",
                       "is not supported: give the cluster's CA");
    if ((r = get_blob(&p, path, o, "$.clusters[].cluster", "certificate-authority", &k->ca)) < 0)
        return r;
    k->server = strdup(server);
    if (!k->server)
        return jr_oom(&p);
    size_t n = strlen(k->server);
    while (n > 0 && k->server[n - 1] == '/')
        k->server[--n] = 0;
    if (!user_name)
        return 0;
    user = users ? named(users, user_name) : NULL;
    if (!user || !json_is_object(o = json_object_get(user, "user")))
        return jr_fail(&p, "$.users", "has no user \"%.64s\"", user_name);
    if ((r = get_blob(&p, path, o, "$.users[].user", "client-certificate", &k->cert)) < 0 ||
        (r = get_blob(&p, path, o, "$.users[].user", "client-key", &k->key)) < 0)
        return r;
    if (!!(k->cert.file || k->cert.data) != !!(k->key.file || k->key.data))
        return jr_fail(&p, "$.users[].user", "needs both client-certificate and client-key");
    if ((r = jr_get_string(&p, o, "$.users[].user", "token", NULL, &token)) < 0 ||
        (r = jr_get_string(&p, o, "$.users[].user", "tokenFile", NULL, &token_file)) < 0)
        return r;
    if (token) {
        k->static_token = strdup(token);
        k->token = strdup(token);
        if (!k->static_token || !k->token)
            return jr_oom(&p);
        if (token_clean(k->token, path, err) < 0)
            return jr_fail(&p, "$.users[].user.token", "is not a usable token");
    } else if (token_file && path_near(path, token_file, &k->token_file) < 0)
        return jr_oom(&p);
    return 0;
}

int kube_client_from_kubeconfig(const char *path, KubeClient **ret, RgError *err) {
    _cleanup_(kube_client_freep) KubeClient *k = NULL;
    _cleanup_free_ char *text = NULL;
    json_error_t je;
    json_t *root;
    int r;

    r = fileio_read_file(path, KUBE_MAX_CONFIG, &text, NULL);
    if (r < 0)
        return rg_error(err, r, 0, "%s: %s", path, strerror(-r));
    root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rg_error(err, -EINVAL, 0, "%s:%d:%d: %s (a kubeconfig in JSON is needed)", path,
                        je.line, je.column, je.text);
    r = kube_client_alloc(&k, err);
    if (r < 0) {
        json_decref(root);
        return r;
    }
    r = kubeconfig_parse(root, path, k, err);
    json_decref(root);
    if (r < 0)
        return r;
    r = token_first(k, err);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(k);
    return 0;
}

int kube_client_from_env(KubeClient **ret, RgError *err) {
    const char *kc = getenv("KUBECONFIG");

    if (kc && *kc)
        return kube_client_from_kubeconfig(kc, ret, err);
    return kube_client_in_cluster(NULL, ret, err);
}
