/* SPDX-License-Identifier: Apache-2.0 */
/* The CNI commands (add.c, del.c, check.c, gc.c, status.c), which main.c dispatches to. */
#pragma once

#include <jansson.h>

#include "context.h"
#include "error.h"

/* Each returns 0 with *ret (the JSON to print, or NULL for none), or a
 * negative errno with err->code and err->msg set for the error JSON. */
int cmd_add(CniContext *c, json_t **ret, RgError *err);
int cmd_del(CniContext *c, RgError *err);
int cmd_check(CniContext *c, RgError *err);
int cmd_gc(CniContext *c, RgError *err);
int cmd_status(CniContext *c, RgError *err);
