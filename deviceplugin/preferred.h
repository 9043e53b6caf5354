/* SPDX-License-Identifier: Apache-2.0 */
/* GetPreferredAllocation policy: one PCIe switch, then one NUMA node, then fewest. */
#pragma once

#include <stddef.h>

#include "inventory.h"

/*
 * Choose size units among avail (n_avail, no duplicates), always including
 * must (n_must, all of them in avail). Preference: all chosen units under one
 * PCIe switch (the tightest switch that fits), else in one NUMA node (the
 * tightest that fits), else spread over the fewest NUMA nodes. Never returns
 * a unit outside avail. Writes at most size units to ret; returns how many.
 */
size_t preferred_select(const Unit *const *avail, size_t n_avail, const Unit *const *must,
                        size_t n_must, size_t size, const Unit **ret);
