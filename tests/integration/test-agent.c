/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent (railgate-device-plugin), the CNI's one source of "which
 * units does this pod hold": its socket against peers that are not root,
 * garbage, oversized and truncated frames, another protocol version, clients
 * that never ask and more clients than it takes; a kubelet that hangs or
 * restarts; and the CNI against an agent that is away, slow, restarted
 * during an ADD, or lying. Real binaries, real sockets, rails of the
 * harness's kind in a private network namespace (tests/lib/cnienv). Races are held open with
 * failpoints (=pause) and with a kubelet that accepts and never answers.
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent.h"
#include "agentproto.h"
#include "cnienv.h"
#include "pb.h"
#include "proc.h"
#include "scrape.h"
#include "testns.h"
#include "waitscale.h"

#define RES_A "railgate.io/a"
#define RES_B "railgate.io/b"
#define WAIT_MS 15000

static CniEnvT env;
typedef CniPod Pod;

static int group_setup(void **state) {
    testns_require_root();
    assert_int_equal(testns_enter_private(), 0);
    assert_int_equal(cnienv_setup(&env, CNIENV_RAILS), 0);
    return 0;
}

static int group_teardown(void **state) {
    cnienv_teardown(&env);
    return 0;
}

/* ---- speaking to the socket ---- */

static int sock_connect(void) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    memcpy(sa.sun_path, env.agent_sock, strlen(env.agent_sock) + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

static void send_bytes(int fd, const void *buf, size_t len) {
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void send_question(int fd, const char *ns, const char *name) {
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_request_pod_units(ns, name, NULL, &buf, &len), 0);
    send_bytes(fd, buf, len);
    free(buf);
}

static void send_report(int fd) {
    AgentReport rep = AGENT_REPORT__INIT;
    uint8_t *buf = NULL;
    size_t len = 0;

    rep.command = AGENT_COMMAND__CHECK;
    rep.rails = 1;
    assert_int_equal(agent_request_report(&rep, &buf, &len), 0);
    send_bytes(fd, buf, len);
    free(buf);
}

/* One reply within ms (scaled): 0 and *ret; -ETIMEDOUT when none came;
 * -ECONNRESET when the agent closed without one. */
static int read_reply(int fd, int ms, AgentReply **ret) {
    static uint8_t buf[AGENT_MAX_REPLY + 1];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    RgError err = {0};
    ssize_t n;

    if (poll(&p, 1, wait_scaled_ms(ms)) == 0)
        return -ETIMEDOUT;
    n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
        return -ECONNRESET;
    assert_int_equal(agent_reply_parse(buf, (size_t)n, ret, &err), 0);
    return 0;
}

/* The reply is status with a message holding what, then the connection ends. */
static void expect_reply(int fd, int status, const char *what) {
    AgentReply *rep = NULL;
    char c;

    assert_int_equal(read_reply(fd, WAIT_MS, &rep), 0);
    if ((int)rep->status != status || !strstr(rep->message, what))
        fail_msg("reply %s \"%s\", expected %s \"%s\"", agent_status_name(rep->status),
                 rep->message, agent_status_name(status), what);
    agent_reply__free_unpacked(rep, NULL);
    assert_int_equal(recv(fd, &c, 1, 0), 0); /* closed after its one answer */
    close(fd);
}

/* What the agent answers for pod ns/name: OK, and its ids joined by ',' ("" for none). */
static char *units_of(const char *ns, const char *name) {
    int fd = sock_connect();
    AgentReply *rep = NULL;
    char *list = NULL;

    assert_true(fd >= 0);
    send_question(fd, ns, name);
    assert_int_equal(read_reply(fd, WAIT_MS, &rep), 0);
    assert_int_equal(rep->status, AGENT_STATUS__OK);
    char **ids = rep->units ? rep->units->ids : NULL;
    size_t n = rep->units ? rep->units->n_ids : 0;
    list = strdup("");
    for (size_t i = 0; i < n; i++) {
        char *m = NULL;
        assert_true(asprintf(&m, "%s%s%s", list, i ? "," : "", ids[i]) > 0);
        free(list);
        list = m;
    }
    agent_reply__free_unpacked(rep, NULL);
    close(fd);
    return list;
}

static void expect_units(const char *ns, const char *name, const char *want) {
    char *got = units_of(ns, name);

    assert_string_equal(got, want);
    free(got);
}

static void config_timeouts(int pod_resources_s, int agent_s, char **ret_saved) {
    json_t *t = json_pack("{s:i}", "podResourcesSeconds", pod_resources_s);

    if (agent_s)
        json_object_set_new(t, "agentSeconds", json_integer(agent_s));
    assert_int_equal(cnienv_config_patch(&env, t, NULL, ret_saved), 0);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
}

static void config_back(char *saved) {
    assert_int_equal(cnienv_config_restore(&env, saved), 0);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
}

static bool agent_log_has(void *needle) {
    return file_contains(env.agent_log, needle);
}

/* ---- a kubelet that accepts and never answers ---- */

/* kubelet gone, and in its PodResources socket's place one that takes
 * connections and says nothing: every lookup waits until it is back. */
static int kubelet_hang(void) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    fk_stop(env.k);
    env.k = NULL;
    assert_true((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path),
                                 "%.80s/pod-resources/kubelet.sock",
                                 env.kubelet) < sizeof(sa.sun_path));
    (void)unlink(sa.sun_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 256), 0);
    return fd;
}

