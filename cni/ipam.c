/* SPDX-License-Identifier: Apache-2.0 */
/* IPAM delegation: only the tenant's plugin from the node config, with only its own config. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "clock.h"
#include "ipam.h"
#include "log.h"
#include "state.h"
#include "strv.h"

#define IPAM_OUTPUT_MAX (1u << 20)
#define IPAM_NAME_PREFIX "railgate-"

extern char **environ;

/* Is path our own binary (by any name: symlink, hard link, bind mount)? */
static bool is_self(const struct stat *st) {
    struct stat self;

    return stat("/proc/self/exe", &self) == 0 && self.st_dev == st->st_dev &&
           self.st_ino == st->st_ino;
}

/* The first executable <dir>/<type> in CNI_PATH, as the spec finds a plugin;
 * -ELOOP when that is railgate itself, which never runs as IPAM. */
static int find_plugin(const char *cni_path, const char *type, char *buf, size_t n) {
    _cleanup_free_ char *copy = strdup(cni_path ? cni_path : "");
    char *save = NULL;
    struct stat st;

    if (!copy)
        return -ENOMEM;
    if (!type[0] || strchr(type, '/') || type[0] == '.')
        return -EINVAL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (d[0] != '/' || (size_t)snprintf(buf, n, "%s/%s", d, type) >= n)
            continue;
        if (stat(buf, &st) < 0 || !S_ISREG(st.st_mode) || access(buf, X_OK) < 0)
            continue;
        return is_self(&st) ? -ELOOP : 0;
    }
    return -ENOENT;
}

/* What an invocation of the plugin is about. */
typedef struct Call {
    const char *command;
    const char *container_id, *ifname, *netns; /* NULL for VERSION and GC */
    const char *pod_ns, *pod_name;             /* for CNI_ARGS, or NULL */
} Call;

static int env_push(char ***env, const char *fmt, ...) _printf_(2, 3);
static int env_push(char ***env, const char *fmt, ...) {
    _cleanup_free_ char *s = NULL;
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    return strv_push(env, s);
}

/* Our environment less every CNI_ variable, then exactly the call's: the
 * plugin learns nothing else of this invocation (CNI_ARGS carries only the
 * pod's identity, never an address a network config asked for). */
static int call_env(const CniContext *c, const Call *k, char ***ret) {
    _cleanup_(strv_freep) char **env = calloc(1, sizeof(char *));
    int r = env ? 0 : -ENOMEM;

    for (char **e = environ; r >= 0 && *e; e++)
        if (strncmp(*e, "CNI_", 4))
            r = strv_push(&env, *e);
    if (r >= 0)
        r = env_push(&env, "CNI_COMMAND=%s", k->command);
    if (r >= 0)
        r = env_push(&env, "CNI_PATH=%s", c->env->path ? c->env->path : "");
    if (r >= 0 && k->container_id)
        r = env_push(&env, "CNI_CONTAINERID=%s", k->container_id);
    if (r >= 0 && k->ifname)
        r = env_push(&env, "CNI_IFNAME=%s", k->ifname);
    if (r >= 0 && k->netns && k->netns[0])
        r = env_push(&env, "CNI_NETNS=%s", k->netns);
    if (r >= 0 && k->pod_ns && k->pod_ns[0] && k->pod_name && k->pod_name[0])
        r = env_push(&env, "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s",
                     k->pod_ns, k->pod_name);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(env);
    return 0;
}

static void child(const char *path, char **env, int in, int out) {
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    char *argv[] = {(char *)path, NULL};
    execve(path, argv, env);
    _exit(127);
}

/* What run() moves between us and the plugin. */
typedef struct Io {
    const char *in;
    size_t in_len, in_off;
    char *out;
    size_t out_len, out_cap; /* past IPAM_OUTPUT_MAX the rest is read and dropped */
} Io;

