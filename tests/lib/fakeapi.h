/* SPDX-License-Identifier: Apache-2.0 */
/* A fake Kubernetes API server for tests: objects in memory over HTTP on loopback. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * libmicrohttpd on 127.0.0.1 (a port of its own). Objects live at their
 * path ("/apis/resource.k8s.io/v1/resourceslices/<name>"); a collection is
 * every object one level under its path. What it does:
 *   GET object, GET collection (a List; fieldSelector a=b[,c=d] on dotted
 *   fields), GET collection?watch=1&resourceVersion=N (a stream of events
 *   after N, BOOKMARKs aside, until timeoutSeconds or the server stops; N
 *   older than the last compaction: an ERROR event with code 410),
 *   POST collection (name or generateName; 409 if it exists), PUT object
 *   (409 on a stale metadata.resourceVersion), PATCH object (merge patch; a
 *   server-side apply of a ResourceClaim's status.devices, see do_apply),
 *   DELETE object, DELETE collection (with fieldSelector).
 * Every write gets the next resourceVersion, a uid at creation, and an
 * event. Errors are Status objects. With a token set, a request without
 * "Authorization: Bearer <token>" gets 401.
 */
typedef struct FakeApi FakeApi;

int fakeapi_start(FakeApi **ret);
void fakeapi_stop(FakeApi *f);
/* "http://127.0.0.1:<port>" */
const char *fakeapi_url(const FakeApi *f);
/* A JSON kubeconfig naming the server (and token, if any), written to path. */
int fakeapi_write_kubeconfig(const FakeApi *f, const char *path, const char *token);
void fakeapi_set_token(FakeApi *f, const char *token);

/* Store obj (a copy) at path as is, as a client's create would (uid, rv). */
int fakeapi_put(FakeApi *f, const char *path, json_t *obj);
/* The object at path (a new reference), or NULL. */
json_t *fakeapi_get(FakeApi *f, const char *path);
int fakeapi_delete(FakeApi *f, const char *path);
/* Objects directly under collection path. */
size_t fakeapi_count(FakeApi *f, const char *collection);
/* A list (new reference) of the objects under collection. */
json_t *fakeapi_list(FakeApi *f, const char *collection);
/* Forget the event history: watches from before now get 410. */
void fakeapi_compact(FakeApi *f);
/* End every open watch stream now (as an API server restart would). */
void fakeapi_end_watches(FakeApi *f);
/* The next n requests whose method matches (NULL: any) and whose path
 * starts with prefix get status with message. */
void fakeapi_fail_next(FakeApi *f, const char *method, const char *prefix, unsigned n, int status);

/* Requests served, and the last Authorization header seen ("" if none). */
unsigned fakeapi_requests(FakeApi *f, const char *method, const char *prefix);
unsigned fakeapi_open_watches(FakeApi *f);
void fakeapi_last_auth(FakeApi *f, char *buf, size_t n);
/* Wait (scaled) until fn(f, arg) holds; true if it did. */
bool fakeapi_wait(FakeApi *f, bool (*fn)(FakeApi *, void *), void *arg, int timeout_ms);
