/* SPDX-License-Identifier: Apache-2.0 */
/* An HTTP client just big enough for the metrics endpoint's tests, and a sample finder. */
#include "clock.h"
#include "scrape.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen.h"
#include "testns.h"
#include "waitscale.h"

#define REPLY_MAX (4u << 20)

void http_reply_done(HttpReply *r) {
    free(r->headers);
    free(r->body);
    *r = (HttpReply){0};
}

int http_connect(const char *addr) {
    ListenAddress a;
    int fd, r = listen_address_parse(addr, &a);

    if (r < 0)
        return r;
    fd = socket(a.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, &a.u.sa, a.len) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

/* Everything until EOF (or a reset), NUL-terminated; -ETIMEDOUT after timeout_ms. */
static int read_all(int fd, int timeout_ms, char **ret, size_t *ret_len) {
    long long end = (long long)clock_monotonic_ms() + wait_scaled_ms(timeout_ms);
    char *buf = malloc(REPLY_MAX + 1);
    size_t len = 0;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = end - (long long)clock_monotonic_ms();
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            free(buf);
            return -ETIMEDOUT;
        }
        ssize_t n = read(fd, buf + len, REPLY_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || len + (size_t)n == REPLY_MAX) {
            len += n > 0 ? (size_t)n : 0;
            break;
        }
        len += (size_t)n;
    }
    buf[len] = 0;
    *ret = buf;
    *ret_len = len;
    return 0;
}

static int parse_reply(const char *raw, size_t len, HttpReply *r) {
    const char *end = strstr(raw, "\r\n\r\n"), *eol = strstr(raw, "\r\n");

    *r = (HttpReply){0};
    if (len == 0 || !end || !eol) {
        r->headers = strdup("");
        r->body = strdup("");
        return r->headers && r->body ? 0 : -ENOMEM;
    }
    if (sscanf(raw, "HTTP/1.%*d %d", &r->status) != 1)
        r->status = 0;
    r->headers = strndup(eol + 2, (size_t)(end - eol - 2));
    r->body_len = len - (size_t)(end + 4 - raw);
    r->body = strndup(end + 4, r->body_len);
    return r->headers && r->body ? 0 : -ENOMEM;
}

int http_exchange(const char *addr, const char *request, int timeout_ms, HttpReply *ret) {
    char *raw = NULL;
    size_t len = 0;
    int fd = http_connect(addr), r;

    if (fd < 0)
        return fd;
    if (write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
        r = -errno;
        close(fd);
        return r ?: -EIO;
    }
    r = read_all(fd, timeout_ms, &raw, &len);
    close(fd);
    if (r < 0)
        return r;
    r = parse_reply(raw, len, ret);
    free(raw);
    return r;
}

int http_request(const char *addr, const char *method, const char *path, int timeout_ms,
                 HttpReply *ret) {
    char req[512];

    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: railgate\r\nConnection: close\r\n\r\n",
             method, path);
    return http_exchange(addr, req, timeout_ms, ret);
}

int http_status(const char *addr, const char *method, const char *path, int timeout_ms) {
    HttpReply r = {0};
    int rc = http_request(addr, method, path, timeout_ms, &r);

    if (rc >= 0)
        rc = r.status;
    http_reply_done(&r);
    return rc;
}

bool http_header(const HttpReply *r, const char *name, char *buf, size_t n) {
    size_t k = strlen(name);

    for (const char *l = r->headers; l && *l;) {
        const char *eol = strstr(l, "\r\n");
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (len > k && strncasecmp(l, name, k) == 0 && l[k] == ':') {
            const char *v = l + k + 1;
            while (*v == ' ')
                v++;
            snprintf(buf, n, "%.*s", (int)(len - (size_t)(v - l)), v);
            return true;
        }
        l += len + (eol ? 2 : 0);
    }
    return false;
}

bool http_wait_closed(int fd, int timeout_ms) {
    long long end = (long long)clock_monotonic_ms() + wait_scaled_ms(timeout_ms);
    char c;

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = end - (long long)clock_monotonic_ms();
        if (left <= 0 || poll(&p, 1, (int)left) == 0)
            return false;
        ssize_t n = read(fd, &c, 1);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            return true;
    }
}

