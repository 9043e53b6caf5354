/* SPDX-License-Identifier: Apache-2.0 */
/* Files dated before this boot began, as a node crash leaves them (lib/state's "earlier boot"). */
#pragma once

#include <time.h>

/* When this boot began on the wall clock (CLOCK_REALTIME - CLOCK_BOOTTIME), in seconds. */
time_t boot_began_s(void);
/* Set path's access and modification times to seconds before this boot began; flags as
 * utimensat()'s (AT_SYMLINK_NOFOLLOW: the link itself). 0 or -errno. */
int backdate(const char *path, time_t seconds, int flags);
