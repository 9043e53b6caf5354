/* On-disk state shared by the CNI and the device plugin. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * <state_dir>/units/<unit id> exists while a unit's NIC is attached to a pod
 * (the CNI creates it before it moves the NIC and removes it after the NIC is
 * back). The device plugin reads it to tell "moved into a pod" from "gone".
 */
bool state_unit_attached(const char *state_dir, const char *unit_id);
int state_unit_mark(const char *state_dir, const char *unit_id, const char *owner);
int state_unit_unmark(const char *state_dir, const char *unit_id);
/* Claim a unit for owner: creates the marker exclusively. 0 if it is ours
 * already, -EBUSY (and the holder in ret_holder) if another owner has it. */
int state_unit_claim(const char *state_dir, const char *unit_id, const char *owner,
                     char *ret_holder, size_t n);
/* The owner written in a unit's marker. -ENOENT if the unit is free. */
int state_unit_holder(const char *state_dir, const char *unit_id, char *buf, size_t n);
/* Ids of every marked unit (strv, empty if none). */
int state_unit_list(const char *state_dir, char ***ret);
/* Unmark every unit whose marker names owner. */
int state_unit_release_owner(const char *state_dir, const char *owner);
/* Create <state_dir> and <state_dir>/units (0700) if missing. */
int state_dir_ensure(const char *state_dir);
