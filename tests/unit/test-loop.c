/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's event loop: fds, one-shot timers, the hooks around each wait. No root. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "loop.h"

typedef struct T {
    EvLoop *l;
    int efd, timer_a, timer_b;
    char trace[64];
    unsigned prepares, checks, reads;
} T;

static void note(T *t, char c) {
    size_t n = strlen(t->trace);

    if (n + 1 < sizeof(t->trace))
        t->trace[n] = c, t->trace[n + 1] = 0;
}

static void on_a(void *userdata) {
    note(userdata, 'a');
}

/* b ends the loop once the fd was read */
static void on_b(void *userdata) {
    T *t = userdata;

    note(t, 'b');
    if (t->reads)
        ev_loop_quit(t->l);
    else
        ev_loop_timer_at(t->l, t->timer_b, clock_monotonic_ms() + 5);
}

static void on_fd(void *userdata, short revents) {
    T *t = userdata;
    uint64_t v;

    assert_true(revents & POLLIN);
    assert_int_equal(read(t->efd, &v, sizeof(v)), sizeof(v));
    t->reads++;
    note(t, 'f');
}

static uint64_t on_prepare(void *userdata) {
    T *t = userdata;

    t->prepares++;
    return EV_NEVER;
}

static void on_check(void *userdata) {
    T *t = userdata;

    t->checks++;
    if (t->checks == 1) { /* after the first turn: the fd becomes readable */
        uint64_t one = 1;
        assert_int_equal(write(t->efd, &one, sizeof(one)), sizeof(one));
    }
}

static void test_order_and_quit(void **state) {
    T t = {0};

    (void)state;
    assert_int_equal(ev_loop_new(&t.l), 0);
    t.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(t.efd >= 0);
    assert_true(ev_loop_add_fd(t.l, t.efd, POLLIN, on_fd, &t) >= 0);
    t.timer_a = ev_loop_add_timer(t.l, on_a, &t);
    t.timer_b = ev_loop_add_timer(t.l, on_b, &t);
    assert_true(t.timer_a >= 0 && t.timer_b >= 0);
    assert_false(ev_loop_timer_armed(t.l, t.timer_a));
    assert_int_equal(ev_loop_add_prepare(t.l, on_prepare, &t), 0);
    assert_int_equal(ev_loop_add_check(t.l, on_check, &t), 0);
    uint64_t now = clock_monotonic_ms();
    ev_loop_timer_at(t.l, t.timer_b, now + 20);
    ev_loop_timer_at(t.l, t.timer_a, now + 1);
    assert_true(ev_loop_timer_armed(t.l, t.timer_a));
    assert_int_equal(ev_loop_run(t.l), 0);
    /* a first (one-shot: once), then the fd the check made readable, then b,
     * which quits since the fd was read */
    assert_string_equal(t.trace, "afb");
    assert_false(ev_loop_timer_armed(t.l, t.timer_a));
    assert_int_equal(t.reads, 1);
    assert_true(t.prepares >= 3);
    assert_true(t.checks >= 2);
    /* the quit ended that run: the same loop runs again, until b quits it */
    unsigned prepares = t.prepares;
    ev_loop_timer_at(t.l, t.timer_b, clock_monotonic_ms() + 5);
    assert_int_equal(ev_loop_run(t.l), 0);
    assert_true(t.prepares > prepares);
    assert_string_equal(t.trace, "afbb");
    close(t.efd);
    ev_loop_free(t.l);
}

/* A slot without an fd is not polled; given one, it is. */
static void test_set_fd(void **state) {
    T t = {0};
    uint64_t one = 1;

    (void)state;
    assert_int_equal(ev_loop_new(&t.l), 0);
    t.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int id = ev_loop_add_fd(t.l, -1, POLLIN, on_fd, &t);
    assert_true(id >= 0);
    t.timer_b = ev_loop_add_timer(t.l, on_b, &t);
    assert_int_equal(write(t.efd, &one, sizeof(one)), sizeof(one));
    ev_loop_set_fd(t.l, id, t.efd);
    ev_loop_timer_at(t.l, t.timer_b, clock_monotonic_ms() + 5);
    assert_int_equal(ev_loop_run(t.l), 0);
    assert_int_equal(t.reads, 1);
    close(t.efd);
    ev_loop_free(t.l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_quit),
        cmocka_unit_test(test_set_fd),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
