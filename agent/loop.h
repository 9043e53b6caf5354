/* SPDX-License-Identifier: Apache-2.0 */
/* The node agent's one event loop: file descriptors with callbacks, timers, and hooks around
 * each wait. Every front (the device plugin, the DRA driver) and the health module register on
 * it; main runs it. One thread; nothing here locks. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define EV_MAX_FDS 16
#define EV_MAX_TIMERS 8
#define EV_MAX_HOOKS 8
#define EV_NEVER UINT64_MAX

typedef struct EvLoop EvLoop;
/* fd became ready: revents as poll() says */
typedef void (*ev_fd_fn)(void *userdata, short revents);
typedef void (*ev_fn)(void *userdata);
/* Before each wait: bring things up to date; the next time (monotonic ms)
 * something is due, EV_NEVER when only an event can change anything. */
typedef uint64_t (*ev_prepare_fn)(void *userdata);

int ev_loop_new(EvLoop **ret);
void ev_loop_free(EvLoop *l);

/* Poll fd for events; its id (>= 0). fd < 0: a slot not polled yet. */
int ev_loop_add_fd(EvLoop *l, int fd, short events, ev_fd_fn fn, void *userdata);
/* The slot's fd replaced (-1: not polled). */
void ev_loop_set_fd(EvLoop *l, int id, int fd);
void ev_loop_remove_fd(EvLoop *l, int id);

/* A one-shot timer, disarmed; its id (>= 0). */
int ev_loop_add_timer(EvLoop *l, ev_fn fn, void *userdata);
/* Fire at at_ms (monotonic; EV_NEVER: disarm). An armed timer moves. */
void ev_loop_timer_at(EvLoop *l, int id, uint64_t at_ms);
bool ev_loop_timer_armed(const EvLoop *l, int id);

/* prepare: before each wait, in the order added; check: after each
 * dispatch of the events and timers, in the order added. */
int ev_loop_add_prepare(EvLoop *l, ev_prepare_fn fn, void *userdata);
int ev_loop_add_check(EvLoop *l, ev_fn fn, void *userdata);

/* Make ev_loop_run return once the callback running now does. */
void ev_loop_quit(EvLoop *l);
/* Wait and dispatch until ev_loop_quit, which ends this run (a later run
 * of the same loop goes on); 0, or -errno when poll failed. */
int ev_loop_run(EvLoop *l);
