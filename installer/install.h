/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railgate-cni-install: what the DaemonSet's init container does on a node.
 * Copy the CNI binary (and the libraries it runs with) into the host's CNI bin
 * dir, chain {"type": "railgate"} at the end of the host's primary network
 * config list, render the node config from the ConfigMap, and undo it all.
 *
 * Every file is written atomically: a temp file in the target's directory,
 * fsync, rename over the target, fsync of the directory. A reader (the
 * container runtime, which rereads its CNI config dir) sees the old file or
 * the new one, never half of one. Every function is idempotent: when the
 * target already holds what would be written, it is left untouched and
 * *changed is false. Errors name the file and the reason in err->msg.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define INSTALL_PLUGIN_TYPE "railgate"
/* The file that marks a lib dir as railgate's own, so uninstall may empty it. */
#define INSTALL_LIB_MARKER ".railgate-lib"
/* A CNI network config is small; refuse anything past this. */
#define INSTALL_MAX_CONF_SIZE (1u << 20)

typedef struct InstallOwner {
    uid_t uid;
    gid_t gid;
} InstallOwner;

/* Write len bytes to path atomically with mode (and, owner != NULL, that
 * owner). The directory must exist. */
int install_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         const InstallOwner *owner, RgError *err);

/* Copy the regular file src to dir/name with mode, atomically. */
int install_copy_file(const char *src, const char *dir, const char *name, mode_t mode,
                      bool *changed, RgError *err);

/* Copy every regular file of src_dir (following symlinks) into dst_dir
 * (created 0755 if missing) with mode, and mark dst_dir as railgate's.
 * *n_changed counts the files written. */
int install_copy_dir(const char *src_dir, const char *dst_dir, mode_t mode, unsigned *n_changed,
                     RgError *err);

/* Remove the regular files of a dir that install_copy_dir filled (it must
 * hold the marker), then the dir. A missing dir is not an error. */
int install_remove_dir(const char *dir, bool *changed, RgError *err);

/*
 * Remove railgate's state on a node: attachments/, units/ and locks/ of
 * state_dir (state.h), the device plugin's inventory.json, the lock, then
 * the dir, all under the state lock.
 * Refused with -EBUSY, nothing removed, while a record of this boot is there
 * (or one that cannot be read): its NICs are in a pod, and the record is how
 * DEL brings them home. A record of an earlier boot holds nothing and goes.
 * Anything else in state_dir stays, and with it the dir: *kept (if kept) is
 * the first such name (malloc'd), else NULL. A dir that is a mount point (a
 * hostPath volume of exactly this dir) stays, empty. A missing dir is not an
 * error.
 */
int install_remove_state(const char *state_dir, bool *changed, char **kept, RgError *err);

/* Remove path; a missing file is not an error. */
int install_remove_file(const char *path, bool *changed, RgError *err);

/*
 * The network config a runtime uses: containerd and CRI-O (through libcni)
 * list *.conf, *.conflist and *.json in the conf dir, sort the names and take
 * the first. *ret is its path (malloc'd); -ENOENT when the dir has none.
 */
int install_primary_config(const char *conf_dir, char **ret, RgError *err);

/*
 * Append {"type": "railgate"} to the "plugins" array of the network config
 * list at path, keeping every other key, value and order. An entry of type
 * railgate anywhere in the list already: nothing written. A file that is not
 * a .conflist holds a single plugin: with convert it becomes <name>.conflist
 * (the plugin, then railgate) and the old file is removed; without, -EINVAL.
 * A cniVersion railgate does not speak is refused (the runtime would fail
 * every pod of the node). *ret_path (if ret_path) is the file holding the
 * entry now (malloc'd).
 */
int install_conflist_add(const char *path, bool convert, bool *changed, char **ret_path,
                         RgError *err);

/* Remove every entry of type railgate from the conflist at path. */
int install_conflist_remove(const char *path, bool *changed, RgError *err);

/* install_conflist_remove on every .conflist of conf_dir; all are tried,
 * the first error is returned. *n_changed counts the files rewritten. */
int install_conflist_remove_dir(const char *conf_dir, unsigned *n_changed, RgError *err);

/*
 * The node config out of a mounted ConfigMap: dir/<node> if that key exists,
 * else dir/default. It must pass the node config validation (the errors name
 * dir/<key> and the JSON path); then it is written atomically to out, 0644.
 * *ret_key (if ret_key) is the key used (malloc'd).
 */
int install_render(const char *dir, const char *node, const char *out, bool *changed,
                   char **ret_key, RgError *err);

/* Parse and validate a node config file, as both programs do when they load it. */
int install_check_config(const char *path, RgError *err);