static void kubelet_back(int hung) {
    char path[256];

    snprintf(path, sizeof(path), "%s/pod-resources/kubelet.sock", env.kubelet);
    close(hung); /* the connections waiting in it are reset */
    (void)unlink(path);
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
}

/* Every question read before a report sent after them was answered: the
 * agent's reader takes connections and frames in the order they came. */
static void barrier(void) {
    int fd = sock_connect();

    assert_true(fd >= 0);
    send_report(fd);
    expect_reply(fd, AGENT_STATUS__OK, "");
}

static bool readable_now(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, 0) > 0;
}

/* ---- the socket ---- */

/* The socket is root's and 0600 in a 0700 dir (one more open is closed at
 * start); a stale socket (an agent killed) is replaced by the next start. */
static void test_socket_files(void **state) {
    struct stat st;

    assert_int_equal(lstat(env.agent_sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(stat(env.state, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    /* killed: its socket stays, refusing */
    assert_int_equal(kill(env.agent, SIGKILL), 0);
    assert_int_equal(cnienv_agent_stop(&env), 128 + SIGKILL);
    assert_int_equal(lstat(env.agent_sock, &st), 0);
    assert_int_equal(sock_connect(), -ECONNREFUSED);
    assert_int_equal(chmod(env.state, 0755), 0);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    assert_int_equal(stat(env.state, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_true(testns_wait_until(agent_log_has, "was mode 0755: made 0700", WAIT_MS));
    expect_units("team-a", "nobody", "");
    /* stopped: its socket goes with it */
    assert_int_equal(cnienv_agent_stop(&env), 0);
    assert_int_equal(lstat(env.agent_sock, &st), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
}

/* The answer is kubelet's at the time of the question: nothing is cached. */
static void test_questions_answered(void **state) {
    char *a[] = {"rail3", "rail1"}, *b[] = {"rail5"}, *other[] = {"GPU-0"};

    assert_int_equal(fk_pod_set(env.k, "team-a", "q1", RES_A, a, 2), 0);
    assert_int_equal(fk_pod_set(env.k, "team-a", "q2", "nvidia.com/gpu", other, 1), 0);
    expect_units("team-a", "q1", "rail3,rail1");
    expect_units("team-a", "q2", ""); /* holds no railgate unit */
    expect_units("team-a", "q3", ""); /* unknown to kubelet */
    assert_int_equal(fk_pod_set(env.k, "team-a", "q1", RES_A, b, 1), 0);
    expect_units("team-a", "q1", "rail5");
    /* kubelet without PodResources Get (< 1.34): List */
    fk_podresources_get_disabled(env.k, true);
    expect_units("team-a", "q1", "rail5");
    fk_podresources_get_disabled(env.k, false);
    fk_pod_remove(env.k, "team-a", "q1");
    fk_pod_remove(env.k, "team-a", "q2");
}

/* A child of this test as uid 65534: 0 when it was refused. Without
 * capabilities it cannot even connect (EACCES: the socket is 0600 in a 0700
 * dir); with CAP_DAC_OVERRIDE kept it connects, and the agent's credentials
 * check refuses it at once: PERMISSION_DENIED, then the end. (It does not
 * ask: a question sent after the agent closed would read as a reset.) */
static int as_nobody(bool dac_override) {
    pid_t pid;
    int status = -1;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2] = {{0}};
        AgentReply *rep = NULL;
        char c;

        if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
            setuid(65534) < 0)
            _exit(10);
        d[0].effective = d[0].permitted = 1u << CAP_DAC_OVERRIDE;
        if (dac_override && syscall(SYS_capset, &h, d) < 0)
            _exit(11);
        int fd = sock_connect();
        if (fd < 0)
            _exit(!dac_override && fd == -EACCES ? 0 : 12);
        if (read_reply(fd, WAIT_MS, &rep) < 0)
            _exit(13);
        _exit(rep->status == AGENT_STATUS__PERMISSION_DENIED && recv(fd, &c, 1, 0) == 0 ? 0 : 14);
    }
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_bad_peer(void **state) {
    assert_int_equal(as_nobody(false), 0);
    assert_int_equal(as_nobody(true), 0);
    assert_true(testns_wait_until(agent_log_has, "refused a connection from uid 65534", WAIT_MS));
    expect_units("team-a", "nobody", ""); /* root is still answered */
}

/* A request frame for pod team-a/<name>, as the CNI would send it. */
static size_t good_frame(uint8_t *out, size_t max, const char *name) {
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_request_pod_units("team-a", name, NULL, &buf, &len), 0);
    assert_true(len <= max);
    memcpy(out, buf, len);
    free(buf);
    return len;
}

/* req framed as given, sent on a connection of its own: refused with status
 * and a message holding what. */
static void expect_refused(const AgentRequest *req, int status, const char *what) {
    uint8_t *buf = NULL;
    size_t len = 0;
    int fd = sock_connect();

    assert_true(fd >= 0);
    assert_int_equal(agent_frame_pack(&req->base, AGENT_MAX_REQUEST, &buf, &len), 0);
    send_bytes(fd, buf, len);
    free(buf);
    expect_reply(fd, status, what);
}

/* Each gets its refusal and the end of its connection; the agent answers on. */
static void test_garbage_frames(void **state) {
    static uint8_t f[8192];
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    static const uint8_t junk[] = {'R', 'G', 'A', 'P', 0, 0, 0, 3, 0x0a, 0xff, 0x01};
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;
    size_t len;
    int fd;
    pid_t agent = env.agent;

    fd = sock_connect();
    send_bytes(fd, http, sizeof(http) - 1);
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "not a railgate agent request frame");
    len = good_frame(f, sizeof(f), "pod-a");
    fd = sock_connect();
    send_bytes(fd, f, len - 3);
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "truncated");
    fd = sock_connect();
    send_bytes(fd, f, len + 2);
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "trailing bytes");
    fd = sock_connect();
    send_bytes(fd, f, sizeof(f)); /* oversized */
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "more than 4096 bytes");
    fd = sock_connect();
    send_bytes(fd, junk, sizeof(junk));
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "no AgentRequest message");
    /* well framed, but out of bounds */
    req.version = AGENT_PROTOCOL_VERSION;
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    q.namespace_ = "team-a";
    q.name = "pod a; rm -rf /";
    expect_refused(&req, AGENT_STATUS__BAD_REQUEST, "pod_units.name");
    req.body_case = AGENT_REQUEST__BODY__NOT_SET;
    expect_refused(&req, AGENT_STATUS__BAD_REQUEST, "a request with no question");
    assert_int_equal(env.agent, agent);
    assert_int_equal(kill(agent, 0), 0);
    expect_units("team-a", "pod-a", "");
}

