/* Files the state dir is made of: one atomic publish, one bounded read, one mkdir -p. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Publish data at path so that a reader, and the disk after a crash, sees
 * either nothing (or the old file) or all of it, never a partial file: a
 * temp file in the same directory, written and fsync'ed, then renamed over
 * path (exclusive: linked, so -EEXIST if path exists), then the directory
 * fsync'ed. mode applies to the new file. Never follows a symlink at path.
 */
int fileio_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                        bool exclusive);
/*
 * The whole of a regular file (not a symlink, not a FIFO), NUL-terminated;
 * -EFBIG if it is larger than max, -ENOENT if absent, -ELOOP for a symlink,
 * -EBADFD for another file type.
 */
int fileio_read_bounded(const char *path, size_t max, char **ret, size_t *ret_len);
/* mkdir -p; the last component gets mode, the parents 0755. */
int fileio_mkdir_p(const char *path, mode_t mode);
/* fsync the directory that holds path (after an unlink or rename in it). */
int fileio_sync_parent(const char *path);
