/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr (and optionally a file), text or JSON lines. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static LogFormat log_format = LOG_FORMAT_TEXT;
static LogLevel log_level = LOG_LVL_INFO;
static const char *log_program = "railgate";
static int log_fd = -EBADF;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_setup(LogFormat format, LogLevel level, const char *program) {
    log_format = format;
    log_level = level;
    if (program)
        log_program = program;
}

int log_open_file(const char *path) {
    /* 0600: a log names pods and devices; no symlink games in a shared dir */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0)
        return negative_errno();
    pthread_mutex_lock(&log_lock);
    if (log_fd >= 0)
        close(log_fd);
    log_fd = fd;
    pthread_mutex_unlock(&log_lock);
    return 0;
}

void log_close_file(void) {
    pthread_mutex_lock(&log_lock);
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -EBADF;
    pthread_mutex_unlock(&log_lock);
}

int log_parse_level(const char *s, LogLevel *ret) {
    for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
        if (streq(s, level_names[i])) {
            *ret = (LogLevel)i;
            return 0;
        }
    return -EINVAL;
}

int log_parse_format(const char *s, LogFormat *ret) {
    if (streq(s, "text"))
        *ret = LOG_FORMAT_TEXT;
    else if (streq(s, "json"))
        *ret = LOG_FORMAT_JSON;
    else
        return -EINVAL;
    return 0;
}

static void timestamp(char *buf, size_t n) {
    struct timeval tv;
    struct tm tm;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + k, n - k, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

/* Text values are quoted when they hold spaces, quotes or '='. */
static void put_text_field(FILE *f, const char *key, const char *value) {
    if (strpbrk(value, " \"=\t") || !*value) {
        fprintf(f, " %s=\"", key);
        for (const char *p = value; *p; p++) {
            if (*p == '"' || *p == '\\')
                fputc('\\', f);
            fputc(*p == '\n' ? ' ' : *p, f);
        }
        fputc('"', f);
    } else
        fprintf(f, " %s=%s", key, value);
}

static void write_line(FILE *f, LogLevel level, const char *tenant, const char *unit, int r,
                       const char *msg) {
    char ts[40];

    timestamp(ts, sizeof(ts));
    if (log_format == LOG_FORMAT_JSON) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level", level_names[level],
                              "program", log_program, "msg", msg);
        if (!o)
            return;
        if (tenant)
            json_object_set_new(o, "tenant", json_string(tenant));
        if (unit)
            json_object_set_new(o, "unit", json_string(unit));
        if (r < 0)
            json_object_set_new(o, "error", json_string(strerror(-r)));
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            fprintf(f, "%s\n", s);
        free(s);
        json_decref(o);
        return;
    }
    fprintf(f, "%s level=%s program=%s", ts, level_names[level], log_program);
    if (tenant)
        put_text_field(f, "tenant", tenant);
    if (unit)
        put_text_field(f, "unit", unit);
    put_text_field(f, "msg", msg);
    if (r < 0)
        put_text_field(f, "error", strerror(-r));
    fputc('\n', f);
}

/* The whole line in one write(2): a log line is never torn by another writer
 * (O_APPEND) and costs one system call, not one per character. */
static void write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t k = write(fd, buf, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        buf += k;
        len -= (size_t)k;
    }
}

int log_emit(LogLevel level, const char *tenant, const char *unit, int r, const char *fmt, ...) {
    int saved_errno = errno;
    char msg[1024], *line = NULL;
    size_t len = 0;
    va_list ap;
    FILE *f;

    if (level > log_level)
        return r;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    f = open_memstream(&line, &len);
    if (!f)
        return r;
    write_line(f, level, tenant, unit, r, msg);
    if (fclose(f) == 0 && line) {
        pthread_mutex_lock(&log_lock);
        write_all(STDERR_FILENO, line, len);
        if (log_fd >= 0)
            write_all(log_fd, line, len);
        pthread_mutex_unlock(&log_lock);
    }
    free(line);
    errno = saved_errno;
    return r;
}
