/* SPDX-License-Identifier: Apache-2.0 */
/* The Kubernetes REST client against a fake API server: config, requests, errors, tokens, watches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fakeapi.h"
#include "fileio.h"
#include "proc.h"
#include "kube.h"
#include "kubewatch.h"
#include "waitscale.h"

static char dir[64];

static int setup(void **state) {
    return tmpdir_make(dir, sizeof(dir), "rg-kube");
}

static int teardown(void **state) {
    tmpdir_remove(dir);
    return 0;
}

static void write_file(const char *name, const char *text) {
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(fileio_write_atomic(path, text, strlen(text), 0600, false), 0);
}

static int load_kc(const char *text, KubeClient **k, RgError *err) {
    char path[256];

    write_file("kc.json", text);
    snprintf(path, sizeof(path), "%s/kc.json", dir);
    return kube_client_from_kubeconfig(path, k, err);
}

#define KC_HEAD                                                                                    \
    "{\"current-context\": \"c\", \"contexts\": [{\"name\": \"c\", \"context\": {\"cluster\": "    \
    "\"k\", \"user\": \"u\"}}], "

static void test_kubeconfig_errors(void **state) {
    KubeClient *k = NULL;
    RgError err = {0};
    char path[256];

    snprintf(path, sizeof(path), "%s/missing.json", dir);
    assert_int_equal(kube_client_from_kubeconfig(path, &k, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "missing.json"));

    /* YAML is not read: the message says what is needed */
    assert_int_equal(load_kc("apiVersion: v1\nkind: Config\n", &k, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "a kubeconfig in JSON"));

    assert_int_equal(load_kc("{\"contexts\": []}", &k, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "$.current-context: is required"));

    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"other\", \"cluster\": "
                                     "{\"server\": \"https://x\"}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "no cluster \"k\""));

    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"ftp://x\"}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "$.clusters[].cluster.server"));

    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"https://x\", \"insecure-skip-tls-verify\": "
                                     "true}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "insecure-skip-tls-verify"));

    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"https://x\", "
                                     "\"certificate-authority-data\": \"not*base64\"}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "certificate-authority-data: is not base64"));

    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"https://x\"}}], \"users\": [{\"name\": \"u\", "
                                     "\"user\": {\"client-certificate\": \"c.crt\"}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "needs both client-certificate and client-key"));

    /* a token with a newline would add a header */
    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"https://x\"}}], \"users\": [{\"name\": \"u\", "
                                     "\"user\": {\"token\": \"abc\\r\\nX-Evil: 1\"}}]}",
                             &k, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "token"));
    assert_null(k);

    /* a good one: the server's trailing slash goes */
    assert_int_equal(load_kc(KC_HEAD
                             "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                             "{\"server\": \"https://x:6443/\", "
                             "\"certificate-authority-data\": \"aGVsbG8=\"}}], "
                             "\"users\": [{\"name\": \"u\", \"user\": {\"token\": \"t\"}}]}",
                             &k, &err),
                     0);
    assert_string_equal(kube_client_server(k), "https://x:6443");
    kube_client_free(k);
}

static void test_in_cluster(void **state) {
    KubeClient *k = NULL;
    RgError err = {0};

    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443x", 1);
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_PORT"));
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "ca.crt"));
    write_file("ca.crt", "not used here");
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "/token"));
    write_file("token", "abc.def\n");
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), 0);
    assert_string_equal(kube_client_server(k), "https://10.96.0.1:443");
    kube_client_free(k);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(kube_client_in_cluster(dir, &k, &err), 0);
    assert_string_equal(kube_client_server(k), "https://[fd00::1]:443");
    kube_client_free(k);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static KubeClient *client_for(FakeApi *f, const char *token) {
    KubeClient *k = NULL;
    RgError err = {0};
    char path[256];

    snprintf(path, sizeof(path), "%s/fake.json", dir);
    assert_int_equal(fakeapi_write_kubeconfig(f, path, token), 0);
    assert_int_equal(kube_client_from_kubeconfig(path, &k, &err), 0);
    return k;
}

#define CLAIMS "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims"

