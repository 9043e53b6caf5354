/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's reading of a CNI's question: agent_request_parse() on a
 * frame from the socket, then what the agent does with what it accepted.
 * Input: one mode byte, then mode % 2 == 0: the frame as received; 1: a
 * payload, framed here with its true length (so that inputs reach the
 * protobuf parser and the field checks more often).
 * Checked: an accepted request is version 1 with a question whose every
 * field is within its bounds, and packs back to the same question; a
 * refused one says why in UTF-8 with a status the agent answers with, and
 * that answer packs and reads back; an accepted report reaches
 * agent_report_received().
 */
#include "agent.h"
#include "agentproto.h"
#include "fuzz.h"
#include "pb.h"

static uint8_t *framed(const uint8_t *payload, size_t len, size_t *ret_len) {
    uint8_t *f = malloc(AGENT_FRAME_HEADER + len);

    FUZZ_CHECK(f);
    memcpy(f, AGENT_FRAME_MAGIC, 4);
    f[4] = (uint8_t)(len >> 24);
    f[5] = (uint8_t)(len >> 16);
    f[6] = (uint8_t)(len >> 8);
    f[7] = (uint8_t)len;
    if (len)
        memcpy(f + AGENT_FRAME_HEADER, payload, len);
    *ret_len = AGENT_FRAME_HEADER + len;
    return f;
}

/* The refusal the agent sends reads back as what it said. */
static void check_refusal(const RgError *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    AgentReply *rep = NULL;
    RgError e = {0};

    FUZZ_CHECK(err->msg[0] && fuzz_utf8_valid(err->msg));
    FUZZ_CHECK(err->code == AGENT_STATUS__BAD_REQUEST ||
               err->code == AGENT_STATUS__UNSUPPORTED_VERSION);
    FUZZ_CHECK(agent_reply_pack((AgentStatus)err->code, err->msg, NULL, NULL, &buf, &len) == 0);
    FUZZ_CHECK(agent_reply_parse(buf, len, &rep, &e) == 0);
    FUZZ_CHECK((int)rep->status == err->code && streq(rep->message, err->msg) && !rep->units);
    agent_reply__free_unpacked(rep, NULL);
    free(buf);
}

static void check_pod_units(const AgentPodUnits *q) {
    uint8_t *buf = NULL;
    size_t len = 0;
    AgentRequest *again = NULL;
    RgError e = {0};

    FUZZ_CHECK(agent_token_valid(q->namespace_, AGENT_MAX_NAME));
    FUZZ_CHECK(agent_token_valid(q->name, AGENT_MAX_NAME));
    FUZZ_CHECK(!q->uid[0] || agent_token_valid(q->uid, AGENT_MAX_NAME));
    /* what the CNI would send for it is accepted as the same question */
    FUZZ_CHECK(agent_request_pod_units(q->namespace_, q->name, q->uid, &buf, &len) == 0);
    FUZZ_CHECK(agent_request_parse(buf, len, &again, &e) == 0);
    FUZZ_CHECK(again->body_case == AGENT_REQUEST__BODY_POD_UNITS &&
               streq(again->pod_units->namespace_, q->namespace_) &&
               streq(again->pod_units->name, q->name) && streq(again->pod_units->uid, q->uid));
    agent_request__free_unpacked(again, NULL);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    AgentRequest *req = NULL;
    RgError err = {0};
    uint8_t *frame = NULL;
    size_t len = 0;
    int r;

    if (size == 0)
        return 0;
    if (data[0] % 2)
        frame = framed(data + 1, size - 1, &len);
    else
        frame = fuzz_copy(data + 1, len = size - 1);
    r = agent_request_parse(frame, len, &req, &err);
    free(frame);
    if (r < 0) {
        FUZZ_CHECK(!req);
        check_refusal(&err);
        return 0;
    }
    FUZZ_CHECK(req->version == AGENT_PROTOCOL_VERSION);
    if (req->body_case == AGENT_REQUEST__BODY_POD_UNITS)
        check_pod_units(req->pod_units);
    else {
        FUZZ_CHECK(req->body_case == AGENT_REQUEST__BODY_REPORT);
        const AgentReport *p = req->report;
        FUZZ_CHECK(p->command > AGENT_COMMAND__UNSPECIFIED && p->command <= AGENT_COMMAND__STATUS);
        FUZZ_CHECK(p->result_code <= AGENT_MAX_CNI_CODE && p->rails <= AGENT_MAX_RAILS);
        FUZZ_CHECK(!p->tenant[0] || agent_token_valid(p->tenant, AGENT_MAX_TENANT));
        agent_report_received(p);
    }
    agent_request__free_unpacked(req, NULL);
    return 0;
}
