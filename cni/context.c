/* SPDX-License-Identifier: Apache-2.0 */
/* One invocation's context: the node config, the attachment's key and lock, the agent's socket. */
#include "context.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentproto.h"
#include "clock.h"
#include "log.h"
#include "state.h"

int context_load_node(CniContext *c, RgError *err) {
    int r;

    if (c->node)
        return 0;
    r = config_load(c->config_path, &c->node, err);
    if (r < 0) {
        err->code = CNI_ERR_INVALID_CONFIG;
        return r;
    }
    if (c->node->log_file && log_open_file(c->node->log_file) < 0)
        log_warn(NULL, NULL, "cannot open log file %s", c->node->log_file);
    return 0;
}

void context_phase_add(uint64_t *phase_ns, uint64_t started_ns) {
    *phase_ns += clock_monotonic_ns() - started_ns;
}

int context_key(const CniContext *c, char *buf, size_t n, RgError *err) {
    int r = state_key(c->env->container_id, c->env->ifname, buf, n);

    if (r == -ENAMETOOLONG)
        return rg_error(err, r, CNI_ERR_INVALID_ENV,
                        "CNI_CONTAINERID and CNI_IFNAME: %zu characters together, railgate's "
                        "state keys hold at most %d",
                        strlen(c->env->container_id) + strlen(c->env->ifname), STATE_KEY_MAX - 1);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_INVALID_ENV,
                        "CNI_CONTAINERID and CNI_IFNAME do not make an attachment key");
    return 0;
}

int context_lock_attachment(const CniContext *c, RgError *err) {
    char key[STATE_KEY_MAX + 1], path[4096];
    int fd, r;

    r = context_key(c, key, sizeof(key), err);
    if (r < 0)
        return r;
    fd = state_attachment_lock(c->node->state_dir, key);
    if (fd >= 0)
        return fd;
    (void)state_lock_path(c->node->state_dir, key, path, sizeof(path));
    if (fd == -ELOOP || fd == -EBADFD)
        return rg_error(err, fd, CNI_ERR_IO,
                        "lock file %s is %s, not a regular file: refusing to use it (remove it if "
                        "nothing else should be there)",
                        path, fd == -ELOOP ? "a symbolic link" : "something else");
    return rg_error(err, fd, CNI_ERR_IO, "cannot lock %s: %s", path, strerror(-fd));
}

int context_with_attachment(CniContext *c, int (*fn)(CniContext *c, const char *key, RgError *err),
                            RgError *err) {
    char key[STATE_KEY_MAX + 1];
    int r, lock;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    r = context_key(c, key, sizeof(key), err);
    if (r == -ENAMETOOLONG) {
        log_info(NULL, NULL, "%s of %s/%s: no attachment can have such a key; nothing to do",
                 cni_command_name(c->env->command), c->env->container_id, c->env->ifname);
        *err = (RgError){0};
        return 0;
    }
    if (r < 0)
        return r;
    lock = context_lock_attachment(c, err);
    if (lock < 0)
        return lock;
    r = fn(c, key, err);
    context_unlock_attachment(c, lock);
    return r;
}

void context_unlock_attachment(const CniContext *c, int fd) {
    char key[STATE_KEY_MAX + 1];
    RgError ignored = {0};

    if (fd < 0 || context_key(c, key, sizeof(key), &ignored) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    /* the attachment ended (or never began) when no record is left */
    state_attachment_unlock(c->node->state_dir, key, fd,
                            state_record_present(c->node->state_dir, key) == 0);
}

int context_agent_socket(const CniContext *c, char *buf, size_t n, RgError *err) {
    int r = agent_socket_path(c->node->state_dir, buf, n);

    if (r < 0)
        return rg_error(err, r, CNI_ERR_INVALID_CONFIG,
                        "%s: $.stateDir: %s/" AGENT_SOCKET_NAME
                        " is too long a path for the node agent's unix socket",
                        c->node->path, c->node->state_dir);
    return 0;
}

const char *context_namespace_tenant(const CniContext *c, const char *ns) {
    const TenantConfig *t = ns ? config_namespace_tenant(c->node, ns) : NULL;

    return t ? t->name : NULL;
}