static void test_requests(void **state) {
    FakeApi *f = NULL;
    KubeClient *k;
    RgError err = {0};
    json_t *o = NULL;

    assert_int_equal(fakeapi_start(&f), 0);
    k = client_for(f, NULL);

    /* create, read back, conflict on a second create */
    json_t *claim = json_pack("{s:{s:s}}", "metadata", "name", "c1");
    assert_int_equal(kube_request(k, "POST", CLAIMS, NULL, claim, &o, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
                        "c1");
    json_decref(o);
    assert_int_equal(kube_request(k, "POST", CLAIMS, NULL, claim, NULL, &err), -EEXIST);
    assert_int_equal(err.code, 409);
    assert_non_null(strstr(err.msg, "POST " CLAIMS ": 409 Conflict: already exists"));
    json_decref(claim);

    assert_int_equal(kube_get(k, CLAIMS "/c1", &o, &err), 0);
    assert_non_null(json_object_get(json_object_get(o, "metadata"), "uid"));
    json_decref(o);
    /* the message names the object without the query, with the Status message */
    assert_int_equal(kube_get(k, CLAIMS "/nope?x=1", &o, &err), -ENOENT);
    assert_int_equal(err.code, 404);
    assert_string_equal(err.msg, "GET " CLAIMS "/nope: 404 Not Found: not found");

    /* merge patch */
    json_t *patch = json_pack("{s:{s:s}}", "status", "phase", "x");
    assert_int_equal(
        kube_request(k, "PATCH", CLAIMS "/c1/status", KUBE_PATCH_MERGE, patch, &o, &err), 0);
    json_decref(patch);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "x");
    json_decref(o);
    assert_int_equal(kube_request(k, "DELETE", CLAIMS "/c1", NULL, NULL, NULL, &err), 0);
    assert_null(fakeapi_get(f, CLAIMS "/c1"));

    /* server errors map to errno, with the status */
    fakeapi_fail_next(f, "GET", CLAIMS, 1, 503);
    assert_int_equal(kube_get(k, CLAIMS, &o, &err), -EIO);
    assert_int_equal(err.code, 503);
    assert_non_null(strstr(err.msg, "503 Service Unavailable: injected failure"));
    fakeapi_fail_next(f, NULL, CLAIMS, 1, 410);
    assert_int_equal(kube_get(k, CLAIMS, &o, &err), -ESTALE);
    fakeapi_fail_next(f, NULL, CLAIMS, 1, 429);
    assert_int_equal(kube_get(k, CLAIMS, &o, &err), -EAGAIN);

    /* bounded answers */
    json_t *big = json_pack("{s:{s:s},s:s}", "metadata", "name", "big", "data", "");
    char *filler = malloc(70000);
    memset(filler, 'x', 69999);
    filler[69999] = 0;
    json_object_set_new(big, "data", json_string(filler));
    free(filler);
    assert_int_equal(fakeapi_put(f, CLAIMS "/big", big), 0);
    json_decref(big);
    kube_client_set_max_body(k, 65536);
    assert_int_equal(kube_get(k, CLAIMS "/big", &o, &err), -EFBIG);
    assert_non_null(strstr(err.msg, "over 65536 bytes"));
    kube_client_set_max_body(k, 0);
    assert_int_equal(kube_get(k, CLAIMS "/big", &o, &err), 0);
    json_decref(o);

    kube_client_free(k);
    fakeapi_stop(f);

    /* nobody listening */
    k = NULL;
    assert_int_equal(load_kc(KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": "
                                     "{\"server\": \"http://127.0.0.1:1\"}}], \"users\": "
                                     "[{\"name\": \"u\", \"user\": {}}]}",
                             &k, &err),
                     0);
    assert_int_equal(kube_get(k, "/api/v1/nodes", &o, &err), -ECONNREFUSED);
    assert_int_equal(err.code, 0);
    assert_non_null(strstr(err.msg, "GET /api/v1/nodes: "));
    kube_client_free(k);
}