int http_connect_from(const char *addr, const char *from) {
    ListenAddress a, src;
    char buf[80];
    int fd, r = listen_address_parse(addr, &a);

    if (r < 0 || !from)
        return r < 0 ? r : http_connect(addr);
    snprintf(buf, sizeof(buf), strchr(from, ':') ? "[%s]:1" : "%s:1", from);
    r = listen_address_parse(buf, &src);
    if (r < 0)
        return r;
    if (src.u.sa.sa_family == AF_INET)
        src.u.in4.sin_port = 0;
    else
        src.u.in6.sin6_port = 0;
    fd = socket(a.u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, &src.u.sa, src.len) < 0 || connect(fd, &a.u.sa, a.len) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

static double mono_us(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int trickler_open(Trickler *t, const char *addr, const char *from) {
    static const char start[] = "GET /metrics HTTP/1.1\r\nHost: railgate\r\nX-Slow: ";

    *t = (Trickler){.fd = -EBADF, .opened_us = mono_us()};
    t->fd = http_connect_from(addr, from);
    if (t->fd < 0)
        return t->fd;
    if (send(t->fd, start, strlen(start), MSG_NOSIGNAL) != (ssize_t)strlen(start)) {
        int r = -errno;
        close(t->fd);
        t->fd = -EBADF;
        return r ?: -EIO;
    }
    return 0;
}

/* Closed by the server: end of file or an error on read, or a send refused. */
static bool peer_closed(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    char buf[256];

    if (poll(&p, 1, 0) > 0) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return true;
    }
    return send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN;
}

unsigned trickle(Trickler *t, size_t n) {
    unsigned open = 0;

    for (size_t i = 0; i < n; i++) {
        if (t[i].fd < 0)
            continue;
        if (peer_closed(t[i].fd)) {
            close(t[i].fd);
            t[i].fd = -EBADF;
            t[i].closed_us = mono_us();
            continue;
        }
        t[i].sent++;
        open++;
    }
    return open;
}

/* A reset, not a FIN: libmicrohttpd's epoll loop (0.9.75 to 0.9.77) takes a
 * read shorter than its buffer for a drained socket, so a FIN that comes
 * with the last header byte goes unseen until a timeout; an error it sees. */
void tricklers_close(Trickler *t, size_t n) {
    static const struct linger reset = {.l_onoff = 1, .l_linger = 0};

    for (size_t i = 0; i < n; i++)
        if (t[i].fd >= 0) {
            (void)setsockopt(t[i].fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
            close(t[i].fd);
            t[i].fd = -EBADF;
        }
}

int http_send_get(int fd) {
    static const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: railgate\r\nConnection: close\r\n\r\n";

    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
        return errno ? -errno : -EIO;
    return 0;
}

int http_status_trickling(int fd, Trickler *t, size_t n, int timeout_ms) {
    long long end = (long long)clock_monotonic_ms() + wait_scaled_ms(timeout_ms);
    char head[16] = "", buf[4096];
    size_t len = 0;
    int status = 0;

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if ((long long)clock_monotonic_ms() >= end)
            return -ETIMEDOUT;
        (void)trickle(t, n);
        if (poll(&p, 1, TRICKLE_STEP_MS) <= 0)
            continue;
        ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (k > 0 && len < sizeof(head) - 1) {
            size_t c = sizeof(head) - 1 - len < (size_t)k ? sizeof(head) - 1 - len : (size_t)k;
            memcpy(head + len, buf, c);
            len += c;
        }
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
            break;
    }
    head[len] = 0;
    return sscanf(head, "HTTP/1.%*d %d", &status) == 1 ? status : 0;
}

bool scrape_sample(const char *text, const char *series, double *ret) {
    size_t k = strlen(series);

    for (const char *l = text; l && *l;) {
        if (strncmp(l, series, k) == 0 && l[k] == ' ') {
            char *end;
            double v = strtod(l + k + 1, &end);
            if (end == l + k + 1)
                return false;
            *ret = v;
            return true;
        }
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    return false;
}

bool scrape_value(const char *addr, const char *series, double *ret) {
    HttpReply r = {0};
    bool found;

    if (http_request(addr, "GET", "/metrics", 5000, &r) < 0)
        return false;
    found = r.status == 200 && scrape_sample(r.body, series, ret);
    http_reply_done(&r);
    return found;
}

typedef struct Want {
    const char *addr, *series;
    double want, last;
} Want;

static bool has_value(void *arg) {
    Want *w = arg;

    if (!scrape_value(w->addr, w->series, &w->last))
        w->last = NAN;
    return w->last == w->want;
}

bool scrape_wait(const char *addr, const char *series, double want, int timeout_ms,
                 double *ret_last) {
    Want w = {.addr = addr, .series = series, .want = want, .last = NAN};
    bool ok = testns_wait_until(has_value, &w, timeout_ms);

    if (ret_last)
        *ret_last = w.last;
    return ok;
}
