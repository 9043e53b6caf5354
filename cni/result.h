/* SPDX-License-Identifier: Apache-2.0 */
/* The ADD result: prevResult with the rails appended (result.c). */
#pragma once

#include <jansson.h>

#include "attachment.h"
#include "context.h"

/* The ADD result for attachment a (NULL: prevResult alone); NULL when out of memory. */
json_t *result_build(const CniContext *c, const Attachment *a);
