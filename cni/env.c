/* SPDX-License-Identifier: Apache-2.0 */
/* CNI environment variables and CNI_ARGS, validated before anything uses them. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "cni.h"
#include "netns.h"

#define CNI_ARGS_MAX 8192
#define CNI_ID_MAX 256
#define CNI_META_MAX 253 /* Kubernetes names and namespaces */

static const struct {
    const char *name;
    CniCommand cmd;
} commands[] = {
    {"ADD", CNI_CMD_ADD},         {"DEL", CNI_CMD_DEL},       {"CHECK", CNI_CMD_CHECK},
    {"VERSION", CNI_CMD_VERSION}, {"STATUS", CNI_CMD_STATUS}, {"GC", CNI_CMD_GC},
};

const char *cni_command_name(CniCommand cmd) {
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (commands[i].cmd == cmd)
            return commands[i].name;
    return "?";
}

/* Spec: alphanumeric first, then alphanumerics, '_', '.', '-'. It becomes a
 * file name in the state dir, so this is also the traversal guard. */
static bool container_id_valid(const char *s) {
    size_t n = strlen(s);

    if (n == 0 || n > CNI_ID_MAX || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
            return false;
    return true;
}

static bool ifname_valid(const char *s) {
    size_t n = strlen(s);

    if (n == 0 || n > 15 || streq(s, ".") || streq(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == ':' || isspace((unsigned char)s[i]))
            return false;
    return true;
}

static bool netns_valid(const char *s) {
    return s[0] == '/' && strlen(s) < PATH_MAX && !strstr(s, "/../") &&
           !(strlen(s) >= 3 && streq(s + strlen(s) - 3, "/.."));
}

/* ADD and CHECK: CNI_NETNS must be a network namespace, and not the node's
 * own, before anything is claimed, recorded or moved. */
static int netns_check(const char *path, RgError *err) {
    _cleanup_close_ int fd = -EBADF;
    int r;

    r = netns_open(path, &fd);
    if (r == -EINVAL)
        return rg_error(err, r, CNI_ERR_INVALID_ENV,
                        "CNI_NETNS \"%.128s\" is not a network namespace", path);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_INVALID_ENV, "CNI_NETNS \"%.128s\": %s", path,
                        strerror(-r));
    r = netns_is_current(fd);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_INVALID_ENV, "CNI_NETNS \"%.128s\": %s", path,
                        strerror(-r));
    if (r > 0)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_NETNS \"%.128s\" is the node's own network namespace, not a pod's",
                        path);
    return 0;
}

static int args_set(char **field, const char *key, const char *value, RgError *err) {
    if (strlen(value) > CNI_META_MAX)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_ARGS: %s is too long", key);
    if (*field && !streq(*field, value))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_ARGS: %s given twice with different values", key);
    if (*field)
        return 0;
    *field = strdup(value);
    return *field ? 0 : -ENOMEM;
}

/* "K=V;K=V": keys in any order, each pair split on its first '='; keys we
 * do not know are ignored, as IgnoreUnknown asks. */
static int args_parse(CniEnv *e, const char *args, RgError *err) {
    _cleanup_free_ char *copy = NULL;
    char *save = NULL;
    int r;

    if (strlen(args) > CNI_ARGS_MAX)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_ARGS is too long");
    copy = strdup(args);
    if (!copy)
        return -ENOMEM;
    for (char *pair = strtok_r(copy, ";", &save); pair; pair = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq)
            return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_ARGS: \"%.64s\" is not K=V",
                            pair);
        *eq = 0;
        const char *v = eq + 1;
        r = 0;
        if (streq(pair, "K8S_POD_NAMESPACE"))
            r = args_set(&e->pod_ns, pair, v, err);
        else if (streq(pair, "K8S_POD_NAME"))
            r = args_set(&e->pod_name, pair, v, err);
        else if (streq(pair, "K8S_POD_UID"))
            r = args_set(&e->pod_uid, pair, v, err);
        else if (streq(pair, "K8S_POD_INFRA_CONTAINER_ID"))
            r = args_set(&e->sandbox_id, pair, v, err);
        if (r < 0)
            return r;
    }
    return 0;
}

static int need(const char *var, const char **ret, RgError *err) {
    const char *v = getenv(var);

    if (!v || !*v)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "%s is required and missing", var);
    *ret = v;
    return 0;
}

static int env_for_attachment(CniEnv *e, RgError *err) {
    int r;

    r = need("CNI_CONTAINERID", &e->container_id, err);
    if (r < 0)
        return r;
    if (!container_id_valid(e->container_id))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_CONTAINERID \"%.64s\" is not a valid container id", e->container_id);
    r = need("CNI_IFNAME", &e->ifname, err);
    if (r < 0)
        return r;
    if (!ifname_valid(e->ifname))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_IFNAME \"%.64s\" is not a valid interface name", e->ifname);
    e->netns = getenv("CNI_NETNS");
    if (e->netns && !*e->netns)
        e->netns = NULL;
    if (!e->netns && e->command != CNI_CMD_DEL)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_NETNS is required and missing");
    if (e->netns && !netns_valid(e->netns))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV,
                        "CNI_NETNS \"%.64s\" is not an absolute path", e->netns);
    /* DEL reads its namespace from the record, and must work when it is gone */
    if (e->command != CNI_CMD_DEL) {
        r = netns_check(e->netns, err);
        if (r < 0)
            return r;
    }
    const char *args = getenv("CNI_ARGS");
    return args ? args_parse(e, args, err) : 0;
}

int cni_env_parse(CniEnv *ret, RgError *err) {
    const char *cmd = getenv("CNI_COMMAND");
    CniEnv e = {0};
    int r;

    if (!cmd || !*cmd)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_COMMAND is required and missing");
    size_t i = 0;
    while (i < ELEMENTSOF(commands) && !streq(commands[i].name, cmd))
        i++;
    if (i == ELEMENTSOF(commands))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_COMMAND \"%.32s\" is unknown", cmd);
    e.command = commands[i].cmd;
    e.path = getenv("CNI_PATH");
    if (e.command == CNI_CMD_ADD || e.command == CNI_CMD_DEL || e.command == CNI_CMD_CHECK) {
        r = env_for_attachment(&e, err);
        if (r < 0) {
            cni_env_done(&e);
            return r;
        }
    }
    *ret = e;
    return 0;
}

void cni_env_done(CniEnv *e) {
    free(e->pod_ns);
    free(e->pod_name);
    free(e->pod_uid);
    free(e->sandbox_id);
    memset(e, 0, sizeof(*e));
}
