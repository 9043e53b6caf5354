/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI environment (CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS,
 * CNI_ARGS, CNI_PATH) as cni_env_parse() reads it: cni/env.c has no pure
 * CNI_ARGS parser, so the variables are really set. Input: their values in
 * that order, separated by NUL bytes; a variable past the last one is unset.
 * What passes must be safe to use as a file name (container id), a netdev
 * name and a path; what fails must still produce the error JSON.
 */
#include <ctype.h>
#include <limits.h>

#include "cni.h"
#include "fuzz.h"

static const char *const vars[] = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_IFNAME",
                                   "CNI_NETNS",   "CNI_ARGS",        "CNI_PATH"};
/* putenv() keeps our strings: one live allocation per variable */
static char *live[ELEMENTSOF(vars)];

static void set_var(size_t i, const char *value, size_t len) {
    char *old = live[i];

    if (value) {
        size_t k = strlen(vars[i]);
        char *s = malloc(k + 1 + len + 1);
        FUZZ_CHECK(s);
        memcpy(s, vars[i], k);
        s[k] = '=';
        memcpy(s + k + 1, value, len);
        s[k + 1 + len] = 0;
        FUZZ_CHECK(putenv(s) == 0);
        live[i] = s;
    } else {
        FUZZ_CHECK(unsetenv(vars[i]) == 0);
        live[i] = NULL;
    }
    free(old);
}

static bool container_id_ok(const char *s) {
    size_t n = strlen(s);

    if (n == 0 || n > 256 || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
            return false;
    return true;
}

static void check_env(const CniEnv *e) {
    const char *cmd = getenv("CNI_COMMAND");

    FUZZ_CHECK(cmd && streq(cni_command_name(e->command), cmd));
    if (e->command != CNI_CMD_ADD && e->command != CNI_CMD_DEL && e->command != CNI_CMD_CHECK) {
        FUZZ_CHECK(!e->container_id && !e->pod_ns && !e->pod_name);
        return;
    }
    /* the container id and ifname name files in the state dir */
    FUZZ_CHECK(e->container_id && container_id_ok(e->container_id));
    FUZZ_CHECK(e->ifname && e->ifname[0] && strlen(e->ifname) <= 15 && !strchr(e->ifname, '/'));
    FUZZ_CHECK(!streq(e->ifname, ".") && !streq(e->ifname, ".."));
    FUZZ_CHECK(e->netns || e->command == CNI_CMD_DEL);
    FUZZ_CHECK(!e->netns || (e->netns[0] == '/' && !strstr(e->netns, "/../")));
    FUZZ_CHECK(!e->pod_ns || strlen(e->pod_ns) <= 253);
    FUZZ_CHECK(!e->pod_name || strlen(e->pod_name) <= 253);
    FUZZ_CHECK(!e->pod_uid || strlen(e->pod_uid) <= 253);
    FUZZ_CHECK(!e->sandbox_id || strlen(e->sandbox_id) <= 253);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    CniEnv e = {0};
    RgError err = {0};
    bool more = true;
    int r;

    if (size > 65536)
        return 0;
    for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
        const char *nul = more ? memchr(p, 0, (size_t)(end - p)) : NULL;

        set_var(i, more ? p : NULL, nul ? (size_t)(nul - p) : (size_t)(end - p));
        more = more && nul;
        p = nul ? nul + 1 : end;
    }
    r = cni_env_parse(&e, &err);
    if (r == -ENOMEM)
        return 0;
    if (r < 0) {
        /* main() prints this error JSON; without it the runtime gets no answer */
        json_t *j =
            json_pack("{s:s, s:i, s:s}", "cniVersion", "1.1.0", "code", err.code, "msg", err.msg);
        FUZZ_CHECK(err.code == CNI_ERR_INVALID_ENV);
        FUZZ_CHECK(err.msg[0]);
        FUZZ_CHECK(j);
        json_decref(j);
        return 0;
    }
    check_env(&e);
    cni_env_done(&e);
    return 0;
}
