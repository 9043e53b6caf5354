/* SPDX-License-Identifier: Apache-2.0 */
/* Scraping the agent's /metrics in tests: one HTTP request per connection, samples by series.
 * Every timeout here is scaled by RAILGATE_TEST_WAIT_SCALE (waitscale.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct HttpReply {
    int status;    /* from the status line; 0 when none came */
    char *headers; /* the header lines, "\r\n" between, NUL-terminated */
    char *body;    /* NUL-terminated */
    size_t body_len;
} HttpReply;

void http_reply_done(HttpReply *r);

/* A stream socket connected to addr ("unix:/path", "ip:port", "[ip6]:port"),
 * or -errno. */
int http_connect(const char *addr);
/*
 * Send request (the bytes as they are) on a new connection to addr and read
 * until the server closes it or timeout_ms passes (-ETIMEDOUT). 0 with the
 * parsed reply; a close without a status line leaves status 0.
 */
int http_exchange(const char *addr, const char *request, int timeout_ms, HttpReply *ret);
/* METHOD path HTTP/1.1 with Host and Connection: close. */
int http_request(const char *addr, const char *method, const char *path, int timeout_ms,
                 HttpReply *ret);
/* The status a request on a new connection got; -errno when none came. */
int http_status(const char *addr, const char *method, const char *path, int timeout_ms);
/* The value of header name (case-insensitive) in r, copied into buf; false if absent. */
bool http_header(const HttpReply *r, const char *name, char *buf, size_t n);
/* Wait until fd's peer closes (read returns 0 or an error); false after timeout_ms. */
bool http_wait_closed(int fd, int timeout_ms);
/* http_connect from the local address from ("192.0.2.1", "::1"; NULL: the
 * kernel's choice); a TCP addr only. */
int http_connect_from(const char *addr, const char *from);

/*
 * A slow client: it sends a request line, then its header a byte at a time,
 * and never ends it. Times are CLOCK_MONOTONIC microseconds.
 */
typedef struct Trickler {
    int fd;           /* -EBADF once the server has closed it */
    double opened_us; /* before its connect() */
    double closed_us; /* when it was found closed; 0 while open */
    size_t sent;      /* header bytes after the request line */
} Trickler;
/* Connect t to addr from from (http_connect_from) and send the request line. */
int trickler_open(Trickler *t, const char *addr, const char *from);
/* One more header byte to each open trickler of t[0..n-1]; one the server
 * closed (end of file, a reset, a refused send) is closed here and stamped.
 * Returns how many are still open. */
unsigned trickle(Trickler *t, size_t n);
/* Close the open ones, with a reset (a client that goes away mid-request). */
void tricklers_close(Trickler *t, size_t n);
/* Send a whole GET /metrics on fd (Connection: close). */
int http_send_get(int fd);
/* The status of the answer on fd (0: none came) once the server closed it,
 * the tricklers t[0..n-1] going on meanwhile, a byte each every
 * TRICKLE_STEP_MS; -ETIMEDOUT after timeout_ms. fd stays open. */
#define TRICKLE_STEP_MS 100 /* far below any idle timeout of the tests */
int http_status_trickling(int fd, Trickler *t, size_t n, int timeout_ms);

/* The value of the sample written exactly as series ("name{a=\"x\"}") in a
 * text exposition; false when it is not there. */
bool scrape_sample(const char *text, const char *series, double *ret);
/* GET /metrics from addr and the value of series, or false. */
bool scrape_value(const char *addr, const char *series, double *ret);
/* Scrape until series has the value want; false after timeout_ms (the last
 * value seen, or NaN, in *ret_last if given). */
bool scrape_wait(const char *addr, const char *series, double want, int timeout_ms,
                 double *ret_last);
