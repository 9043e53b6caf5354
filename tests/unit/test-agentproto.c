/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's wire protocol: frames, requests, replies, and every bound they keep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "agentproto.h"
#include "pb.h"

static void test_socket_path(void **state) {
    char buf[256], dir[200];

    assert_int_equal(agent_socket_path("/var/lib/railgate", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/var/lib/railgate/agent.sock");
    /* a unix socket address holds 107 bytes of path */
    memset(dir, 'd', sizeof(dir) - 1);
    dir[0] = '/';
    dir[sizeof(dir) - 1] = 0;
    dir[96] = 0; /* 96 + "/agent.sock" = 107 */
    assert_int_equal(agent_socket_path(dir, buf, sizeof(buf)), 0);
    dir[96] = 'd';
    dir[97] = 0;
    assert_int_equal(agent_socket_path(dir, buf, sizeof(buf)), -ENAMETOOLONG);
}

static void test_tokens(void **state) {
    assert_true(agent_token_valid("team-a", 63));
    assert_true(agent_token_valid("railgate.io/a", 253));
    assert_true(agent_token_valid("0d2c6a4e-5b8f-4d7e-9c3a-1f2e3d4c5b6a", 253));
    assert_false(agent_token_valid("", 63));
    assert_false(agent_token_valid(NULL, 63));
    assert_false(agent_token_valid("a b", 63));
    assert_false(agent_token_valid("a\nb", 63));
    assert_false(agent_token_valid("\x7f", 63));
    assert_false(agent_token_valid("caf\xc3\xa9", 63)); /* ASCII only: it goes into logs */
    assert_true(agent_token_valid("abc", 3));
    assert_false(agent_token_valid("abcd", 3));
}

static AgentRequest *parse_ok(const uint8_t *buf, size_t len) {
    AgentRequest *req = NULL;
    RgError err = {0};

    assert_int_equal(agent_request_parse(buf, len, &req, &err), 0);
    assert_non_null(req);
    return req;
}

/* The parse fails with status and a message holding what. */
static void parse_refused(const uint8_t *buf, size_t len, int status, const char *what) {
    AgentRequest *req = NULL;
    RgError err = {0};

    assert_true(agent_request_parse(buf, len, &req, &err) < 0);
    assert_null(req);
    assert_int_equal(err.code, status);
    if (!strstr(err.msg, what))
        fail_msg("\"%s\" does not say \"%s\"", err.msg, what);
}

static void test_pod_units_round_trip(void **state) {
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_request_pod_units("team-a", "pod-a", "uid-1", &buf, &len), 0);
    assert_memory_equal(buf, AGENT_FRAME_MAGIC, 4);
    assert_int_equal((size_t)buf[4] << 24 | buf[5] << 16 | buf[6] << 8 | buf[7],
                     len - AGENT_FRAME_HEADER);
    AgentRequest *req = parse_ok(buf, len);
    assert_int_equal(req->version, AGENT_PROTOCOL_VERSION);
    assert_int_equal(req->body_case, AGENT_REQUEST__BODY_POD_UNITS);
    assert_string_equal(req->pod_units->namespace_, "team-a");
    assert_string_equal(req->pod_units->name, "pod-a");
    assert_string_equal(req->pod_units->uid, "uid-1");
    agent_request__free_unpacked(req, NULL);
    free(buf);
    /* no uid: the runtime did not give one */
    assert_int_equal(agent_request_pod_units("team-a", "pod-a", NULL, &buf, &len), 0);
    req = parse_ok(buf, len);
    assert_string_equal(req->pod_units->uid, "");
    agent_request__free_unpacked(req, NULL);
    free(buf);
    /* what the agent would refuse is never sent */
    assert_int_equal(agent_request_pod_units("team a", "pod-a", NULL, &buf, &len), -EINVAL);
    assert_int_equal(agent_request_pod_units("team-a", "", NULL, &buf, &len), -EINVAL);
}

static void test_report_round_trip(void **state) {
    AgentReport rep = AGENT_REPORT__INIT;
    uint8_t *buf = NULL;
    size_t len = 0;

    rep.command = AGENT_COMMAND__DEL;
    rep.result_code = 101;
    rep.duration_ns = 123456789;
    rep.rails = 8;
    rep.tenant = "tenant-b";
    assert_int_equal(agent_request_report(&rep, &buf, &len), 0);
    AgentRequest *req = parse_ok(buf, len);
    assert_int_equal(req->body_case, AGENT_REQUEST__BODY_REPORT);
    assert_int_equal(req->report->command, AGENT_COMMAND__DEL);
    assert_int_equal(req->report->result_code, 101);
    assert_int_equal(req->report->duration_ns, 123456789);
    assert_int_equal(req->report->rails, 8);
    assert_string_equal(req->report->tenant, "tenant-b");
    agent_request__free_unpacked(req, NULL);
    free(buf);
    rep.command = AGENT_COMMAND__UNSPECIFIED;
    assert_int_equal(agent_request_report(&rep, &buf, &len), -EINVAL);
    rep.command = AGENT_COMMAND__ADD;
    rep.result_code = 1000;
    assert_int_equal(agent_request_report(&rep, &buf, &len), -EINVAL);
    rep.result_code = 0;
    rep.tenant = "tenant\tb";
    assert_int_equal(agent_request_report(&rep, &buf, &len), -EINVAL);
}

/* A request frame of m, its header and payload as given (version set by the caller). */
static size_t frame_of(const ProtobufCMessage *m, uint8_t *out, size_t max) {
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_frame_pack(m, max, &buf, &len), 0);
    memcpy(out, buf, len);
    free(buf);
    return len;
}

