/* SPDX-License-Identifier: Apache-2.0 */
/* Frames, requests and replies of the node agent's protocol, and their checks. */
#include "agentproto.h"

#include <stdio.h>
#include <sys/un.h>

#include "pb.h"

int agent_socket_path(const char *state_dir, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "%s/" AGENT_SOCKET_NAME, state_dir);

    if (len >= n || len >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return -ENAMETOOLONG;
    return 0;
}

bool agent_token_valid(const char *s, size_t max) {
    size_t n = 0;

    for (; s && s[n]; n++)
        if (n >= max || s[n] <= ' ' || s[n] > '~')
            return false;
    return n > 0;
}

int agent_frame_pack(const ProtobufCMessage *m, size_t max, uint8_t **ret, size_t *ret_len) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf;

    if (n > max || AGENT_FRAME_HEADER > max - n)
        return -EMSGSIZE;
    buf = malloc(AGENT_FRAME_HEADER + n);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, AGENT_FRAME_MAGIC, 4);
    buf[4] = (uint8_t)(n >> 24);
    buf[5] = (uint8_t)(n >> 16);
    buf[6] = (uint8_t)(n >> 8);
    buf[7] = (uint8_t)n;
    protobuf_c_message_pack(m, buf + AGENT_FRAME_HEADER);
    *ret = buf;
    *ret_len = AGENT_FRAME_HEADER + n;
    return 0;
}

/* The message d of a whole frame of at most max bytes (what: "request" or
 * "reply", for messages); err->code BAD_REQUEST on failure. */
static int frame_unpack(const uint8_t *frame, size_t len, size_t max, const char *what,
                        const ProtobufCMessageDescriptor *d, ProtobufCMessage **ret, RgError *err) {
    size_t n;

    if (len > max)
        return rg_error(err, -EMSGSIZE, AGENT_STATUS__BAD_REQUEST,
                        "%s frame of more than %zu bytes", what, max);
    if (len < AGENT_FRAME_HEADER || memcmp(frame, AGENT_FRAME_MAGIC, 4) != 0)
        return rg_error(err, -EBADMSG, AGENT_STATUS__BAD_REQUEST,
                        "not a railgate agent %s frame (%zu bytes without its header)", what, len);
    n = (size_t)frame[4] << 24 | (size_t)frame[5] << 16 | (size_t)frame[6] << 8 | frame[7];
    if (n != len - AGENT_FRAME_HEADER)
        return rg_error(err, -EBADMSG, AGENT_STATUS__BAD_REQUEST,
                        "%s frame %s: its header says %zu bytes, %zu came", what,
                        n > len - AGENT_FRAME_HEADER ? "truncated" : "with trailing bytes", n,
                        len - AGENT_FRAME_HEADER);
    *ret = protobuf_c_message_unpack(d, NULL, n, frame + AGENT_FRAME_HEADER);
    if (!*ret)
        return rg_error(err, -EBADMSG, AGENT_STATUS__BAD_REQUEST, "%s frame holds no %s message",
                        what, d->short_name);
    return 0;
}

static int request_pack(AgentRequest *req, uint8_t **ret, size_t *ret_len) {
    RgError ignored;
    int r;

    req->version = AGENT_PROTOCOL_VERSION;
    r = agent_frame_pack(&req->base, AGENT_MAX_REQUEST, ret, ret_len);
    if (r < 0)
        return r;
    /* what the agent would refuse is never sent */
    _cleanup_pb_ AgentRequest *check = NULL;
    r = agent_request_parse(*ret, *ret_len, &check, &ignored);
    if (r < 0) {
        free(*ret);
        *ret = NULL;
        return -EINVAL;
    }
    return 0;
}

int agent_request_pod_units(const char *ns, const char *name, const char *uid, uint8_t **ret,
                            size_t *ret_len) {
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;

    q.namespace_ = (char *)ns;
    q.name = (char *)name;
    q.uid = (char *)(uid ? uid : "");
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    return request_pack(&req, ret, ret_len);
}

int agent_request_report(const AgentReport *report, uint8_t **ret, size_t *ret_len) {
    AgentRequest req = AGENT_REQUEST__INIT;

    req.body_case = AGENT_REQUEST__BODY_REPORT;
    req.report = (AgentReport *)report;
    return request_pack(&req, ret, ret_len);
}

static int pod_units_check(const AgentPodUnits *q, RgError *err) {
    if (!agent_token_valid(q->namespace_, AGENT_MAX_NAME))
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "pod_units.namespace: 1 to %d printable characters, no spaces",
                        AGENT_MAX_NAME);
    if (!agent_token_valid(q->name, AGENT_MAX_NAME))
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "pod_units.name: 1 to %d printable characters, no spaces", AGENT_MAX_NAME);
    if (q->uid[0] && !agent_token_valid(q->uid, AGENT_MAX_NAME))
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "pod_units.uid: at most %d printable characters, no spaces",
                        AGENT_MAX_NAME);
    return 0;
}

