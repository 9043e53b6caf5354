/* SPDX-License-Identifier: Apache-2.0 */
/* The teardown that DEL, GC and a failed ADD's rollback share (teardown.c). */
#pragma once

#include "attachment.h"
#include "context.h"
#include "error.h"

/* Undo an attachment: every moved NIC back, units released,
 * IPAM released, state removed. Used by DEL, GC and a failed ADD. */
int attachment_teardown(CniContext *c, Attachment *a, RgError *err);
/* Drop a record of an earlier boot and its claims, touching no NIC. */
int attachment_forget(CniContext *c, const Attachment *a, RgError *err);
/* Drop a record a node crash tore (state_record_torn()) and its claims,
 * touching no NIC. */
int attachment_forget_torn(CniContext *c, const char *key, RgError *err);
