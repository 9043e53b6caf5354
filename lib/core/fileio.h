/* SPDX-License-Identifier: Apache-2.0 */
/* Files, one way everywhere (state, records, inventory, node config, installer):
 * one atomic write, one bounded read, one mkdir -p. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A temp file beside path, hidden and named so that nothing takes it for
 * the real one (".<name>.tmp-XXXXXX": no .conf/.json suffix a CNI runtime
 * or a reader of the directory would pick up). Fill it through t->fd, then
 * commit or discard it.
 */
typedef struct FileioTemp {
    int fd;
    char path[4200];
} FileioTemp;
int fileio_temp_open(const char *path, FileioTemp *t);
/* Drop a temp file that was not committed (closes and unlinks; idempotent). */
void fileio_temp_discard(FileioTemp *t);

typedef struct FileioWrite {
    mode_t mode;
    bool exclusive; /* link() instead of rename(): -EEXIST if anything is at path */
    bool chown;     /* give the file uid:gid */
    /* the file means nothing after a reboot (a claim stamped with the boot
     * id, an attachment record without IPAM): no fsync of it or its
     * directory. A crash of the process keeps it (the page cache is the
     * kernel's); a crash of the node makes it stale whatever the disk
     * holds, empty or partial included (the reader tells: a boot id, or an
     * mtime before the boot began). */
    bool boot_scoped;
    uid_t uid;
    gid_t gid;
} FileioWrite;
/*
 * Publish the temp file at path so that a reader, and the disk after a
 * crash, sees either the old file (or nothing) or all of the new one: mode
 * (and owner), fsync, close, rename over path (never following a symlink
 * there), fsync of the directory. The temp file is gone afterwards, whatever
 * the result.
 */
int fileio_temp_commit(FileioTemp *t, const char *path, const FileioWrite *w);

/* The same for data in memory. */
int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                        bool exclusive);
int fileio_write_atomic_with(const char *path, const void *data, size_t len, const FileioWrite *w);

/*
 * The whole of a regular file, NUL-terminated; -EFBIG if it is larger than
 * max (or grows past it while read), -ENOENT if absent, -EISDIR for a
 * directory, -EBADFD for another file type (a FIFO is never waited on, a device never read).
 * read_bounded refuses a symlink at path (-ELOOP): state files are only ever ours; read_file
 * follows it (a node config mounted from a ConfigMap is one).
 */
int fileio_read_bounded(const char *path, size_t max, char **ret, size_t *ret_len);
int fileio_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* mkdir -p; the last component gets mode, the parents 0755. -ENOTDIR when
 * path (or a parent) exists and is not a directory. */
int fileio_mkdir_p(const char *path, mode_t mode);
/* fsync the directory that holds path (after an unlink or rename in it). */
int fileio_sync_parent(const char *path);
/* write() all of len, through EINTR and short writes. */
int fileio_write_all(int fd, const void *data, size_t len);

/* read(2) retried on EINTR: the count (0 at the end), or -errno. */
ssize_t fileio_read_some(int fd, void *buf, size_t n);