static void test_token_rotation(void **state) {
    FakeApi *f = NULL;
    KubeClient *k = NULL;
    RgError err = {0};
    char kc[256], auth[600], text[1024];
    json_t *o = NULL;

    assert_int_equal(fakeapi_start(&f), 0);
    fakeapi_set_token(f, "one");
    write_file("tok", "one\n");
    snprintf(kc, sizeof(kc), "%s/kc.json", dir);
    snprintf(text, sizeof(text),
             KC_HEAD "\"clusters\": [{\"name\": \"k\", \"cluster\": {\"server\": \"%s\"}}], "
                     "\"users\": [{\"name\": \"u\", \"user\": {\"tokenFile\": \"tok\"}}]}",
             fakeapi_url(f));
    write_file("kc.json", text);
    /* tokenFile is relative to the kubeconfig */
    assert_int_equal(kube_client_from_kubeconfig(kc, &k, &err), 0);
    assert_int_equal(kube_get(k, "/api/v1/namespaces", &o, &err), 0);
    json_decref(o);
    fakeapi_last_auth(f, auth, sizeof(auth));
    assert_string_equal(auth, "Bearer one");

    /* the token rotates on disk and on the server: the 401 makes the
     * client read the file again and try once more */
    char tok[256];
    struct stat st;
    snprintf(tok, sizeof(tok), "%s/tok", dir);
    assert_int_equal(stat(tok, &st), 0);
    fakeapi_set_token(f, "two");
    write_file("tok", "two");
    /* the same mtime as before: only the 401 tells the client */
    struct timespec was[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, tok, was, 0), 0);
    unsigned before = fakeapi_requests(f, "GET", "/api/v1/namespaces");
    assert_int_equal(kube_get(k, "/api/v1/namespaces", &o, &err), 0);
    json_decref(o);
    assert_int_equal(fakeapi_requests(f, "GET", "/api/v1/namespaces") - before, 2);
    fakeapi_last_auth(f, auth, sizeof(auth));
    assert_string_equal(auth, "Bearer two");

    /* a wrong token stays wrong: one retry, then the 401 */
    fakeapi_set_token(f, "three");
    assert_int_equal(kube_get(k, "/api/v1/namespaces", &o, &err), -EACCES);
    assert_int_equal(err.code, 401);

    /* a token file that turns into two lines is refused, not sent */
    write_file("tok", "two\nX-Evil: 1\n");
    assert_int_equal(kube_get(k, "/api/v1/namespaces", &o, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "not printable"));
    kube_client_free(k);
    fakeapi_stop(f);
}

static void test_escape(void **state) {
    char *e = kube_escape("spec.driver=railgate.io,spec.nodeName=n 1/x");

    assert_string_equal(e, "spec.driver%3Drailgate.io%2Cspec.nodeName%3Dn%201%2Fx");
    free(e);
}

/* ---- informer ---- */

#define SLICES "/apis/resource.k8s.io/v1/resourceslices"

typedef struct Seen {
    pthread_mutex_t lock;
    unsigned relists, added, modified, deleted, failures;
    size_t last_list_size;
    char last_name[64];
} Seen;

