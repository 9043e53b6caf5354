/* SPDX-License-Identifier: Apache-2.0 */
/* One scale factor for every wait of the tests. */
#pragma once

#include <stdlib.h>

/*
 * A wait of ms milliseconds as a test on this machine should allow it:
 * ms times RAILGATE_TEST_WAIT_SCALE (a number from 1 to 1000, default 1).
 * A slow or loaded machine (a kernel under QEMU/TCG, a shared CI box) passes
 * by waiting longer, never by asserting less. Upper bounds of waits only: a
 * window in which nothing may happen stays as it is.
 */
static inline int wait_scaled_ms(int ms) {
    const char *s = getenv("RAILGATE_TEST_WAIT_SCALE");
    double f = s ? strtod(s, NULL) : 1.0;

    if (!(f >= 1.0 && f <= 1000.0))
        f = 1.0;
    return (int)((double)ms * f);
}
