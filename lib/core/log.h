/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: one line per event with level, tenant and unit; text or JSON. */
#pragma once

#include <stdio.h>

#include "macro.h"

typedef enum LogLevel {
    LOG_LVL_ERROR = 0,
    LOG_LVL_WARN,
    LOG_LVL_INFO,
    LOG_LVL_DEBUG,
} LogLevel;

typedef enum LogFormat {
    LOG_FORMAT_TEXT = 0,
    LOG_FORMAT_JSON,
} LogFormat;

/* Process-wide settings; set once in main() before threads start. */
void log_setup(LogFormat format, LogLevel level, const char *program);
/* Also append every line to this file (the CNI's log file); NULL stops. */
int log_open_file(const char *path);
void log_close_file(void);
int log_parse_level(const char *s, LogLevel *ret);
int log_parse_format(const char *s, LogFormat *ret);

/* tenant and unit may be NULL. Returns r so a handler can log and return
 * in one statement. */
int log_emit(LogLevel level, const char *tenant, const char *unit, int r, const char *fmt, ...)
    _printf_(5, 6);

#define log_error(tenant, unit, r, ...) log_emit(LOG_LVL_ERROR, tenant, unit, r, __VA_ARGS__)
#define log_warn(tenant, unit, ...) log_emit(LOG_LVL_WARN, tenant, unit, 0, __VA_ARGS__)
#define log_info(tenant, unit, ...) log_emit(LOG_LVL_INFO, tenant, unit, 0, __VA_ARGS__)
#define log_debug(tenant, unit, ...) log_emit(LOG_LVL_DEBUG, tenant, unit, 0, __VA_ARGS__)