static void test_unknown_version(void **state) {
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;

    req.version = 2;
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    q.namespace_ = "team-a";
    q.name = "pod-a";
    expect_refused(&req, AGENT_STATUS__UNSUPPORTED_VERSION,
                   "request version 2; this agent speaks version 1");
}

/* A client that connects and never asks is dropped at timeouts.agentSeconds;
 * meanwhile everyone else is answered. */
static void test_silent_client_dropped(void **state) {
    char *saved = NULL, c;
    AgentReply *rep = NULL;
    int silent;

    config_timeouts(1, 2, &saved);
    silent = sock_connect();
    assert_true(silent >= 0);
    expect_units("team-a", "pod-a", "");
    assert_int_equal(read_reply(silent, WAIT_MS, &rep), -ECONNRESET);
    assert_int_equal(recv(silent, &c, 1, 0), 0);
    close(silent);
    assert_true(
        testns_wait_until(agent_log_has, "a connection asked nothing in 2 s: dropped", WAIT_MS));
    config_back(saved);
}

/* A kubelet that never answers holds up its questions, and nothing else:
 * the reader acknowledges reports and refuses garbage while every worker
 * waits; once kubelet is back (a new one at the same path) the questions
 * waiting are answered from it, by the same agent (its channel reconnects). */
static void test_slow_kubelet_holds_up_no_one(void **state) {
    char *saved = NULL, *ids[] = {"rail2", "rail4"};
    int asked[AGENT_WORKERS + 1], hung, fd;
    static const char junk[] = "garbage";
    pid_t agent;
    AgentReply *rep = NULL;

    config_timeouts(120, 0, &saved);
    agent = env.agent;
    hung = kubelet_hang();
    for (size_t i = 0; i < ELEMENTSOF(asked); i++) { /* every worker, and one queued */
        asked[i] = sock_connect();
        assert_true(asked[i] >= 0);
        send_question(asked[i], "team-a", i == 0 ? "slow" : "other");
    }
    barrier(); /* a report acknowledged */
    fd = sock_connect();
    send_bytes(fd, junk, sizeof(junk));
    expect_reply(fd, AGENT_STATUS__BAD_REQUEST, "not a railgate agent request frame");
    for (size_t i = 0; i < ELEMENTSOF(asked); i++)
        assert_false(readable_now(asked[i])); /* kubelet has not answered */
    kubelet_back(hung);
    assert_int_equal(fk_pod_set(env.k, "team-a", "slow", RES_A, ids, 2), 0);
    assert_int_equal(read_reply(asked[0], WAIT_MS, &rep), 0);
    assert_int_equal(rep->status, AGENT_STATUS__OK);
    assert_non_null(rep->units);
    assert_int_equal(rep->units->n_ids, 2);
    assert_string_equal(rep->units->ids[0], "rail2");
    agent_reply__free_unpacked(rep, NULL);
    for (size_t i = 0; i < ELEMENTSOF(asked); i++) {
        if (i > 0) {
            assert_int_equal(read_reply(asked[i], WAIT_MS, &rep), 0);
            assert_int_equal(rep->status, AGENT_STATUS__OK);
            agent_reply__free_unpacked(rep, NULL);
        }
        close(asked[i]);
    }
    assert_int_equal(env.agent, agent);
    fk_pod_remove(env.k, "team-a", "slow");
    config_back(saved);
}

