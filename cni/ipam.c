/* IPAM delegation: run the plugin named by ipam.type from CNI_PATH, as the spec says. */
#include <ctype.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ops.h"

#define IPAM_OUTPUT_MAX (1u << 20)

extern char **environ;

static bool plugin_name_valid(const char *s) {
    if (!*s || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
            return false;
    return true;
}

static int find_plugin(const char *cni_path, const char *type, char *buf, size_t n) {
    _cleanup_free_ char *copy = strdup(cni_path ? cni_path : "");
    char *save = NULL;
    struct stat st;

    if (!copy)
        return -ENOMEM;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if ((size_t)snprintf(buf, n, "%s/%s", d, type) >= n)
            continue;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

/* The parent environment with CNI_COMMAND (and CNI_CONTAINERID) replaced. */
static char **delegate_env(const char *command, const char *container_id) {
    size_t n = 0, k = 0;

    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof(char *));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CNI_COMMAND=", 12) &&
            !(container_id && !strncmp(environ[i], "CNI_CONTAINERID=", 16)))
            env[k++] = environ[i];
    if (asprintf(&env[k++], "CNI_COMMAND=%s", command) < 0)
        env[--k] = NULL;
    if (container_id && asprintf(&env[k++], "CNI_CONTAINERID=%s", container_id) < 0)
        env[--k] = NULL;
    return env;
}

static void child(const char *path, char **env, int in, int out) {
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    char *argv[] = {(char *)path, NULL};
    execve(path, argv, env);
    _exit(127);
}

/* Feed stdin, collect stdout; the plugin's stderr is ours. */
static int run(const char *path, char **env, const char *in, size_t in_len, char **ret,
               size_t *ret_len, int *ret_status) {
    int pin[2], pout[2];
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);

    if (!buf)
        return -ENOMEM;
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0) {
        free(buf);
        return -errno;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(path, env, pin[0], pout[1]);
    close(pin[0]);
    close(pout[1]);
    if (pid < 0) {
        close(pin[1]);
        close(pout[0]);
        free(buf);
        return -errno;
    }
    /* a config is well under the pipe buffer; a plugin that does not read
     * it gets EPIPE, which SIGPIPE-ignoring main() turns into an error */
    (void)!write(pin[1], in, in_len);
    close(pin[1]);
    for (;;) {
        if (len + 1 >= cap && cap < IPAM_OUTPUT_MAX) {
            char *m = realloc(buf, cap *= 2);
            if (!m)
                break;
            buf = m;
        }
        ssize_t k = read(pout[0], buf + len, cap - len - 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || len + 1 >= cap)
            break;
        len += (size_t)k;
    }
    close(pout[0]);
    buf[len] = 0;
    while (waitpid(pid, ret_status, 0) < 0 && errno == EINTR)
        ;
    *ret = buf;
    *ret_len = len;
    return 0;
}

static int plugin_error(const char *type, const char *out, size_t len, int status, RgError *err) {
    json_auto_t *j = json_loadb(out, len, 0, NULL);
    json_t *code = json_object_get(j, "code"), *msg = json_object_get(j, "msg");

    if (json_is_integer(code) && json_is_string(msg))
        return rg_error(err, -EIO, (int)json_integer_value(code), "ipam plugin %s: %s", type,
                        json_string_value(msg));
    return rg_error(err, -EIO, CNI_ERR_IO, "ipam plugin %s failed (status %d)", type, status);
}

int ipam_exec(const CniContext *c, const char *command, const char *container_id,
              json_t **ret_result, RgError *err) {
    const char *type = json_string_value(json_object_get(c->conf->ipam, "type"));
    char path[4096];
    _cleanup_free_ char *out = NULL;
    size_t len = 0;
    int status = 0, r;

    if (!type || !plugin_name_valid(type))
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "ipam.type: not a plugin name");
    if (find_plugin(c->env->path, type, path, sizeof(path)) < 0)
        return rg_error(err, -ENOENT, CNI_ERR_INVALID_CONFIG,
                        "ipam.type: plugin \"%s\" not found in CNI_PATH", type);
    char **env = delegate_env(command, container_id);
    if (!env)
        return -ENOMEM;
    r = run(path, env, c->conf->raw, c->conf->raw_len, &out, &len, &status);
    for (size_t i = 0; env[i]; i++)
        if (!strncmp(env[i], "CNI_COMMAND=", 12) ||
            (container_id && !strncmp(env[i], "CNI_CONTAINERID=", 16)))
            free(env[i]);
    free(env);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "running ipam plugin %s: %s", type, strerror(-r));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return plugin_error(type, out, len, status, err);
    if (!ret_result)
        return 0;
    *ret_result = json_loadb(out, len, 0, NULL);
    if (!*ret_result || !json_is_object(*ret_result))
        return rg_error(err, -EBADMSG, CNI_ERR_DECODE, "ipam plugin %s: unreadable result", type);
    return 0;
}