static int report_check(const AgentReport *p, RgError *err) {
    if (p->command <= AGENT_COMMAND__UNSPECIFIED || p->command > AGENT_COMMAND__STATUS)
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST, "report.command: unknown (%d)",
                        (int)p->command);
    if (p->result_code > AGENT_MAX_CNI_CODE)
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "report.result_code: %u is no CNI error code", p->result_code);
    if (p->rails > AGENT_MAX_RAILS)
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST, "report.rails: %u is too many",
                        p->rails);
    if (p->tenant[0] && !agent_token_valid(p->tenant, AGENT_MAX_TENANT))
        return rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST,
                        "report.tenant: at most %d printable characters, no spaces",
                        AGENT_MAX_TENANT);
    return 0;
}

int agent_request_parse(const uint8_t *frame, size_t len, AgentRequest **ret, RgError *err) {
    _cleanup_pb_ AgentRequest *req = NULL;
    int r;

    r = frame_unpack(frame, len, AGENT_MAX_REQUEST, "request", &agent_request__descriptor,
                     (ProtobufCMessage **)&req, err);
    if (r < 0)
        return r;
    if (req->version != AGENT_PROTOCOL_VERSION)
        return rg_error(err, -EPROTONOSUPPORT, AGENT_STATUS__UNSUPPORTED_VERSION,
                        "request version %u; this agent speaks version %d", req->version,
                        AGENT_PROTOCOL_VERSION);
    switch (req->body_case) {
    case AGENT_REQUEST__BODY_POD_UNITS:
        r = pod_units_check(req->pod_units, err);
        break;
    case AGENT_REQUEST__BODY_REPORT:
        r = report_check(req->report, err);
        break;
    default:
        r = rg_error(err, -EINVAL, AGENT_STATUS__BAD_REQUEST, "a request with no question");
    }
    if (r < 0)
        return r;
    *ret = TAKE_PTR(req);
    return 0;
}

int agent_reply_pack(AgentStatus status, const char *message, const char *resource,
                     char *const *ids, uint8_t **ret, size_t *ret_len) {
    AgentReply rep = AGENT_REPLY__INIT;
    AgentUnits units = AGENT_UNITS__INIT;

    rep.version = AGENT_PROTOCOL_VERSION;
    rep.status = status;
    rep.message = (char *)(message ? message : "");
    if (status == AGENT_STATUS__OK && resource) {
        units.resource = (char *)resource;
        units.ids = (char **)ids;
        while (ids && ids[units.n_ids])
            units.n_ids++;
        rep.units = &units;
    }
    return agent_frame_pack(&rep.base, AGENT_MAX_REPLY, ret, ret_len);
}

static int units_check(const AgentUnits *u, RgError *err) {
    if (!agent_token_valid(u->resource, AGENT_MAX_NAME))
        return rg_error(err, -EBADMSG, 0, "units.resource is not a resource name");
    if (u->n_ids > AGENT_MAX_IDS)
        return rg_error(err, -EBADMSG, 0, "%zu unit ids, at most %d", u->n_ids, AGENT_MAX_IDS);
    for (size_t i = 0; i < u->n_ids; i++)
        if (!agent_token_valid(u->ids[i], AGENT_MAX_ID))
            return rg_error(err, -EBADMSG, 0, "units.ids[%zu] is not a unit id", i);
    return 0;
}

int agent_reply_parse(const uint8_t *frame, size_t len, AgentReply **ret, RgError *err) {
    _cleanup_pb_ AgentReply *rep = NULL;
    int r;

    r = frame_unpack(frame, len, AGENT_MAX_REPLY, "reply", &agent_reply__descriptor,
                     (ProtobufCMessage **)&rep, err);
    if (r < 0)
        return rg_error_wrap(err, -EBADMSG, 0, "malformed answer");
    if (rep->version != AGENT_PROTOCOL_VERSION)
        return rg_error(err, -EPROTONOSUPPORT, 0,
                        "an answer in protocol version %u; this plugin speaks version %d",
                        rep->version, AGENT_PROTOCOL_VERSION);
    if (!strcmp(agent_status_name(rep->status), "?"))
        return rg_error(err, -EBADMSG, 0, "malformed answer: unknown status %d", (int)rep->status);
    if (strlen(rep->message) > AGENT_MAX_TEXT)
        return rg_error(err, -EBADMSG, 0, "malformed answer: a message of %zu bytes",
                        strlen(rep->message));
    if (rep->status == AGENT_STATUS__OK && rep->units && (r = units_check(rep->units, err)) < 0)
        return rg_error_wrap(err, r, 0, "malformed answer");
    *ret = TAKE_PTR(rep);
    return 0;
}

const char *agent_status_name(int status) {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&agent_status__descriptor, status);

    return v ? v->name : "?";
}
