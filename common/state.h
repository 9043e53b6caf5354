/* On-disk state shared by the CNI and the device plugin. */
#pragma once

#include <stdbool.h>

/*
 * <state_dir>/units/<unit id> exists while a unit's NIC is attached to a pod
 * (the CNI creates it before it moves the NIC and removes it after the NIC is
 * back). The device plugin reads it to tell "moved into a pod" from "gone".
 */
bool state_unit_attached(const char *state_dir, const char *unit_id);
int state_unit_mark(const char *state_dir, const char *unit_id, const char *owner);
int state_unit_unmark(const char *state_dir, const char *unit_id);
/* Create <state_dir> and <state_dir>/units (0700) if missing. */
int state_dir_ensure(const char *state_dir);
