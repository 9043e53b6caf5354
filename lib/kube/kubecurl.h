/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl, loaded when the first client is made: only DRA mode talks to the API server. */
#pragma once

#include <curl/curl.h>

#include "error.h"

/* libcurl's own functions, typed from its header; set by kube_curl_load. */
typedef struct KubeCurl {
    typeof(curl_global_init) *global_init;
    typeof(curl_easy_init) *easy_init;
    typeof(curl_easy_setopt) *easy_setopt;
    typeof(curl_easy_perform) *easy_perform;
    typeof(curl_easy_getinfo) *easy_getinfo;
    typeof(curl_easy_reset) *easy_reset;
    typeof(curl_easy_cleanup) *easy_cleanup;
    typeof(curl_easy_strerror) *easy_strerror;
    typeof(curl_slist_append) *slist_append;
    typeof(curl_slist_free_all) *slist_free_all;
} KubeCurl;

extern KubeCurl kube_curl;

/* dlopen RAILGATE_CURL_SONAME and curl_global_init it, once: the device plugin's
 * agent never maps libcurl and the TLS, Kerberos, LDAP and SSH libraries it brings.
 * -ELIBACC when the library or one of its functions is missing, -EIO when its
 * initialization fails. */
int kube_curl_load(RgError *err);
