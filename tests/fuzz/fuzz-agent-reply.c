/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI's reading of the node agent's answer: agent_reply_parse() on a
 * frame from the socket. Input: one mode byte, then mode % 2 == 0: the
 * frame as received; 1: a payload, framed here with its true length.
 * Checked: an accepted reply is version 1 with a known status and a bounded
 * message, and with OK carries at most AGENT_MAX_IDS ids, each a token, of
 * one resource that is a token too (the CNI then looks them up in the node
 * config and the inventory); a refused one says why in UTF-8.
 */
#include "agentproto.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    AgentReply *rep = NULL;
    RgError err = {0};
    uint8_t *frame;
    size_t len;
    int r;

    if (size == 0)
        return 0;
    len = size - 1 + (data[0] % 2 ? AGENT_FRAME_HEADER : 0);
    frame = malloc(len ? len : 1);
    FUZZ_CHECK(frame);
    if (data[0] % 2) {
        size_t n = size - 1;
        memcpy(frame, AGENT_FRAME_MAGIC, 4);
        frame[4] = (uint8_t)(n >> 24);
        frame[5] = (uint8_t)(n >> 16);
        frame[6] = (uint8_t)(n >> 8);
        frame[7] = (uint8_t)n;
        memcpy(frame + AGENT_FRAME_HEADER, data + 1, n);
    } else if (len)
        memcpy(frame, data + 1, len);
    r = agent_reply_parse(frame, len, &rep, &err);
    free(frame);
    if (r < 0) {
        FUZZ_CHECK(!rep && err.msg[0] && fuzz_utf8_valid(err.msg));
        return 0;
    }
    FUZZ_CHECK(rep->version == AGENT_PROTOCOL_VERSION);
    FUZZ_CHECK(!streq(agent_status_name(rep->status), "?"));
    FUZZ_CHECK(strlen(rep->message) <= AGENT_MAX_TEXT);
    if (rep->status == AGENT_STATUS__OK && rep->units) {
        FUZZ_CHECK(agent_token_valid(rep->units->resource, AGENT_MAX_NAME));
        FUZZ_CHECK(rep->units->n_ids <= AGENT_MAX_IDS);
        for (size_t i = 0; i < rep->units->n_ids; i++)
            FUZZ_CHECK(agent_token_valid(rep->units->ids[i], AGENT_MAX_ID));
    }
    agent_reply__free_unpacked(rep, NULL);
    return 0;
}
