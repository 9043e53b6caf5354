/* SPDX-License-Identifier: Apache-2.0 */
/* Records, unit markers and locks of the state dir: one state machine. */
#include "state.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "claims.h"
#include "fileio.h"
#include "macro.h"
#include "strv.h"

#define RECORD_MAX (4u << 20)
#define MARKER_MAX 512

static bool part_valid(const char *s) {
    return s && *s && !strchr(s, ':') && !strchr(s, '/');
}

int state_key(const char *cid, const char *ifname, char *buf, size_t n) {
    if (!part_valid(cid) || !part_valid(ifname) || streq(ifname, ".") || streq(ifname, ".."))
        return -EINVAL;
    if (strlen(cid) + 1 + strlen(ifname) > STATE_KEY_MAX)
        return -ENAMETOOLONG;
    if ((size_t)snprintf(buf, n, "%s:%s", cid, ifname) >= n)
        return -ENAMETOOLONG;
    return 0;
}

/* A key from a file name or a marker: the form state_key() makes. */
static bool key_valid(const char *key) {
    const char *colon = strchr(key, ':');

    return colon && colon != key && colon[1] && !strchr(colon + 1, ':') && !strchr(key, '/') &&
           strlen(key) <= STATE_KEY_MAX;
}

int state_boot_id(char *buf, size_t n) {
    const char *root = getenv(STATE_PROC_ROOT_ENV);
    char path[4096];
    _cleanup_free_ char *text = NULL;
    int r;

    snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", root && *root ? root : "/proc");
    r = fileio_read_bounded(path, 128, &text, NULL);
    if (r < 0)
        return r;
    text[strcspn(text, "\n")] = 0;
    if (!*text || strlen(text) >= n)
        return -EBADMSG;
    snprintf(buf, n, "%s", text);
    return 0;
}

static int sub_path(const char *state_dir, const char *sub, const char *name, const char *ext,
                    char *buf, size_t n) {
    if (!*name || strchr(name, '/') || name[0] == '.')
        return -EINVAL;
    if ((size_t)snprintf(buf, n, "%s/%s/%s%s", state_dir, sub, name, ext) >= n)
        return -ENAMETOOLONG;
    return 0;
}

int state_dir_ensure(const char *state_dir) {
    static const char *const subs[] = {"units", "attachments", "locks"};
    char dir[4096];
    int r = fileio_mkdir_p(state_dir, 0700);

    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(subs); i++) {
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", state_dir, subs[i]) >= sizeof(dir))
            return -ENAMETOOLONG;
        r = fileio_mkdir_p(dir, 0700);
    }
    return r;
}

/* ---- locks ---- */

static int open_lock(const char *path, bool create) {
    int fd =
        open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0), 0600);
    struct stat st;

    if (fd < 0)
        return errno == ENXIO ? -EBADFD : -errno; /* ENXIO: a socket or FIFO without reader */
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EBADFD;
    }
    return fd;
}

/* flock path exclusively; if the file was unlinked (its attachment ended)
 * while we waited, lock the new one instead. */