/* More questions than workers and queue take, and more connections than it
 * reads at once: the rest are answered BUSY at once, never left waiting. */
static void test_busy(void **state) {
    enum { MAX = AGENT_WORKERS + AGENT_MAX_QUEUED + 1 };
    static int asked[MAX], silent[AGENT_MAX_CLIENTS];
    char *saved = NULL;
    size_t n = 0;
    int hung, fd;

    config_timeouts(120, 0, &saved);
    hung = kubelet_hang();
    /* questions until one is answered BUSY (a refusal is sent before the
     * reader goes on to the barrier's report): the queue holds
     * AGENT_MAX_QUEUED, and each worker one more once it took its question */
    for (fd = -1; n < MAX && fd < 0; n++) {
        asked[n] = sock_connect();
        assert_true(asked[n] >= 0);
        send_question(asked[n], "team-a", "busy");
        barrier();
        if (readable_now(asked[n]))
            fd = asked[n];
    }
    assert_true(fd >= 0);
    assert_in_range(n - 1, AGENT_MAX_QUEUED, AGENT_MAX_QUEUED + AGENT_WORKERS);
    expect_reply(fd, AGENT_STATUS__BUSY, "too many questions at once");
    n--;
    /* connections that do not ask: every slot but one, a barrier through
     * that one, then the last slot; the next connection finds none */
    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++) {
        if (i == AGENT_MAX_CLIENTS - 1)
            barrier();
        silent[i] = sock_connect();
        assert_true(silent[i] >= 0);
    }
    fd = sock_connect();
    assert_true(fd >= 0);
    expect_reply(fd, AGENT_STATUS__BUSY, "too many connections at once");
    for (size_t i = 0; i < AGENT_MAX_CLIENTS; i++)
        close(silent[i]);
    kubelet_back(hung);
    for (size_t i = 0; i < n; i++) {
        AgentReply *rep = NULL;
        assert_int_equal(read_reply(asked[i], WAIT_MS, &rep), 0);
        assert_int_equal(rep->status, AGENT_STATUS__OK);
        agent_reply__free_unpacked(rep, NULL);
        close(asked[i]);
    }
    config_back(saved);
}

/* SIGTERM while every worker waits for a hung kubelet: the agent ends at
 * once, exit 0, each question answered UNAVAILABLE or closed, its socket
 * removed. */
static void test_stop_with_lookups_waiting(void **state) {
    char *saved = NULL;
    int asked[AGENT_WORKERS + 2], hung;
    struct stat st;

    config_timeouts(120, 0, &saved);
    hung = kubelet_hang();
    for (size_t i = 0; i < ELEMENTSOF(asked); i++) {
        asked[i] = sock_connect();
        send_question(asked[i], "team-a", "stop");
    }
    barrier();
    assert_int_equal(cnienv_agent_stop(&env), 0);
    for (size_t i = 0; i < ELEMENTSOF(asked); i++) {
        AgentReply *rep = NULL;
        int r = read_reply(asked[i], WAIT_MS, &rep);
        assert_true(r == -ECONNRESET || (r == 0 && rep->status == AGENT_STATUS__UNAVAILABLE));
        if (rep)
            agent_reply__free_unpacked(rep, NULL);
        close(asked[i]);
    }
    assert_int_equal(lstat(env.agent_sock, &st), -1);
    kubelet_back(hung);
    assert_int_equal(cnienv_config_restore(&env, saved), 0);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
}

/* ---- the CNI against the agent ---- */

static int cni(Pod *p, const char *cmd, char *const *extra, CniRun *r) {
    return cnienv_pod_cmd(&env, p, cmd, extra, r);
}

/* Nothing moved: the rail on the host, none in the pod, nothing recorded or claimed. */
static void assert_nothing_moved(const Pod *p, unsigned rail) {
    assert_true(cnienv_nothing_moved(&env, p, rail));
}

static void expect_cni_error(Pod *p, char *const *extra, int code, const char *what) {
    CniRun r;

    assert_int_equal(cni(p, "ADD", extra, &r), 0);
    if (r.status != 1 || cni_run_code(&r) != code || !strstr(cni_run_msg(&r), what))
        fail_msg("ADD answered %s, expected code %d saying \"%s\"", r.raw, code, what);
    cni_run_done(&r);
}

