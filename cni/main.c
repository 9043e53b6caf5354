/* SPDX-License-Identifier: Apache-2.0 */
/* railgate CNI plugin: read the command, run it, answer on stdout in the spec's JSON. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "agentproto.h"
#include "clock.h"
#include "cni.h"
#include "commands.h"
#include "log.h"
#include "state.h"

static int read_stdin(char **ret, size_t *ret_len, RgError *err) {
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);

    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (len == cap) {
            if (cap >= CNI_STDIN_MAX) {
                free(buf);
                return rg_error(err, -E2BIG, CNI_ERR_IO, "stdin: config larger than %u bytes",
                                CNI_STDIN_MAX);
            }
            char *m = realloc(buf, cap *= 2);
            if (!m) {
                free(buf);
                return -ENOMEM;
            }
            buf = m;
        }
        ssize_t k = read(STDIN_FILENO, buf + len, cap - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            free(buf);
            return rg_error(err, -errno, CNI_ERR_IO, "stdin: %s", strerror(errno));
        }
        if (k == 0)
            break;
        len += (size_t)k;
    }
    *ret = buf;
    *ret_len = len;
    return 0;
}

static void print_json(json_t *j) {
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    if (s)
        printf("%s\n", s);
    free(s);
    fflush(stdout);
}

static int print_error(const char *version, const RgError *err) {
    json_auto_t *j = json_pack("{s:s, s:i, s:s}", "cniVersion", version ? version : "1.1.0", "code",
                               err->code ? err->code : CNI_ERR_IO, "msg",
                               err->msg[0] ? err->msg : "internal error");

    print_json(j);
    return 1;
}

static int dispatch(CniContext *c, json_t **out, RgError *err) {
    switch (c->env->command) {
    case CNI_CMD_ADD:
        return cmd_add(c, out, err);
    case CNI_CMD_DEL:
        return cmd_del(c, err);
    case CNI_CMD_CHECK:
        return cmd_check(c, err);
    case CNI_CMD_GC:
        return cmd_gc(c, err);
    case CNI_CMD_STATUS:
        return cmd_status(c, err);
    case CNI_CMD_VERSION:
        *out = cni_version_result(c->conf->cni_version);
        return *out ? 0 : -ENOMEM;
    }
    return -EINVAL;
}

/* What the command did, to the node agent (for its metrics), once the
 * runtime has its answer: never waited for, never a failure. */
static void report(const CniContext *c, int code, uint64_t started_ns) {
    static const AgentCommand commands[] = {
        [CNI_CMD_ADD] = AGENT_COMMAND__ADD,       [CNI_CMD_DEL] = AGENT_COMMAND__DEL,
        [CNI_CMD_CHECK] = AGENT_COMMAND__CHECK,   [CNI_CMD_GC] = AGENT_COMMAND__GC,
        [CNI_CMD_STATUS] = AGENT_COMMAND__STATUS,
    };
    AgentReport rep = AGENT_REPORT__INIT;
    char sock[4096];

    if (!c->node || c->env->command == CNI_CMD_VERSION ||
        agent_socket_path(c->node->state_dir, sock, sizeof(sock)) < 0)
        return;
    rep.command = commands[c->env->command];
    rep.result_code = (uint32_t)code;
    rep.duration_ns = clock_monotonic_ns() - started_ns;
    rep.rails = c->rails;
    rep.tenant = (char *)(c->tenant ? c->tenant : "");
    /* containerd's are 64 hex digits; a longer one the agent would not log */
    if (c->env->container_id && strlen(c->env->container_id) <= AGENT_MAX_SANDBOX_ID)
        rep.sandbox_id = (char *)c->env->container_id;
    rep.agent_ns = c->phases.agent_ns;
    rep.moves_ns = c->phases.moves_ns;
    rep.configure_ns = c->phases.configure_ns;
    rep.state_ns = c->phases.state_ns;
    agentclient_report(sock, &rep);
}

int main(void) {
    uint64_t started_ns = clock_monotonic_ns();
    CniEnv env = {0};
    CniConf conf = {0};
    RgError err = {0};
    _cleanup_free_ char *raw = NULL, *asked = NULL;
    size_t len = 0;
    json_t *out = NULL;
    int r;

    signal(SIGPIPE, SIG_IGN);
    log_setup(LOG_FORMAT_TEXT, LOG_LVL_INFO, "railgate-cni");
    /* stdin first: every error answers in the version the request asked for */
    r = read_stdin(&raw, &len, &err);
    if (r >= 0)
        asked = cni_conf_peek_version(raw, len);
    if (r >= 0)
        r = cni_env_parse(&env, &err);
    if (r >= 0 && env.command == CNI_CMD_VERSION && len == 0)
        r = cni_conf_parse("{\"cniVersion\":\"1.1.0\"}", 22, env.command, &conf, &err);
    else if (r >= 0)
        r = cni_conf_parse(raw, len, env.command, &conf, &err);
    if (r < 0) {
        log_error(NULL, NULL, r, "%s", err.msg);
        cni_env_done(&env);
        return print_error(asked, &err);
    }
    const char *path = getenv(CNI_NODE_CONFIG_ENV);
    CniContext c = {
        .env = &env, .conf = &conf, .config_path = path ? path : CNI_DEFAULT_NODE_CONFIG};
    r = dispatch(&c, &out, &err);
    if (conf.ignored[0]) /* after dispatch: the node config's log file is open */
        log_warn(NULL, NULL, "%s of %s/%s: network config %s", cni_command_name(env.command),
                 env.container_id ? env.container_id : "", env.ifname ? env.ifname : "",
                 conf.ignored);
    if (r < 0) {
        if (err.code == 0)
            rg_error(&err, r, CNI_ERR_IO, "%s", strerror(-r));
        if (env.container_id)
            log_error(NULL, NULL, r, "%s of %s/%s failed: %s", cni_command_name(env.command),
                      env.container_id, env.ifname ? env.ifname : "", err.msg);
        else
            log_error(NULL, NULL, r, "%s failed: %s", cni_command_name(env.command), err.msg);
        print_error(conf.cni_version, &err);
    } else if (out)
        print_json(out);
    /* the answer is out: what follows costs the runtime no wait */
    report(&c, r < 0 ? err.code : 0, started_ns);
    json_decref(out);
    config_free(c.node);
    cni_conf_done(&conf);
    cni_env_done(&env);
    log_close_file();
    return r < 0 ? 1 : 0;
}
