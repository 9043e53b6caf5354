/* SPDX-License-Identifier: Apache-2.0 */
/* Monotonic time, for deadlines and durations. */
#include "clock.h"

#include <limits.h>
#include <time.h>

uint64_t clock_monotonic_ns(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ms(void) {
    return clock_monotonic_ns() / 1000000u;
}

int clock_left_ms(uint64_t deadline_ms) {
    uint64_t now = clock_monotonic_ms();

    if (deadline_ms <= now)
        return 0;
    return deadline_ms - now > INT_MAX ? INT_MAX : (int)(deadline_ms - now);
}