static void cni_ok(Pod *p, const char *cmd) {
    CniRun r;

    assert_int_equal(cni(p, cmd, NULL, &r), 0);
    if (r.status != 0)
        fail_msg("%s: %s", cmd, r.raw);
    cni_run_done(&r);
}

/* Agent away (no socket; a socket nobody serves): ADD fails with 11 naming
 * the socket and the key that sets the wait, for a pod with units and for
 * one without (only the agent can say a pod holds none); nothing moves. */
static void test_add_without_agent(void **state) {
    char *ids[] = {"rail6"}, want[256];
    Pod p, none;

    snprintf(want, sizeof(want), "not answering at %s", env.agent_sock);
    assert_int_equal(cnienv_pod_new(&env, &p, "away", "team-a", RES_A, ids, 1), 0);
    assert_int_equal(cnienv_pod_new(&env, &none, "none", "team-a", NULL, NULL, 0), 0);
    assert_int_equal(cnienv_agent_stop(&env), 0);
    expect_cni_error(&p, NULL, 11, want);
    expect_cni_error(&p, NULL, 11, "timeouts.agentSeconds");
    expect_cni_error(&p, NULL, 11, "No such file or directory");
    expect_cni_error(&none, NULL, 11, want);
    assert_nothing_moved(&p, 6);
    /* killed: the socket is there and refuses */
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    assert_int_equal(kill(env.agent, SIGKILL), 0);
    assert_int_equal(cnienv_agent_stop(&env), 128 + SIGKILL);
    expect_cni_error(&p, NULL, 11, "Connection refused");
    assert_nothing_moved(&p, 6);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    cni_ok(&p, "ADD");
    assert_false(link_on_host("rail-nic6"));
    cni_ok(&p, "DEL");
    assert_true(link_on_host("rail-nic6"));
    cnienv_pod_free(&env, &p);
    cnienv_pod_free(&env, &none);
}

/* DEL, CHECK, GC and STATUS work from records: the agent stopped changes nothing for them. */
static void test_del_check_gc_status_without_agent(void **state) {
    char *a[] = {"rail7"}, *b[] = {"rail8"}, *conf;
    Pod p, q;
    CniRun r;

    assert_int_equal(cnienv_pod_new(&env, &p, "rec", "team-a", RES_A, a, 1), 0);
    assert_int_equal(cnienv_pod_new(&env, &q, "rec", "team-a", RES_A, b, 1), 0);
    cni_ok(&p, "ADD");
    cni_ok(&q, "ADD");
    assert_int_equal(cnienv_agent_stop(&env), 0);
    cni_ok(&p, "CHECK");
    conf = cnienv_conf("1.1.0", NULL);
    assert_int_equal(
        cnienv_run(&env, "railgate", "STATUS", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    cni_ok(&p, "DEL");
    assert_true(link_on_host("rail-nic7"));
    conf = cnienv_conf("1.1.0", "\"cni.dev/valid-attachments\": []");
    assert_int_equal(
        cnienv_run(&env, "railgate", "GC", NULL, NULL, NULL, NULL, NULL, conf, NULL, &r), 0);
    assert_int_equal(r.status, 0);
    cni_run_done(&r);
    free(conf);
    assert_true(link_on_host("rail-nic8"));
    assert_int_equal(cnienv_state_count(&env, "attachments"), 0);
    assert_int_equal(cnienv_state_count(&env, "units"), 0);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    cnienv_pod_free(&env, &p);
    cnienv_pod_free(&env, &q);
}

/* The agent stops answering (held at a failpoint): the CNI gives up at
 * timeouts.agentSeconds with 11, and nothing moves. */
static void test_slow_agent(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *ids[] = {"rail9"}, *saved = NULL, *fp[] = {"RAILGATE_FAILPOINT=agent-lookup=pause", NULL};
    Pod p;

    assert_int_equal(cnienv_config_patch(
                         &env, json_pack("{s:i, s:i}", "podResourcesSeconds", 1, "agentSeconds", 2),
                         NULL, &saved),
                     0);
    assert_int_equal(cnienv_agent_restart(&env, fp), 0);
    assert_int_equal(cnienv_pod_new(&env, &p, "slow", "team-a", RES_A, ids, 1), 0);
    expect_cni_error(&p, NULL, 11, "did not answer within 2 s (timeouts.agentSeconds");
    assert_nothing_moved(&p, 9);
    assert_int_equal(kill(env.agent, SIGCONT), 0);
    assert_int_equal(cnienv_config_restore(&env, saved), 0);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    cnienv_pod_free(&env, &p);
#endif
}

/* The agent restarts while an ADD waits for it (the CNI held between its
 * connect and its question), or dies in the middle of its lookup: 11, nothing
 * moved; the next ADD is answered by the new agent. */
static void test_agent_restarted_during_add(void **state) {
#ifndef RAILGATE_FAILPOINTS
    skip();
#else
    char *ids[] = {"rail10"}, *conf = cnienv_conf("1.1.0", NULL);
    char *held[] = {"RAILGATE_FAILPOINT=cni-agent-connected=pause", NULL};
    char *die[] = {"RAILGATE_FAILPOINT=agent-lookup=kill", NULL};
    CniProc proc;
    CniRun r;
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "restart", "team-a", RES_A, ids, 1), 0);
    assert_int_equal(cnienv_start(&env, "railgate", "ADD", p.container, p.netns, "eth0", p.ns,
                                  p.name, conf, held, &proc),
                     0);
    assert_int_equal(cni_proc_wait_stopped(&proc), 0);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
    assert_int_equal(cni_proc_continue(&proc), 0);
    assert_int_equal(cni_proc_finish(&proc, &r), 0);
    assert_int_equal(r.status, 1);
    assert_int_equal(cni_run_code(&r), 11);
    assert_non_null(strstr(cni_run_msg(&r), "not answering at"));
    cni_run_done(&r);
    assert_nothing_moved(&p, 10);
    /* killed while it asks kubelet */
    assert_int_equal(cnienv_agent_restart(&env, die), 0);
    expect_cni_error(&p, NULL, 11, "closed before it answered");
    assert_nothing_moved(&p, 10);
    assert_int_equal(cnienv_agent_stop(&env), 128 + SIGKILL);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    cni_ok(&p, "ADD");
    assert_false(link_on_host("rail-nic10"));
    cni_ok(&p, "DEL");
    cnienv_pod_free(&env, &p);
    free(conf);
#endif
}