static int lock_file_how(const char *path, int how) {
    for (;;) {
        struct stat a, b;
        int fd = open_lock(path, true);

        if (fd < 0)
            return fd;
        while (flock(fd, how) < 0)
            if (errno != EINTR) {
                int r = -errno;
                close(fd);
                return r;
            }
        if (fstat(fd, &a) >= 0 && lstat(path, &b) >= 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
            return fd;
        close(fd);
    }
}

static int lock_file(const char *path) {
    return lock_file_how(path, LOCK_EX);
}

/* The state dirs are made when a file in them cannot be, not before every
 * write: once per node, not once per claim. */
#define ENSURING(state_dir, expr)                                                                  \
    ({                                                                                             \
        int _r_ = (expr);                                                                          \
        if (_r_ == -ENOENT && state_dir_ensure(state_dir) >= 0)                                    \
            _r_ = (expr);                                                                          \
        _r_;                                                                                       \
    })

int state_lock(const char *state_dir) {
    char path[4096];

    if ((size_t)snprintf(path, sizeof(path), "%s/lock", state_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    return ENSURING(state_dir, lock_file(path));
}

int state_lock_path(const char *state_dir, const char *key, char *buf, size_t n) {
    return sub_path(state_dir, "locks", key, ".lock", buf, n);
}

static int attachment_lock_how(const char *state_dir, const char *key, int how) {
    char path[4096];
    int r;

    if (!key_valid(key))
        return -EINVAL;
    r = state_lock_path(state_dir, key, path, sizeof(path));
    return r < 0 ? r : ENSURING(state_dir, lock_file_how(path, how));
}

int state_attachment_lock(const char *state_dir, const char *key) {
    return attachment_lock_how(state_dir, key, LOCK_EX);
}

int state_attachment_trylock(const char *state_dir, const char *key) {
    return attachment_lock_how(state_dir, key, LOCK_EX | LOCK_NB);
}

void state_attachment_unlock(const char *state_dir, const char *key, int fd, bool remove) {
    char path[4096];

    if (fd < 0)
        return;
    /* unlink while holding it: a waiter that then gets the old inode sees
     * it is no longer at the path and locks the new file (lock_file) */
    if (remove && state_lock_path(state_dir, key, path, sizeof(path)) >= 0)
        (void)unlink(path);
    close(fd);
}

/* Is someone (an ADD, DEL or GC of key) holding its lock? */
static bool lock_held(const char *state_dir, const char *key) {
    char path[4096];
    _cleanup_close_ int fd = -EBADF;

    if (state_lock_path(state_dir, key, path, sizeof(path)) < 0)
        return false;
    fd = open_lock(path, false);
    if (fd == -ENOENT)
        return false;
    if (fd < 0)
        return true; /* cannot tell: keep the claim */
    return flock(fd, LOCK_SH | LOCK_NB) < 0;
}

/* ---- records ---- */

int state_record_save(const char *state_dir, Attachment *a) {
    char key[STATE_KEY_MAX + 1], path[4096];
    _cleanup_free_ char *text = NULL;
    int r;

    r = state_key(a->container_id, a->ifname, key, sizeof(key));
    if (r >= 0)
        r = state_boot_id(a->boot_id, sizeof(a->boot_id));
    if (r >= 0)
        r = sub_path(state_dir, "attachments", key, ".json", path, sizeof(path));
    if (r >= 0)
        r = attachment_to_text(a, &text);
    if (r < 0)
        return r;
    /* durable only with IPAM: the plugin's allocation, which can outlive
     * the boot, must be released after a power loss. Without, a record a
     * node crash keeps is of an earlier boot (boot id), or torn (empty or
     * partial, written before this boot began: state_record_torn()), and
     * holds nothing either way */
    FileioWrite w = {.mode = 0600, .boot_scoped = !a->ipam};
    return ENSURING(state_dir, fileio_write_atomic_with(path, text, strlen(text), &w));
}

int state_record_load_key(const char *state_dir, const char *key, Attachment **ret) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    _cleanup_free_ char *text = NULL;
    char path[4096], want[STATE_KEY_MAX + 1];
    int r;

    if (!key_valid(key))
        return -EINVAL;
    r = sub_path(state_dir, "attachments", key, ".json", path, sizeof(path));
    if (r >= 0)
        r = fileio_read_bounded(path, RECORD_MAX, &text, NULL);
    if (r >= 0)
        r = attachment_from_text(text, &a);
    if (r < 0)
        return r;
    /* the record must be the attachment its key names */
    if (state_key(a->container_id, a->ifname, want, sizeof(want)) < 0 || !streq(want, key))
        return -EXDEV;
    *ret = TAKE_PTR(a);
    return 0;
}

int state_record_load(const char *state_dir, const char *cid, const char *ifname,
                      Attachment **ret) {
    char key[STATE_KEY_MAX + 1];
    int r = state_key(cid, ifname, key, sizeof(key));

    return r < 0 ? r : state_record_load_key(state_dir, key, ret);
}

int state_record_present(const char *state_dir, const char *key) {
    char path[4096];
    int r = key_valid(key) ? sub_path(state_dir, "attachments", key, ".json", path, sizeof(path))
                           : -EINVAL;

    if (r < 0)
        return r;
    if (faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 1;
    return errno == ENOENT ? 0 : -errno;
}

int state_record_remove(const char *state_dir, const char *key) {
    char path[4096];
    int r = sub_path(state_dir, "attachments", key, ".json", path, sizeof(path));

    if (r < 0)
        return r;
    /* no fsync of the directory: a record a node crash brings back is of an
     * earlier boot, and dropped untouched (its IPAM released again, which
     * the plugins take by container id) */
    return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* When this boot began, on the wall clock: CLOCK_REALTIME - CLOCK_BOOTTIME. */
static int boot_began(struct timespec *ret) {
    struct timespec now, up;

    if (clock_gettime(CLOCK_REALTIME, &now) < 0 || clock_gettime(CLOCK_BOOTTIME, &up) < 0)
        return -errno;
    ret->tv_sec = now.tv_sec - up.tv_sec;
    ret->tv_nsec = now.tv_nsec - up.tv_nsec;
    if (ret->tv_nsec < 0) {
        ret->tv_sec--;
        ret->tv_nsec += 1000000000L;
    }
    return 0;
}

bool state_record_torn(const char *state_dir, const char *key) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    char path[4096];
    struct timespec boot = {0};
    struct stat st;

    if (!key_valid(key) || state_record_load_key(state_dir, key, &a) != -EBADMSG ||
        sub_path(state_dir, "attachments", key, ".json", path, sizeof(path)) < 0 ||
        lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || boot_began(&boot) < 0)
        return false;
    /* the slack: the two clocks are read one after the other, and NTP
     * slews the wall clock */
    return st.st_mtim.tv_sec < boot.tv_sec - STATE_BOOT_SLACK_S;
}

static int dir_names(const char *state_dir, const char *sub, const char *ext, char ***ret) {
    char dir[4096];
    char **l = calloc(1, sizeof(char *));
    size_t e = strlen(ext);
    DIR *d;
    int r = 0;

    if (!l)
        return -ENOMEM;
    if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", state_dir, sub) >= sizeof(dir)) {
        free(l);
        return -ENAMETOOLONG;
    }
    d = opendir(dir);
    if (!d && errno != ENOENT) {
        r = -errno;
        free(l);
        return r;
    }
    for (struct dirent *de; d && r >= 0 && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' || n <= e || !streq(de->d_name + n - e, ext))
            continue;
        r = strv_pushf(&l, "%.*s", (int)(n - e), de->d_name);
    }
    if (d)
        closedir(d);
    if (r < 0) {
        strv_free(l);
        return r;
    }
    *ret = l;
    return 0;
}

int state_record_list(const char *state_dir, char ***ret) {
    return dir_names(state_dir, "attachments", ".json", ret);
}

bool state_record_from_earlier_boot(const Attachment *a) {
    char boot[STATE_BOOT_ID_LEN];

    /* an unreadable boot id: assume this boot, which keeps things */
    return a->boot_id[0] && state_boot_id(boot, sizeof(boot)) >= 0 && !streq(boot, a->boot_id);
}

/* ---- unit markers ---- */

static int unit_path(const char *state_dir, const char *unit_id, char *buf, size_t n) {
    if (streq(unit_id, "..") || strchr(unit_id, '/'))
        return -EINVAL;
    return sub_path(state_dir, "units", unit_id, "", buf, n);
}

/* owner and boot id of a marker; -ENOENT if there is none, -EBADMSG if it
 * is not a marker (nothing a claim writes). */
static int marker_read(const char *state_dir, const char *unit_id, char *owner, size_t n,
                       char *boot, size_t bn) {
    _cleanup_free_ char *text = NULL;
    char path[4096], *nl, *nl2;
    int r = unit_path(state_dir, unit_id, path, sizeof(path));

    if (r >= 0)
        r = fileio_read_bounded(path, MARKER_MAX, &text, NULL);
    if (r < 0)
        return r == -EFBIG || r == -EBADFD ? -EBADMSG : r;
    nl = strchr(text, '\n');
    if (!nl)
        return -EBADMSG;
    *nl = 0;
    nl2 = strchr(nl + 1, '\n');
    if (!nl2 || nl2[1])
        return -EBADMSG;
    *nl2 = 0;
    if (!key_valid(text) || strlen(text) >= n || strlen(nl + 1) >= bn || !nl[1])
        return -EBADMSG;
    snprintf(owner, n, "%s", text);
    snprintf(boot, bn, "%s", nl + 1);
    return 0;
}

int state_unit_holder(const char *state_dir, const char *unit_id, char *buf, size_t n) {
    char boot[STATE_BOOT_ID_LEN];
    int r = marker_read(state_dir, unit_id, buf, n, boot, sizeof(boot));

    if (r == -EBADMSG && n > 0)
        snprintf(buf, n, "?"); /* a marker nobody could have written */
    return r == -EBADMSG ? 0 : r;
}

bool state_unit_stale(const char *state_dir, const char *unit_id) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    char owner[STATE_KEY_MAX + 1], boot[STATE_BOOT_ID_LEN], now[STATE_BOOT_ID_LEN];
    int r = marker_read(state_dir, unit_id, owner, sizeof(owner), boot, sizeof(boot));

    if (r == -ENOENT)
        return false;
    if (r < 0)
        return r == -EBADMSG; /* empty, partial or foreign: no owner can hold it */
    if (state_boot_id(now, sizeof(now)) >= 0 && !streq(now, boot))
        return true;
    if (lock_held(state_dir, owner))
        return false; /* its ADD or DEL is running */
    r = state_record_load_key(state_dir, owner, &a);
    if (r == -ENOENT)
        return true;
    if (r < 0)
        return false; /* unreadable: keep it, DEL or GC will say why */
    if (state_record_from_earlier_boot(a))
        return true;
    for (size_t i = 0; i < a->n_nics; i++)
        if (streq(a->nics[i].unit, unit_id))
            return false;
    return true;
}

bool state_unit_attached(const char *state_dir, const char *unit_id) {
    char path[4096];

    if (unit_path(state_dir, unit_id, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
        return false;
    return !state_unit_stale(state_dir, unit_id);
}

static int marker_text(const char *owner, char *buf, size_t n) {
    char boot[STATE_BOOT_ID_LEN];
    int r = state_boot_id(boot, sizeof(boot));

    if (r < 0)
        return r;
    return (size_t)snprintf(buf, n, "%s\n%s\n", owner, boot) >= n ? -ENAMETOOLONG : 0;
}

/* a marker of an earlier boot is stale, and so is one a node crash left
 * empty or partial (state_unit_stale()): a marker needs no fsync */
int state_unit_mark(const char *state_dir, const char *unit_id, const char *owner) {
    char path[4096], text[STATE_KEY_MAX + STATE_BOOT_ID_LEN + 4];
    FileioWrite w = {.mode = 0600, .boot_scoped = true};
    int r = key_valid(owner) ? unit_path(state_dir, unit_id, path, sizeof(path)) : -EINVAL;

    if (r >= 0)
        r = marker_text(owner, text, sizeof(text));
    return r < 0 ? r : ENSURING(state_dir, fileio_write_atomic_with(path, text, strlen(text), &w));
}

/*
 * The marker of every unit of one claim: one file, whole before the first
 * link, hidden in units/ (".claim.tmp-XXXXXX", swept like any temp file
 * if a crash leaves it) and linked under each unit's name. A link is a
 * directory entry; a file of its own per unit cost an inode each, most of
 * a millisecond for eight on ext4.
 */
static int ticket_make(const char *state_dir, const char *owner, FileioTemp *t) {
    char path[4096], text[STATE_KEY_MAX + STATE_BOOT_ID_LEN + 4];
    int r = sub_path(state_dir, "units", "claim", "", path, sizeof(path));

    t->fd = -EBADF;
    t->path[0] = 0;
    if (r >= 0)
        r = marker_text(owner, text, sizeof(text));
    if (r >= 0)
        r = ENSURING(state_dir, fileio_temp_open(path, t));
    if (r >= 0) /* mkostemp() made it 0600 */
        r = fileio_write_all(t->fd, text, strlen(text));
    if (r < 0)
        fileio_temp_discard(t);
    return r;
}

static int marker_link(const char *state_dir, const char *unit_id, const FileioTemp *ticket) {
    char path[4096];
    int r = unit_path(state_dir, unit_id, path, sizeof(path));

    /* link() fails with EEXIST on anything at path, a symlink too */
    return r < 0 ? r : link(ticket->path, path) < 0 ? -errno : 0;
}

static int unit_unmark(const char *state_dir, const char *unit_id) {
    char path[4096];
    int r = unit_path(state_dir, unit_id, path, sizeof(path));

    if (r < 0)
        return r;
    /* a marker a node crash brings back is of an earlier boot: stale */
    return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* One unit, the state lock held. 1: claimed now, 0: ours already. */
static int claim_one(const char *state_dir, const char *unit_id, const char *owner,
                     const FileioTemp *ticket, char *holder, size_t n) {
    int r = marker_link(state_dir, unit_id, ticket);

    if (r >= 0)
        return 1;
    if (r != -EEXIST)
        return r;
    r = state_unit_holder(state_dir, unit_id, holder, n);
    if (r == -ENOENT) /* released meanwhile (a DEL does not take the state lock) */
        return claim_one(state_dir, unit_id, owner, ticket, holder, n);
    if (r < 0)
        return r;
    if (streq(holder, owner))
        return 0;
    if (!state_unit_stale(state_dir, unit_id))
        return -EBUSY;
    r = unit_unmark(state_dir, unit_id);
    if (r < 0)
        return r;
    r = marker_link(state_dir, unit_id, ticket);
    if (r == -EEXIST) { /* someone else took it over first */
        r = state_unit_holder(state_dir, unit_id, holder, n);
        return r < 0 ? r : -EBUSY;
    }
    return r < 0 ? r : 1;
}

/* Does a prepared claim still give pod_uid every one of units[0..n)? Else
 * its index: the claim was unprepared (or never prepared) under us. */
static int check_prepared(const char *state_dir, char *const *units, size_t n, const char *pod_uid,
                          size_t *ret_index) {
    _cleanup_(strv_freep) char **held = NULL;
    int r = claims_units_of_pod(state_dir, pod_uid, NULL, &held, NULL, 0);

    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++)
        if (!strv_contains(held, units[i])) {
            *ret_index = i;
            return -ESTALE;
        }
    return 0;
}

/* A claim refused: which unit (n: none of them) and its holder ("" if none). */
static int claim_refused(int r, size_t index, const char *holder, size_t *ret_index,
                         char *ret_holder, size_t holder_len) {
    if (ret_index)
        *ret_index = index;
    if (ret_holder && holder_len)
        snprintf(ret_holder, holder_len, "%s", holder);
    return r;
}

int state_units_claim_prepared(const char *state_dir, char *const *units, size_t n,
                               const char *owner, const char *pod_uid, size_t *ret_index,
                               char *ret_holder, size_t holder_len) {
    _cleanup_close_ int lock = -EBADF;
    _cleanup_free_ bool *mine = calloc(n ? n : 1, sizeof(bool));
    char holder[STATE_KEY_MAX + 1] = "";
    int r = 0;
    size_t i;

    if (!mine)
        return -ENOMEM;
    if (!key_valid(owner))
        return -EINVAL;
    lock = state_lock(state_dir);
    if (lock < 0)
        return lock;
    /* under the lock an unprepare takes too: it either went first (no
     * record: refused here) or sees these markers and waits for the DEL */
    if (pod_uid) {
        size_t bad = 0;
        r = check_prepared(state_dir, units, n, pod_uid, &bad);
        if (r < 0)
            return claim_refused(r, bad, "", ret_index, ret_holder, holder_len);
    }
    if (n == 0)
        return 0;
    FileioTemp ticket;
    r = ticket_make(state_dir, owner, &ticket);
    if (r < 0)
        return claim_refused(r, n, "", ret_index, ret_holder, holder_len);
    for (i = 0; i < n && r >= 0; i++) {
        r = claim_one(state_dir, units[i], owner, &ticket, holder, sizeof(holder));
        mine[i] = r > 0;
    }
    fileio_temp_discard(&ticket); /* the links stay */
    if (r >= 0)
        return 0;
    /* all or none: what this call claimed goes back */
    for (size_t k = 0; k < n; k++)
        if (mine[k])
            (void)unit_unmark(state_dir, units[k]);
    return claim_refused(r, i - 1, r == -EBUSY ? holder : "", ret_index, ret_holder, holder_len);
}

int state_units_claim(const char *state_dir, char *const *units, size_t n, const char *owner,
                      size_t *ret_index, char *ret_holder, size_t holder_len) {
    return state_units_claim_prepared(state_dir, units, n, owner, NULL, ret_index, ret_holder,
                                      holder_len);
}

int state_unit_release(const char *state_dir, const char *unit_id, const char *owner) {
    char holder[STATE_KEY_MAX + 1];
    int r = state_unit_holder(state_dir, unit_id, holder, sizeof(holder));

    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    return streq(holder, owner) ? unit_unmark(state_dir, unit_id) : 0;
}

int state_unit_list(const char *state_dir, char ***ret) {
    return dir_names(state_dir, "units", "", ret);
}

int state_unit_release_owner(const char *state_dir, const char *owner) {
    _cleanup_(strv_freep) char **ids = NULL;
    int r = state_unit_list(state_dir, &ids);

    for (char **id = ids; r >= 0 && *id; id++) {
        int k = state_unit_release(state_dir, *id, owner);
        if (k < 0)
            r = k;
    }
    return r;
}

int state_units_sweep(const char *state_dir) {
    _cleanup_(strv_freep) char **ids = NULL;
    int r = state_unit_list(state_dir, &ids), n = 0;

    for (char **id = ids; r >= 0 && *id; id++)
        if (state_unit_stale(state_dir, *id) && unit_unmark(state_dir, *id) >= 0)
            n++;
    return r < 0 ? r : n;
}

int state_attachment_busy(const char *state_dir, const char *key) {
    int fd = state_attachment_trylock(state_dir, key);

    if (fd == -EWOULDBLOCK)
        return 1;
    if (fd < 0)
        return fd;
    /* the lock file goes as context_unlock_attachment() lets it go */
    state_attachment_unlock(state_dir, key, fd, state_record_present(state_dir, key) == 0);
    return 0;
}

/* A write's temp file (fileio: ".<name>.tmp-XXXXXX") left in dir by a
 * power loss before its rename: a regular file last written before this
 * boot began (boot: then), so no writer of this boot holds it. */
static int temps_sweep_dir(const char *dir, time_t boot) {
    DIR *d = opendir(dir);
    int n = 0;

    if (!d)
        return errno == ENOENT ? 0 : -errno;
    for (struct dirent *de; (de = readdir(d));) {
        const char *t = strstr(de->d_name, ".tmp-");
        struct stat st;
        if (de->d_name[0] != '.' || !t || strlen(t) != strlen(".tmp-XXXXXX") ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            st.st_mtim.tv_sec >= boot)
            continue;
        n += unlinkat(dirfd(d), de->d_name, 0) == 0;
    }
    closedir(d);
    return n;
}

int state_temps_sweep(const char *state_dir) {
    static const char *const subs[] = {"", "attachments", "units", CLAIMS_DIR};
    struct timespec boot = {0};
    int n = 0, r = boot_began(&boot);

    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(subs); i++) {
        char dir[4096];
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", state_dir, subs[i]) >= sizeof(dir))
            return -ENAMETOOLONG;
        r = temps_sweep_dir(dir, boot.tv_sec - STATE_BOOT_SLACK_S);
        n += r > 0 ? r : 0;
    }
    return r < 0 ? r : n;
}

int state_locks_sweep(const char *state_dir) {
    _cleanup_(strv_freep) char **keys = NULL;
    int r = dir_names(state_dir, "locks", ".lock", &keys), n = 0;

    for (char **k = keys; r >= 0 && *k; k++) {
        char path[4096];
        if (!key_valid(*k) ||
            sub_path(state_dir, "attachments", *k, ".json", path, sizeof(path)) < 0 ||
            access(path, F_OK) == 0 || errno != ENOENT)
            continue;
        int fd = state_attachment_trylock(state_dir, *k);
        if (fd < 0)
            continue;
        /* under its lock: no ADD can be writing the record now */
        bool gone = access(path, F_OK) < 0 && errno == ENOENT;
        state_attachment_unlock(state_dir, *k, fd, gone);
        n += gone;
    }
    return r < 0 ? r : n;
}