static int on_relist(void *u, json_t *items) {
    Seen *s = u;

    pthread_mutex_lock(&s->lock);
    s->relists++;
    s->last_list_size = json_array_size(items);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int on_event(void *u, const char *type, json_t *obj) {
    Seen *s = u;
    json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");

    pthread_mutex_lock(&s->lock);
    if (strcmp(type, "ADDED") == 0)
        s->added++;
    else if (strcmp(type, "MODIFIED") == 0)
        s->modified++;
    else if (strcmp(type, "DELETED") == 0)
        s->deleted++;
    snprintf(s->last_name, sizeof(s->last_name), "%s", json_string_value(n));
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static void on_failed(void *u, int r, const RgError *err) {
    Seen *s = u;

    pthread_mutex_lock(&s->lock);
    s->failures++;
    pthread_mutex_unlock(&s->lock);
}

static void *run_informer(void *arg) {
    kube_informer_run(arg);
    return NULL;
}

static Seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned seen_get(unsigned *field) {
    pthread_mutex_lock(&seen.lock);
    unsigned v = *field;
    pthread_mutex_unlock(&seen.lock);
    return v;
}

static bool wait_seen(unsigned *field, unsigned want) {
    for (int i = 0; i < wait_scaled_ms(10000) / 10; i++) {
        if (seen_get(field) >= want)
            return true;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 10000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

static json_t *slice(const char *name, const char *node) {
    return json_pack("{s:{s:s},s:{s:s,s:s}}", "metadata", "name", name, "spec", "driver",
                     "railgate.io", "nodeName", node);
}

static bool watching(FakeApi *f, void *arg) {
    return fakeapi_open_watches(f) >= 1;
}

/* static: a failed assert leaves the informer thread running on them */
static RgError inf_err;
static atomic_bool stop;
static KubeInformer inf;

static void test_informer(void **state) {
    FakeApi *f = NULL;
    KubeClient *k;
    pthread_t t;
    json_t *o;

    assert_int_equal(fakeapi_start(&f), 0);
    k = client_for(f, NULL);
    o = slice("s-mine", "n1");
    assert_int_equal(fakeapi_put(f, SLICES "/s-mine", o), 0);
    json_decref(o);
    o = slice("s-other", "n2");
    assert_int_equal(fakeapi_put(f, SLICES "/s-other", o), 0);
    json_decref(o);

    static char *q;
    _cleanup_free_ char *sel = kube_escape("spec.driver=railgate.io,spec.nodeName=n1");
    free(q);
    assert_int_not_equal(asprintf(&q, "fieldSelector=%s", sel), -1);
    inf = (KubeInformer){.client = k,
                         .path = SLICES,
                         .query = q,
                         .relisted = on_relist,
                         .event = on_event,
                         .failed = on_failed,
                         .userdata = &seen,
                         .stop = &stop,
                         .backoff_min_ms = 20,
                         .backoff_max_ms = 100,
                         .err = &inf_err};
    assert_int_equal(pthread_create(&t, NULL, run_informer, &inf), 0);
    assert_true(wait_seen(&seen.relists, 1));
    assert_int_equal(seen.last_list_size, 1); /* the selector holds */
    assert_true(fakeapi_wait(f, watching, NULL, 10000));

    /* events of our node arrive, others' do not */
    o = slice("s-new", "n1");
    assert_int_equal(fakeapi_put(f, SLICES "/s-new", o), 0);
    assert_int_equal(fakeapi_put(f, SLICES "/s-new", o), 0);
    json_decref(o);
    o = slice("s-far", "n2");
    assert_int_equal(fakeapi_put(f, SLICES "/s-far", o), 0);
    json_decref(o);
    assert_int_equal(fakeapi_delete(f, SLICES "/s-mine"), 0);
    assert_true(wait_seen(&seen.deleted, 1));
    assert_int_equal(seen_get(&seen.added), 1);
    assert_int_equal(seen_get(&seen.modified), 1);
    assert_string_equal(seen.last_name, "s-mine");

    /* the server ends the watch: watched again from where it was, no list */
    unsigned lists = seen_get(&seen.relists);
    fakeapi_end_watches(f);
    assert_true(fakeapi_wait(f, watching, NULL, 10000));
    o = slice("s-after", "n1");
    assert_int_equal(fakeapi_put(f, SLICES "/s-after", o), 0);
    json_decref(o);
    assert_true(wait_seen(&seen.added, 2));
    assert_int_equal(seen_get(&seen.relists), lists);

    /* history compacted: the watch gets 410, the informer lists again */
    fakeapi_compact(f);
    fakeapi_end_watches(f);
    assert_true(wait_seen(&seen.relists, lists + 1));
    assert_int_equal(seen.last_list_size, 2); /* s-new, s-after */

    /* the API server fails the next lists: backoff, then a list again */
    fakeapi_fail_next(f, "GET", SLICES, 2, 500);
    fakeapi_end_watches(f);
    fakeapi_compact(f);
    assert_true(wait_seen(&seen.relists, lists + 2));
    assert_true(seen_get(&seen.failures) >= 2);

    atomic_store(&stop, true);
    pthread_join(t, NULL); /* a watch ends within about a second of stop */
    kube_client_free(k);
    fakeapi_stop(f);
}

static void test_backoff(void **state) {
    unsigned b = 0, prev = 0;

    for (int i = 0; i < 12; i++) {
        unsigned w = kube_backoff_next(&b, 100, 3000);
        unsigned cap = i == 0 ? 100 : prev * 2 > 3000 ? 3000 : prev * 2;
        assert_true(w <= cap && w >= cap / 2);
        prev = cap;
    }
    assert_int_equal(b, 3000);
}

int main(void) {
    /* a failed assert leaves an informer thread behind: its report must be out first */
    setvbuf(stdout, NULL, _IONBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kubeconfig_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_rotation, setup, teardown),
        cmocka_unit_test(test_escape),
        cmocka_unit_test_setup_teardown(test_informer, setup, teardown),
        cmocka_unit_test(test_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