static int io_write(Io *io, int fd) {
    ssize_t k = write(fd, io->in + io->in_off, io->in_len - io->in_off);

    if (k < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    io->in_off += (size_t)k;
    return 0;
}

/* 1 at end of file, 0 for more, -errno */
static int io_read(Io *io, int fd) {
    char drop[4096], *to = drop;
    size_t room = sizeof(drop);
    ssize_t k;

    if (io->out_len + 1 >= io->out_cap && io->out_cap < IPAM_OUTPUT_MAX) {
        size_t cap = io->out_cap ? io->out_cap * 2 : 4096;
        char *m = realloc(io->out, cap);
        if (!m)
            return -ENOMEM;
        io->out = m;
        io->out_cap = cap;
    }
    if (io->out_len + 1 < io->out_cap) {
        to = io->out + io->out_len;
        room = io->out_cap - io->out_len - 1;
    }
    k = read(fd, to, room);
    if (k < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (k == 0)
        return 1;
    if (to != drop)
        io->out_len += (size_t)k;
    return 0;
}

/*
 * Feed stdin, collect stdout, and reap the plugin, all within timeout_ms; the
 * plugin's stderr is ours. Past the deadline the plugin is killed:
 * -ETIMEDOUT. A plugin that does not read its config gets EPIPE (main()
 * ignores SIGPIPE); one that closes stdout and lingers is waited for, to the
 * deadline, through its pidfd.
 */
static int run(const char *path, char **env, const char *in, int timeout_ms, char **ret,
               size_t *ret_len, int *ret_status) {
    Io io = {.in = in, .in_len = strlen(in)};
    long long deadline = (long long)clock_monotonic_ms() + timeout_ms;
    int pin[2], pout[2], pidfd = -1, r;
    bool exited = false;

    if (pipe2(pin, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(pout, O_CLOEXEC) < 0) {
        r = -errno;
        close(pin[0]);
        close(pin[1]);
        return r;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(path, env, pin[0], pout[1]);
    r = pid < 0 ? -errno : 0;
    close(pin[0]);
    close(pout[1]);
    if (pid > 0)
        pidfd = pidfd_open(pid, 0); /* -1 before Linux 5.3: waitpid blocks at the end */
    (void)fcntl(pin[1], F_SETFL, O_NONBLOCK);
    (void)fcntl(pout[0], F_SETFL, O_NONBLOCK);
    while (r >= 0 && (pout[0] >= 0 || (pidfd >= 0 && !exited))) {
        struct pollfd fds[3];
        nfds_t n = 0;
        long long left = deadline - (long long)clock_monotonic_ms();

        if (pin[1] >= 0 && io.in_off == io.in_len) {
            close(pin[1]); /* all written: the plugin sees the end of its config */
            pin[1] = -1;
        }
        if (left <= 0) {
            r = -ETIMEDOUT;
            break;
        }
        if (pin[1] >= 0)
            fds[n++] = (struct pollfd){.fd = pin[1], .events = POLLOUT};
        if (pout[0] >= 0)
            fds[n++] = (struct pollfd){.fd = pout[0], .events = POLLIN};
        if (pidfd >= 0 && !exited)
            fds[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        if (poll(fds, n, (int)left) < 0) {
            if (errno != EINTR)
                r = -errno;
            continue;
        }
        for (nfds_t i = 0; i < n && r >= 0; i++) {
            if (!fds[i].revents)
                continue;
            if (fds[i].fd == pin[1]) {
                if (io_write(&io, pin[1]) < 0) { /* EPIPE: it stopped reading */
                    close(pin[1]);
                    pin[1] = -1;
                    io.in_off = io.in_len;
                }
            } else if (fds[i].fd == pout[0]) {
                int k = io_read(&io, pout[0]);
                if (k != 0) {
                    close(pout[0]);
                    pout[0] = -1;
                }
                r = k < 0 ? k : r;
            } else {
                exited = true;
            }
        }
    }
    if (r < 0 && pid > 0)
        (void)kill(pid, SIGKILL);
    if (pin[1] >= 0)
        close(pin[1]);
    if (pout[0] >= 0)
        close(pout[0]);
    if (pidfd >= 0)
        close(pidfd);
    while (pid > 0 && waitpid(pid, ret_status, 0) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        free(io.out);
        return r;
    }
    if (!io.out && !(io.out = calloc(1, 1)))
        return -ENOMEM;
    io.out[io.out_len] = 0;
    *ret = io.out;
    *ret_len = io.out_len;
    return 0;
}

/* The node config's, or its default where DEL runs without one. */
static int ipam_timeout_ms(const CniContext *c) {
    return (int)(c->node ? c->node->timeouts.ipam_s : CONFIG_DEFAULT_IPAM_TIMEOUT_S) * 1000;
}

static int plugin_error(const char *type, const char *command, const char *out, size_t len,
                        int status, RgError *err) {
    json_auto_t *j = json_loadb(out, len, 0, NULL);
    json_t *code = json_object_get(j, "code"), *msg = json_object_get(j, "msg");

    if (json_is_integer(code) && json_is_string(msg))
        return rg_error(err, -EIO, (int)json_integer_value(code), "ipam plugin %s (%s): %s", type,
                        command, json_string_value(msg));
    return rg_error(err, -EIO, CNI_ERR_IO, "ipam plugin %s (%s) failed (status %d)", type, command,
                    status);
}

/* Run the plugin named by conf's ipam.type; its parsed stdout in *ret_out
 * (NULL: not wanted). */
static int call(const CniContext *c, const Call *k, const char *conf, json_t **ret_out,
                RgError *err) {
    json_auto_t *j = json_loads(conf, 0, NULL);
    const char *type = json_string_value(json_object_get(json_object_get(j, "ipam"), "type"));
    _cleanup_(strv_freep) char **env = NULL;
    _cleanup_free_ char *out = NULL;
    char path[4096];
    size_t len = 0;
    int status = 0, r;

    if (!type)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "ipam: recorded config has no type");
    r = find_plugin(c->env->path, type, path, sizeof(path));
    if (r == -ELOOP)
        return rg_error(err, r, CNI_ERR_INVALID_CONFIG,
                        "ipam.type \"%s\" is railgate itself (%s), which never runs as IPAM", type,
                        path);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_INVALID_CONFIG,
                        "ipam.type: plugin \"%s\" not found in CNI_PATH", type);
    r = call_env(c, k, &env);
    if (r >= 0)
        r = run(path, env, conf, ipam_timeout_ms(c), &out, &len, &status);
    if (r == -ETIMEDOUT)
        return rg_error(err, r, CNI_ERR_TRY_AGAIN,
                        "ipam plugin %s (%s) did not finish within %d s (timeouts.ipamSeconds of "
                        "the node config): killed",
                        type, k->command, ipam_timeout_ms(c) / 1000);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "running ipam plugin %s: %s", type, strerror(-r));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return plugin_error(type, k->command, out, len, status, err);
    if (!ret_out)
        return 0;
    *ret_out = json_loadb(out, len, 0, NULL);
    if (!*ret_out || !json_is_object(*ret_out)) {
        json_decref(*ret_out);
        *ret_out = NULL;
        return rg_error(err, -EBADMSG, CNI_ERR_DECODE, "ipam plugin %s: unreadable result", type);
    }
    return 0;
}

int ipam_conf_build(const TenantConfig *t, const char *cni_version, char **ret) {
    json_auto_t *ipam = t->ipam ? json_loads(t->ipam, 0, NULL) : NULL;
    _cleanup_free_ char *name = NULL;
    json_auto_t *conf = NULL;

    if (!ipam)
        return -EINVAL;
    if (asprintf(&name, IPAM_NAME_PREFIX "%s", t->name) < 0)
        return -ENOMEM;
    conf = json_pack("{s:s, s:s, s:O}", "cniVersion", cni_version, "name", name, "ipam", ipam);
    if (!conf)
        return -ENOMEM;
    *ret = json_dumps(conf, JSON_COMPACT | JSON_PRESERVE_ORDER);
    return *ret ? 0 : -ENOMEM;
}

static Call attachment_call(const char *command, const Attachment *a) {
    return (Call){.command = command,
                  .container_id = a->container_id,
                  .ifname = a->ifname,
                  .netns = a->netns,
                  .pod_ns = a->pod_ns,
                  .pod_name = a->pod_name};
}

int ipam_add(const CniContext *c, const Attachment *a, json_t **ret_result, RgError *err) {
    Call k = attachment_call("ADD", a);
    RgError undo = {0};
    int r;

    if (!a->ipam_conf)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "ipam: no config");
    r = call(c, &k, a->ipam_conf, ret_result, err);
    if (r == -EIO || r == -EBADMSG) {
        /* the plugin ran and may have allocated before failing: release it
         * now, as a failed ADD leaves nothing behind */
        if (ipam_release(c, a, &undo) < 0)
            log_warn(NULL, NULL, "releasing the failed IPAM ADD of %s/%s: %s", a->container_id,
                     a->ifname, undo.msg);
    }
    return r;
}

int ipam_release(const CniContext *c, const Attachment *a, RgError *err) {
    Call k = attachment_call("DEL", a);

    if (!a->ipam_conf) {
        /* a record written before railgate recorded IPAM configs: stdin
         * may no longer name the plugin, so nothing can be run for it */
        log_warn(NULL, NULL, "attachment %s/%s: no recorded IPAM config, nothing released",
                 a->container_id, a->ifname);
        return 0;
    }
    return call(c, &k, a->ipam_conf, NULL, err);
}

int ipam_check(const CniContext *c, const Attachment *a, RgError *err) {
    Call k = attachment_call("CHECK", a);

    /* the recorded config alone: a prevResult is stdin's, which no plugin gets */
    return a->ipam_conf ? call(c, &k, a->ipam_conf, NULL, err) : 0;
}

/* The versions the tenant's plugin says it speaks (VERSION), or NULL. */
static char **plugin_versions(const CniContext *c, const TenantConfig *t) {
    Call k = {.command = "VERSION"};
    _cleanup_free_ char *conf = NULL;
    json_auto_t *out = NULL;
    char **l = NULL;
    json_t *v;
    size_t i;
    RgError e = {0};

    if (ipam_conf_build(t, "1.1.0", &conf) < 0 || call(c, &k, conf, &out, &e) < 0)
        return NULL;
    json_array_foreach(json_object_get(out, "supportedVersions"), i, v) {
        if (json_is_string(v) && strv_push(&l, json_string_value(v)) < 0) {
            strv_free(l);
            return NULL;
        }
    }
    return l;
}

int ipam_conf_negotiate(const CniContext *c, const TenantConfig *t, char **ret) {
    _cleanup_(strv_freep) char **have = plugin_versions(c, t);
    const char *want = c->conf->cni_version, *best = NULL;

    /* the request's version if the plugin speaks it, else the newest both
     * railgate and the plugin speak below it (the result's "ips" read the
     * same in all of them); with none, the plugin's own error will say so */
    for (char **v = have; v && *v && !strv_contains(have, want); v++)
        if (cni_version_supported(*v) && cni_version_at_least(want, *v) &&
            (!best || cni_version_at_least(*v, best)))
            best = *v;
    return ipam_conf_build(t, best ? best : want, ret);
}

/* Does the tenant's plugin speak CNI 1.1.0 (the first with GC)? */
static bool speaks_gc(const CniContext *c, const TenantConfig *t) {
    _cleanup_(strv_freep) char **have = plugin_versions(c, t);

    return strv_contains(have, "1.1.0");
}

/* The runtime's list and every attachment railgate still records (an ADD
 * under way records its IPAM config before it runs the plugin). */
static json_t *valid_attachments(const CniContext *c) {
    json_t *l =
        c->conf->valid_attachments ? json_deep_copy(c->conf->valid_attachments) : json_array();
    _cleanup_(strv_freep) char **keys = NULL;

    if (!l || state_record_list(c->node->state_dir, &keys) < 0)
        return l;
    for (char **key = keys; *key; key++) {
        _cleanup_(attachment_freep) Attachment *a = NULL;
        if (state_record_load_key(c->node->state_dir, *key, &a) >= 0)
            json_array_append_new(
                l, json_pack("{s:s, s:s}", "containerID", a->container_id, "ifname", a->ifname));
    }
    return l;
}

static int gc_tenant(const CniContext *c, const TenantConfig *t, json_t *valid, RgError *err) {
    Call k = {.command = "GC"};
    _cleanup_free_ char *conf = NULL, *text = NULL;
    json_auto_t *j = NULL;
    int r;

    r = ipam_conf_build(t, "1.1.0", &conf);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "GC: tenant %s: ipam config", t->name);
    if (!speaks_gc(c, t)) {
        log_info(t->name, NULL, "GC: IPAM plugin %s does not speak CNI 1.1.0: not forwarded",
                 t->ipam_type);
        return 0;
    }
    j = json_loads(conf, 0, NULL);
    if (!j || json_object_set(j, "cni.dev/valid-attachments", valid) < 0 ||
        !(text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER)))
        return -ENOMEM;
    return call(c, &k, text, NULL, err);
}

int ipam_gc(const CniContext *c, RgError *err) {
    json_auto_t *valid = NULL;
    int failed = 0;

    for (size_t i = 0; i < c->node->n_tenants; i++) {
        const TenantConfig *t = &c->node->tenants[i];
        RgError e = {0};
        if (!t->ipam)
            continue;
        if (!valid && !(valid = valid_attachments(c)))
            return -ENOMEM;
        int r = gc_tenant(c, t, valid, &e);
        if (r < 0) {
            log_error(t->name, NULL, r, "GC of IPAM plugin %s: %s", t->ipam_type, e.msg);
            *err = e;
            failed = r;
        }
    }
    return failed;
}