/* An agent that lies: the socket served by the test, each answer checked by
 * the CNI against the node config's tenancy and the published inventory. */
static int liar_listen(bool drop_to_nobody) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    memcpy(sa.sun_path, env.agent_sock, strlen(env.agent_sock) + 1);
    (void)unlink(env.agent_sock);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (!drop_to_nobody)
        assert_int_equal(listen(fd, 8), 0);
    return fd;
}

/* One ADD of p answered with frame (by root, or by uid 65534 when nobody). */
static void liar_add(Pod *p, const void *frame, size_t len, bool nobody, int code,
                     const char *what) {
    char *conf = cnienv_conf("1.1.0", NULL);
    int lfd = liar_listen(nobody);
    pid_t child = -1;
    CniProc proc;
    CniRun r;

    if (nobody) { /* its listen() records who serves: uid 65534 */
        fflush(NULL);
        child = fork();
        if (child == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0 || listen(lfd, 8) < 0)
                _exit(1);
            struct pollfd pf = {.fd = lfd, .events = POLLIN};
            int c = poll(&pf, 1, wait_scaled_ms(WAIT_MS)) > 0 ? accept(lfd, NULL, NULL) : -1;
            if (c >= 0)
                (void)!send(c, frame, len, MSG_NOSIGNAL);
            _exit(0);
        }
        assert_true(child > 0);
    }
    assert_int_equal(cnienv_start(&env, "railgate", "ADD", p->container, p->netns, "eth0", p->ns,
                                  p->name, conf, NULL, &proc),
                     0);
    if (!nobody) {
        struct pollfd pf = {.fd = lfd, .events = POLLIN};
        uint8_t req[AGENT_MAX_REQUEST];
        assert_int_equal(poll(&pf, 1, wait_scaled_ms(WAIT_MS)), 1);
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(c >= 0);
        assert_true(recv(c, req, sizeof(req), 0) > 0);
        assert_int_equal(send(c, frame, len, MSG_NOSIGNAL), (ssize_t)len);
        close(c);
    }
    assert_int_equal(cni_proc_finish(&proc, &r), 0);
    if (child > 0)
        waitpid(child, NULL, 0);
    close(lfd);
    (void)unlink(env.agent_sock);
    if (r.status != 1 || cni_run_code(&r) != code || !strstr(cni_run_msg(&r), what))
        fail_msg("ADD answered %s, expected code %d saying \"%s\"", r.raw, code, what);
    cni_run_done(&r);
    free(conf);
}

static void lie(Pod *p, AgentStatus status, const char *resource, char **ids, int code,
                const char *what) {
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_reply_pack(status, "the agent says no", resource, ids, &buf, &len), 0);
    liar_add(p, buf, len, false, code, what);
    free(buf);
    assert_nothing_moved(p, 11);
}