static void test_frames_refused(void **state) {
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;
    uint8_t f[AGENT_MAX_REQUEST + 64];
    size_t len;

    req.version = AGENT_PROTOCOL_VERSION;
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    q.namespace_ = "team-a";
    q.name = "pod-a";
    len = frame_of(&req.base, f, sizeof(f));
    parse_refused(f, len - 1, AGENT_STATUS__BAD_REQUEST, "truncated");
    parse_refused(f, 5, AGENT_STATUS__BAD_REQUEST, "not a railgate agent request frame");
    parse_refused(f, 0, AGENT_STATUS__BAD_REQUEST, "not a railgate agent request frame");
    f[len] = 0;
    parse_refused(f, len + 1, AGENT_STATUS__BAD_REQUEST, "trailing bytes");
    memcpy(f, "GET ", 4);
    parse_refused(f, len, AGENT_STATUS__BAD_REQUEST, "not a railgate agent request frame");
    memset(f, 0, sizeof(f));
    parse_refused(f, AGENT_MAX_REQUEST + 1, AGENT_STATUS__BAD_REQUEST, "more than 4096 bytes");
    /* a frame whose payload is no message */
    static const uint8_t garbage[] = {'R', 'G', 'A', 'P', 0, 0, 0, 3, 0x0a, 0xff, 0x01};
    parse_refused(garbage, sizeof(garbage), AGENT_STATUS__BAD_REQUEST, "no AgentRequest");
}

static void test_versions_and_questions(void **state) {
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;
    uint8_t f[AGENT_MAX_REQUEST];
    char long_name[300];

    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    q.namespace_ = "team-a";
    q.name = "pod-a";
    req.version = 2;
    parse_refused(f, frame_of(&req.base, f, sizeof(f)), AGENT_STATUS__UNSUPPORTED_VERSION,
                  "request version 2; this agent speaks version 1");
    req.version = 0; /* none given */
    parse_refused(f, frame_of(&req.base, f, sizeof(f)), AGENT_STATUS__UNSUPPORTED_VERSION,
                  "request version 0");
    req.version = AGENT_PROTOCOL_VERSION;
    req.body_case = AGENT_REQUEST__BODY__NOT_SET;
    parse_refused(f, frame_of(&req.base, f, sizeof(f)), AGENT_STATUS__BAD_REQUEST, "no question");
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = 0;
    q.name = long_name;
    parse_refused(f, frame_of(&req.base, f, sizeof(f)), AGENT_STATUS__BAD_REQUEST,
                  "pod_units.name");
    q.name = "pod-a";
    q.uid = "a;b c";
    parse_refused(f, frame_of(&req.base, f, sizeof(f)), AGENT_STATUS__BAD_REQUEST, "pod_units.uid");
}

static AgentReply *reply_ok(const uint8_t *buf, size_t len) {
    AgentReply *rep = NULL;
    RgError err = {0};

    if (agent_reply_parse(buf, len, &rep, &err) < 0)
        fail_msg("%s", err.msg);
    return rep;
}

