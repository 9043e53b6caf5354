/* SPDX-License-Identifier: Apache-2.0 */
/* Monotonic time, for deadlines and durations. */
#pragma once

#include <stdint.h>

uint64_t clock_monotonic_ns(void);
uint64_t clock_monotonic_ms(void);
/* Milliseconds from now until deadline_ms (CLOCK_MONOTONIC), 0 once it passed. */
int clock_left_ms(uint64_t deadline_ms);
