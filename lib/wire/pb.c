/* SPDX-License-Identifier: Apache-2.0 */
/* protobuf-c packing helper. */
#include "pb.h"

int pb_pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);

    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(m, buf);
    *ret = buf;
    *ret_len = n;
    return 0;
}