static void test_replies(void **state) {
    char *ids[] = {"rail0", "rail1-vf3", NULL};
    uint8_t *buf = NULL;
    size_t len = 0;

    assert_int_equal(agent_reply_pack(AGENT_STATUS__OK, NULL, "railgate.io/a", ids, &buf, &len), 0);
    AgentReply *rep = reply_ok(buf, len);
    assert_int_equal(rep->status, AGENT_STATUS__OK);
    assert_string_equal(rep->units->resource, "railgate.io/a");
    assert_int_equal(rep->units->n_ids, 2);
    assert_string_equal(rep->units->ids[1], "rail1-vf3");
    agent_reply__free_unpacked(rep, NULL);
    free(buf);
    /* none held */
    assert_int_equal(agent_reply_pack(AGENT_STATUS__OK, NULL, NULL, NULL, &buf, &len), 0);
    rep = reply_ok(buf, len);
    assert_null(rep->units);
    agent_reply__free_unpacked(rep, NULL);
    free(buf);
    /* a refusal carries no units whatever it is given */
    assert_int_equal(agent_reply_pack(AGENT_STATUS__UNAVAILABLE, "kubelet away", "railgate.io/a",
                                      ids, &buf, &len),
                     0);
    rep = reply_ok(buf, len);
    assert_int_equal(rep->status, AGENT_STATUS__UNAVAILABLE);
    assert_string_equal(rep->message, "kubelet away");
    assert_null(rep->units);
    agent_reply__free_unpacked(rep, NULL);
    free(buf);
    assert_string_equal(agent_status_name(AGENT_STATUS__BUSY), "BUSY");
    assert_string_equal(agent_status_name(99), "?");
}

/* The CNI believes no reply that breaks a bound. */
static void test_replies_refused(void **state) {
    static char *ids[AGENT_MAX_IDS + 2], names[AGENT_MAX_IDS + 2][16];
    AgentReply rep = AGENT_REPLY__INIT;
    AgentUnits u = AGENT_UNITS__INIT;
    AgentReply *out = NULL;
    RgError err = {0};
    uint8_t *buf = NULL;
    size_t len = 0;

    for (size_t i = 0; i < AGENT_MAX_IDS + 1; i++) {
        snprintf(names[i], sizeof(names[i]), "rail%zu", i);
        ids[i] = names[i];
    }
    rep.version = AGENT_PROTOCOL_VERSION;
    rep.units = &u;
    u.resource = "railgate.io/a";
    u.ids = ids;
    u.n_ids = AGENT_MAX_IDS + 1;
    assert_int_equal(agent_frame_pack(&rep.base, AGENT_MAX_REPLY, &buf, &len), 0);
    assert_int_equal(agent_reply_parse(buf, len, &out, &err), -EBADMSG);
    assert_non_null(strstr(err.msg, "1025 unit ids, at most 1024"));
    free(buf);
    u.n_ids = 1;
    ids[0] = "rail0 rail1";
    assert_int_equal(agent_frame_pack(&rep.base, AGENT_MAX_REPLY, &buf, &len), 0);
    assert_int_equal(agent_reply_parse(buf, len, &out, &err), -EBADMSG);
    assert_non_null(strstr(err.msg, "units.ids[0]"));
    free(buf);
    ids[0] = names[0];
    rep.version = 7;
    assert_int_equal(agent_frame_pack(&rep.base, AGENT_MAX_REPLY, &buf, &len), 0);
    assert_int_equal(agent_reply_parse(buf, len, &out, &err), -EPROTONOSUPPORT);
    free(buf);
    rep.version = AGENT_PROTOCOL_VERSION;
    rep.status = (AgentStatus)42;
    assert_int_equal(agent_frame_pack(&rep.base, AGENT_MAX_REPLY, &buf, &len), 0);
    assert_int_equal(agent_reply_parse(buf, len, &out, &err), -EBADMSG);
    assert_non_null(strstr(err.msg, "unknown status 42"));
    assert_int_equal(agent_reply_parse(buf, len - 1, &out, &err), -EBADMSG);
    assert_non_null(strstr(err.msg, "truncated"));
    free(buf);
    assert_null(out);
    /* a reply that would not fit the socket is never made */
    rep.status = AGENT_STATUS__OK;
    assert_int_equal(agent_frame_pack(&rep.base, 16, &buf, &len), -EMSGSIZE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socket_path),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_pod_units_round_trip),
        cmocka_unit_test(test_report_round_trip),
        cmocka_unit_test(test_frames_refused),
        cmocka_unit_test(test_versions_and_questions),
        cmocka_unit_test(test_replies),
        cmocka_unit_test(test_replies_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
