/* SPDX-License-Identifier: Apache-2.0 */
/* Unix socket files a server names afresh at every start, and those nobody serves any more. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* "<prefix><8 hex><suffix>", the hex random: a name no earlier start used. */
int sockfile_name(const char *prefix, const char *suffix, char *buf, size_t n);
/* Does anybody listen on the socket at path? true when it cannot tell. */
bool sockfile_answers(const char *path);
/*
 * Remove the sockets in dir named "<prefix><8 hex><suffix>" (and exactly
 * legacy, when not NULL: the name an earlier version used) that nobody
 * serves: left by a process that was killed, they would be dialed in vain.
 * removed(path, userdata), when not NULL, hears of each. The number removed.
 */
int sockfile_sweep(const char *dir, const char *prefix, const char *suffix, const char *legacy,
                   void (*removed)(const char *path, void *userdata), void *userdata);
