/* SPDX-License-Identifier: Apache-2.0 */
/* protobuf-c helpers: pack any message into a malloc'd buffer. */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Pack m; an empty message packs to length 0 with *ret non-NULL. */
int pb_pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len);

static inline void pb_freep(void *p) {
    ProtobufCMessage **m = p;
    if (*m)
        protobuf_c_message_free_unpacked(*m, NULL);
}
/* For unpacked messages: _cleanup_pb_ V1beta1__AllocateRequest *req = ... */
#define _cleanup_pb_ _cleanup_(pb_freep)