static void test_lying_agent(void **state) {
    char *a[] = {"rail11"}, *b[] = {"rail18", NULL}, *mine[] = {"rail11", NULL};
    char *unknown[] = {"rail99", NULL};
    static const char http[] = "HTTP/1.1 200 OK\r\n\r\n";
    AgentReply v2 = AGENT_REPLY__INIT;
    uint8_t *buf = NULL;
    size_t len = 0;
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "lied", "team-a", RES_A, a, 1), 0);
    assert_int_equal(cnienv_agent_stop(&env), 0);
    /* another tenant's unit named as this tenant's resource */
    lie(&p, AGENT_STATUS__OK, RES_A, b, 101, "\"rail18\", which is not a unit of railgate.io/a");
    /* another tenant's resource for this tenant's namespace */
    lie(&p, AGENT_STATUS__OK, RES_B, b, 100, "namespace team-a is not one of that tenant's");
    /* a resource no tenant has */
    lie(&p, AGENT_STATUS__OK, "example.com/x", mine, 100, "which belongs to no tenant");
    /* a unit the node does not have */
    lie(&p, AGENT_STATUS__OK, RES_A, unknown, 101, "\"rail99\", which is not a unit");
    /* the agent's own refusals keep their meaning */
    lie(&p, AGENT_STATUS__CONFLICT, NULL, NULL, 100, "the agent says no");
    lie(&p, AGENT_STATUS__TOO_MANY, NULL, NULL, 101, "the agent says no");
    lie(&p, AGENT_STATUS__UNAVAILABLE, NULL, NULL, 11, "the agent says no; try again later");
    /* not the protocol */
    liar_add(&p, http, sizeof(http) - 1, false, 11, "malformed answer");
    assert_nothing_moved(&p, 11);
    v2.version = 2;
    assert_int_equal(agent_frame_pack(&v2.base, AGENT_MAX_REPLY, &buf, &len), 0);
    liar_add(&p, buf, len, false, 11, "protocol version 2");
    free(buf);
    assert_nothing_moved(&p, 11);
    /* the socket served by someone not root: not believed, whatever it says */
    assert_int_equal(agent_reply_pack(AGENT_STATUS__OK, NULL, RES_A, mine, &buf, &len), 0);
    liar_add(&p, buf, len, true, 11, "is served by uid 65534, not by root");
    free(buf);
    assert_nothing_moved(&p, 11);
    assert_int_equal(cnienv_agent_start(&env, NULL), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    cnienv_pod_free(&env, &p);
}

/* A report as any root process could send it: command DEL, sandbox id as given. */
static void send_report_of(const char *sandbox) {
    AgentReport rep = AGENT_REPORT__INIT;
    uint8_t *buf = NULL;
    size_t len = 0;
    int fd = sock_connect();

    assert_true(fd >= 0);
    rep.command = AGENT_COMMAND__DEL;
    rep.duration_ns = 1234567;
    rep.moves_ns = 1000000;
    rep.sandbox_id = (char *)sandbox;
    assert_int_equal(agent_request_report(&rep, &buf, &len), 0);
    send_bytes(fd, buf, len);
    free(buf);
    expect_reply(fd, AGENT_STATUS__OK, "");
}

/* Every command reports to the agent after it answered, and the agent takes
 * the report in (agent_report_received): ADD and DEL at info, one line each
 * with the runtime's sandbox id (CNI_CONTAINERID) and where the time went;
 * the others at debug. */
static void test_reports(void **state) {
    char *ids[] = {"rail12"}, want[256];
    char hostile[AGENT_MAX_SANDBOX_ID + 2];
    Pod p, wrong;

    /* a hex prefix: the pod's container id is hex digits (as containerd's) */
    assert_int_equal(cnienv_pod_new(&env, &p, "fep", "team-a", RES_A, ids, 1), 0);
    assert_int_equal(cnienv_pod_new(&env, &wrong, "rep", "team-b", RES_A, ids, 1), 0);
    cni_ok(&p, "ADD");
    snprintf(want, sizeof(want), "tenant=a msg=\"CNI ADD of sandbox %s answered 0 in", p.container);
    assert_true(testns_wait_until(agent_log_has, want, WAIT_MS));
    assert_true(file_contains(env.agent_log, "ms (1 rail: agent "));
    assert_true(file_contains(env.agent_log, ", moves "));
    assert_true(file_contains(env.agent_log, ", configure "));
    assert_true(file_contains(env.agent_log, ", state "));
    cni_ok(&p, "CHECK");
    snprintf(want, sizeof(want), "msg=\"CNI CHECK of sandbox %s answered 0 in", p.container);
    assert_true(testns_wait_until(agent_log_has, want, WAIT_MS));
    cni_ok(&p, "DEL");
    snprintf(want, sizeof(want), "msg=\"CNI DEL of sandbox %s answered 0 in", p.container);
    assert_true(testns_wait_until(agent_log_has, want, WAIT_MS));
    /* "r...": not hex, so not logged */
    expect_cni_error(&wrong, NULL, 100, "not one of that tenant's");
    assert_true(
        testns_wait_until(agent_log_has, "msg=\"CNI ADD of sandbox ? answered 100 in", WAIT_MS));
    assert_false(file_contains(env.agent_log, wrong.container));
    /* a sandbox id one digit too long, or not hex, is logged as ? */
    memset(hostile, 'a', sizeof(hostile) - 1);
    hostile[sizeof(hostile) - 1] = 0;
    send_report_of(hostile);
    send_report_of("0bad\nlevel=error msg=forged");
    assert_true(testns_wait_until(
        agent_log_has,
        "msg=\"CNI DEL of sandbox ? answered 0 in 1.235 ms (0 rails: agent 0.000, "
        "moves 1.000, configure 0.000, state 0.000 ms)\"",
        WAIT_MS));
    hostile[AGENT_MAX_SANDBOX_ID] = 0; /* 64 digits: logged */
    assert_false(file_contains(env.agent_log, hostile));
    assert_false(file_contains(env.agent_log, "forged"));
    send_report_of(hostile);
    snprintf(want, sizeof(want), "msg=\"CNI DEL of sandbox %s answered 0 in", hostile);
    assert_true(testns_wait_until(agent_log_has, want, WAIT_MS));
    cnienv_pod_free(&env, &p);
    cnienv_pod_free(&env, &wrong);
}

