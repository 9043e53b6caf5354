/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint's connections: so many per client, each request cut off at a deadline. */
#pragma once

#include <microhttpd.h>

#include "macro.h"

/*
 * libmicrohttpd closes a connection only when it has been idle for its
 * timeout, and a client that sends a byte now and then is never idle: a few
 * such clients would hold every connection the server takes. The guard
 * adds two bounds: an address other than loopback gets at most max_per_client
 * connections at once (more are closed as they are accepted; 0: no limit),
 * and a request not answered deadline_s after it could begin (the
 * connection's accept, or the end of its previous request) has its
 * connection shut down by a thread of the guard's, however it trickles
 * (0: no deadline).
 *
 * The deadline also frees a connection whose end libmicrohttpd's epoll loop
 * did not see (it takes a short read for a drained socket, so a FIN that
 * comes with a client's last bytes waits for the idle timeout).
 *
 * Loopback and unix-socket clients are all one address, so a limit per
 * address would make one of them refuse the others; there the deadline
 * keeps the slots turning, and a connection past maxConnections waits in the
 * listen backlog for the next free one.
 */
typedef struct MetricsGuard MetricsGuard;
int metrics_guard_new(unsigned max_per_client, unsigned deadline_s, MetricsGuard **ret);
/* Call after the daemon is stopped (its connections closed). NULL-safe. */
void metrics_guard_free(MetricsGuard *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricsGuard *, metrics_guard_free);

/* The daemon's callbacks, each with the guard as its closure: the accept
 * policy, MHD_OPTION_NOTIFY_CONNECTION and MHD_OPTION_NOTIFY_COMPLETED. */
enum MHD_Result metrics_guard_accept(void *cls, const struct sockaddr *addr, socklen_t len);
void metrics_guard_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                              enum MHD_ConnectionNotificationCode code);
void metrics_guard_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                             enum MHD_RequestTerminationCode why);
