/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for lib/rpc/rpc.c in fuzz targets: no gRPC, no sockets, no
 * threads. Linked as an object into a target, it defines every function of
 * rpc.h, so the linker never pulls the real rpc.o out of the library.
 *
 * Server side: rpc_server_start() only records the method table; a target
 * calls a handler with fakerpc_server_call(), as the real server thread
 * would. Client side: rpc_call_unary() asks the hook the target set.
 */
#pragma once

#include "rpc.h"

/* Answer a unary call as rpc_call_unary() does: 0 with a malloc'd response,
 * or a negative errno with err->code the gRPC status. */
typedef int (*fakerpc_client_fn)(const char *method, const uint8_t *req, size_t len,
                                 uint8_t **ret_resp, size_t *ret_len, RgError *err);

void fakerpc_set_client(fakerpc_client_fn fn);

/* Run handler path of server s on a copy of req (as the server would): the
 * handler's status, with *ret_resp malloc'd (or NULL) for the caller to free.
 * RPC_UNIMPLEMENTED when s has no such method. */
int fakerpc_server_call(RpcServer *s, const char *path, const uint8_t *req, size_t len,
                        uint8_t **ret_resp, size_t *ret_len, RgError *err);