/* The agent counts each question it answers and each report it takes
 * (railgate_pod_lookup_*, railgate_cni_*; the metrics themselves are
 * integration/test-metrics.c's and unit/test-agentmetrics.c's). */
static void test_metrics(void **state) {
    char *ids[] = {"rail15"}, *saved = NULL, addr[200];
    Pod p, wrong;

    snprintf(addr, sizeof(addr), "unix:%s/metrics.sock", env.tmp);
    assert_int_equal(cnienv_config_set(&env, "metrics", json_pack("{s:s}", "listen", addr), &saved),
                     0);
    assert_int_equal(cnienv_agent_restart(&env, NULL), 0);
    assert_int_equal(cnienv_pod_new(&env, &p, "met", "team-a", RES_A, ids, 1), 0);
    assert_int_equal(cnienv_pod_new(&env, &wrong, "met", "team-b", RES_A, ids, 1), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    expect_cni_error(&wrong, NULL, 100, "not one of that tenant's");
    assert_true(
        scrape_wait(addr, "railgate_pod_lookup_requests_total{code=\"OK\"}", 2, WAIT_MS, NULL));
    assert_true(scrape_wait(addr, "railgate_cni_commands_total{command=\"ADD\",code=\"0\"}", 1,
                            WAIT_MS, NULL));
    assert_true(scrape_wait(addr, "railgate_cni_commands_total{command=\"DEL\",code=\"0\"}", 1,
                            WAIT_MS, NULL));
    assert_true(scrape_wait(addr, "railgate_cni_commands_total{command=\"ADD\",code=\"100\"}", 1,
                            WAIT_MS, NULL));
    assert_true(scrape_wait(addr, "railgate_cni_rails_total{command=\"ADD\",tenant=\"a\"}", 1,
                            WAIT_MS, NULL));
    assert_true(scrape_wait(addr, "railgate_pod_lookup_duration_seconds_count", 2, WAIT_MS, NULL));
    cnienv_pod_free(&env, &p);
    cnienv_pod_free(&env, &wrong);
    config_back(saved);
}

/* kubelet restarts (a new socket at the path): the same agent answers from
 * the new kubelet; kubelet gone: ADD fails with 11 and the agent's reason. */
static void test_kubelet_restarts(void **state) {
    char *ids[] = {"rail13"}, *saved = NULL;
    pid_t agent = env.agent;
    Pod p;

    assert_int_equal(cnienv_pod_new(&env, &p, "kr", "team-a", RES_A, ids, 1), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    assert_int_equal(fk_restart(env.k), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    assert_int_equal(env.agent, agent);
    config_timeouts(1, 0, &saved);
    fk_stop(env.k);
    env.k = NULL;
    expect_cni_error(&p, NULL, 11, "PodResources API at");
    expect_cni_error(&p, NULL, 11, "did not answer within 1 s (timeouts.podResourcesSeconds");
    assert_nothing_moved(&p, 13);
    assert_int_equal(fk_start(env.kubelet, &env.k), 0);
    config_back(saved);
    assert_int_equal(fk_pod_set(env.k, "team-a", p.name, RES_A, ids, 1), 0);
    cni_ok(&p, "ADD");
    cni_ok(&p, "DEL");
    cnienv_pod_free(&env, &p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socket_files),
        cmocka_unit_test(test_questions_answered),
        cmocka_unit_test(test_bad_peer),
        cmocka_unit_test(test_garbage_frames),
        cmocka_unit_test(test_unknown_version),
        cmocka_unit_test(test_silent_client_dropped),
        cmocka_unit_test(test_slow_kubelet_holds_up_no_one),
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_stop_with_lookups_waiting),
        cmocka_unit_test(test_add_without_agent),
        cmocka_unit_test(test_del_check_gc_status_without_agent),
        cmocka_unit_test(test_slow_agent),
        cmocka_unit_test(test_agent_restarted_during_add),
        cmocka_unit_test(test_lying_agent),
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_kubelet_restarts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
