/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CNI's on-disk state, one state machine shared by the CNI and the
 * device plugin. <state_dir> holds:
 *
 *   attachments/<key>.json  the record of one attachment (attachment.h)
 *   units/<unit id>         the unit's marker: "<owner key>\n<boot id>\n" (the
 *                           units of one claim: links of one file)
 *   locks/<key>.lock        flock'ed by every ADD, DEL, CHECK and GC of <key>
 *   lock                    flock'ed while units are claimed or swept
 *
 * <key> is "<container id>:<ifname>": neither may contain ':' (CNI ids are
 * [A-Za-z0-9_.-], railgate refuses ':' in an ifname), so two attachments
 * never share a key. Files are published atomically (fileio.h): a marker or
 * record is absent or whole, never empty or partial.
 *
 * A unit is claimed while its marker exists and is live. A marker is stale,
 * and the unit free, when it was written in an earlier boot, names no
 * owner, or nobody holds its owner's lock (no ADD or DEL of it is running)
 * and the owner's record is absent, from an earlier boot, or does not list
 * the unit (an ADD killed between claim and record).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attachment.h"

#define STATE_KEY_MAX 250    /* NAME_MAX less ".json" */
#define STATE_BOOT_ID_LEN 40 /* a UUID and its NUL, with room */
/* Where boot_id is read: $RAILGATE_PROC_ROOT/sys/kernel/random/boot_id
 * (tests fake a reboot), /proc by default. */
#define STATE_PROC_ROOT_ENV "RAILGATE_PROC_ROOT"

/* "<container id>:<ifname>"; -EINVAL for an empty part or one with ':' or
 * '/', -ENAMETOOLONG beyond STATE_KEY_MAX (no attachment can have it). */
int state_key(const char *container_id, const char *ifname, char *buf, size_t n);
/* This boot's id, from /proc/sys/kernel/random/boot_id. */
int state_boot_id(char *buf, size_t n);
/* Create <state_dir> and its subdirectories (0700) if missing. */
int state_dir_ensure(const char *state_dir);

/* An exclusive flock on <state_dir>/lock: held by unit claims and GC. */
int state_lock(const char *state_dir);
/* <state_dir>/locks/<key>.lock */
int state_lock_path(const char *state_dir, const char *key, char *buf, size_t n);
/* An exclusive flock on the attachment's lock file, created if missing;
 * the fd. -ELOOP for a symlink there, -EBADFD for something not a regular
 * file (the caller names the path). */
int state_attachment_lock(const char *state_dir, const char *key);
/* Like state_attachment_lock() without waiting: -EWOULDBLOCK when held. */
int state_attachment_trylock(const char *state_dir, const char *key);
/* Remove lock files of attachments without a record that nobody holds
 * (left by versions that never removed them); the number removed. */
int state_locks_sweep(const char *state_dir);
/* Remove the temp files of writes a power loss cut short (regular files
 * ".<name>.tmp-XXXXXX" in the state dir and its record, unit and claim
 * dirs, last written before this boot began); the number removed. */
int state_temps_sweep(const char *state_dir);
/* Is an ADD, DEL, CHECK or GC of key running (its lock held)? 1 yes, 0 no,
 * < 0 unknown. Tried, never waited for, and let go at once; a lock file made
 * by the try after the attachment ended (no record) is removed again. */
int state_attachment_busy(const char *state_dir, const char *key);
/* Release the lock; with remove (the attachment ended: no record is left)
 * the lock file goes too, safely against concurrent waiters. fd < 0: noop. */
void state_attachment_unlock(const char *state_dir, const char *key, int fd, bool remove);

/* Save a record under its key, stamped with this boot's id. */
int state_record_save(const char *state_dir, Attachment *a);
/* The record of (container id, ifname): -ENOENT if none, -EXDEV if the
 * file under that key is of another attachment (never torn down). */
int state_record_load(const char *state_dir, const char *container_id, const char *ifname,
                      Attachment **ret);
/* The record under key, checked to be that key's; -ENOENT, -EXDEV, -EBADMSG. */
int state_record_load_key(const char *state_dir, const char *key, Attachment **ret);
int state_record_remove(const char *state_dir, const char *key);
/* Is there a record under key (read or not)? 1, 0, or -errno where it
 * cannot be told. */
int state_record_present(const char *state_dir, const char *key);
/* Keys of every record (strv, empty if none). */
int state_record_list(const char *state_dir, char ***ret);
/*
 * A record that does not parse (-EBADMSG) and was last written before this
 * boot began (CLOCK_REALTIME - CLOCK_BOOTTIME, less STATE_BOOT_SLACK_S): a
 * node crash tore it, as records without IPAM are written without fsync. It
 * is of an earlier boot and holds nothing (one with IPAM is durable, so
 * never torn). One written since the boot began is not: refused as today.
 */
#define STATE_BOOT_SLACK_S 5
bool state_record_torn(const char *state_dir, const char *key);
/* Was the record written in an earlier boot? (Its NICs came home, or died,
 * with that boot, and its netns is gone: it holds nothing.) */
bool state_record_from_earlier_boot(const Attachment *a);

/* Is the unit claimed by a live owner? (false for a stale marker: the
 * device plugin asks this to tell "in a pod" from "gone"). */
bool state_unit_attached(const char *state_dir, const char *unit_id);
/*
 * Claim units[0..n) for owner under the state lock: all or none. A stale
 * marker is taken over. 0 when every unit is ours; -EBUSY with the unit's
 * index and holder in ret_index/ret_holder if a live owner has one; any
 * other error releases what this call claimed.
 */
int state_units_claim(const char *state_dir, char *const *units, size_t n, const char *owner,
                      size_t *ret_index, char *ret_holder, size_t holder_len);
/*
 * DRA mode's claim: the same, and under the same lock, only while the
 * prepared claims (claims.h) give pod pod_uid every unit; -ESTALE with the
 * index of one they do not. kubelet's NodeUnprepare takes that lock too, so
 * a claim unprepared before this call is refused, and one unprepared after
 * it finds the units attached. pod_uid NULL: state_units_claim.
 */
int state_units_claim_prepared(const char *state_dir, char *const *units, size_t n,
                               const char *owner, const char *pod_uid, size_t *ret_index,
                               char *ret_holder, size_t holder_len);
/* Release a unit if owner holds it (a marker of another owner stays). */
int state_unit_release(const char *state_dir, const char *unit_id, const char *owner);
/* Release every unit whose marker names owner. */
int state_unit_release_owner(const char *state_dir, const char *owner);
/* The owner in a unit's marker; -ENOENT if the unit is free. */
int state_unit_holder(const char *state_dir, const char *unit_id, char *buf, size_t n);
/* Ids of every marked unit (strv, empty if none). */
int state_unit_list(const char *state_dir, char ***ret);
/* Is the marker of unit stale (see above)? false for a missing marker. */
bool state_unit_stale(const char *state_dir, const char *unit_id);
/* Remove every stale marker (under the state lock, which the caller holds);
 * the number removed. */
int state_units_sweep(const char *state_dir);

/* For tests: write a marker as it is (atomically), bypassing the claim. */
int state_unit_mark(const char *state_dir, const char *unit_id, const char *owner);
