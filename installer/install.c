/* SPDX-License-Identifier: Apache-2.0 */
/* The library behind railgate-cni-install: render, install, uninstall and check. */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agentproto.h"
#include "cni.h"
#include "config.h"
#include "fileio.h"
#include "install.h"
#include "inventory.h"
#include "state.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

static void strv_freep(char ***p) {
    if (*p)
        for (char **s = *p; *s; s++)
            free(*s);
    free(*p);
}

/* The directory part of path (malloc'd); "." for a bare name. */
static char *dir_of(const char *path) {
    _cleanup_free_ char *copy = strdup(path);

    return copy ? strdup(dirname(copy)) : NULL;
}

static const char *base_of(const char *path) {
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);

    return a >= b && streq(s + a - b, suffix);
}

/* fileio's -errno as the installer's error, naming path. */
static int io_error(RgError *err, int r, const char *path, const char *what) {
    if (r == -EBADFD)
        return rg_error(err, -EINVAL, 0, "%s: not a regular file", path);
    if (r == -EFBIG)
        return rg_error(err, r, 0, "%s: too large", path);
    return rg_error(err, r, 0, "%s: %s%s%s", path, what, *what ? ": " : "", strerror(-r));
}

/* A regular file of at most max bytes, NUL-terminated (malloc'd); a
 * symlink is followed (ConfigMap mounts are made of them). */
static int read_small(const char *path, size_t max, char **ret, size_t *ret_len, RgError *err) {
    int r = fileio_read_file(path, max, ret, ret_len);

    return r < 0 ? io_error(err, r, path, "") : 0;
}

int install_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                         const InstallOwner *owner, RgError *err) {
    FileioWrite w = {.mode = mode};
    int r;

    if (owner)
        w = (FileioWrite){.mode = mode, .chown = true, .uid = owner->uid, .gid = owner->gid};
    r = fileio_write_atomic_with(path, data, len, &w);
    return r < 0 ? io_error(err, r, path, "cannot write it atomically") : 0;
}

/* Does path hold exactly data, with mode? */
static bool same_content(const char *path, const void *data, size_t len, mode_t mode) {
    _cleanup_free_ char *old = NULL;
    size_t old_len = 0;
    struct stat st;

    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != mode ||
        (size_t)st.st_size != len)
        return false;
    if (read_small(path, len, &old, &old_len, NULL) < 0)
        return false;
    return old_len == len && memcmp(old, data, len) == 0;
}

/* ---- files and dirs ----------------------------------------------------- */

/* Are the open file a and the file at path b byte-identical, b with mode? */
static bool same_file(int a, const struct stat *sa, const char *b, mode_t mode) {
    _cleanup_close_ int fb = open(b, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    char x[65536], y[65536];
    struct stat sb;

    if (fb < 0 || fstat(fb, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size != sa->st_size ||
        (sb.st_mode & 07777) != mode)
        return false;
    for (off_t off = 0; off < sa->st_size;) {
        ssize_t k = pread(a, x, sizeof(x), off);
        if (k <= 0)
            return false;
        ssize_t m = pread(fb, y, (size_t)k, off);
        if (m != k || memcmp(x, y, (size_t)k) != 0)
            return false;
        off += k;
    }
    return true;
}

int install_copy_file(const char *src, const char *dir, const char *name, mode_t mode,
                      bool *changed, RgError *err) {
    _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    _cleanup_free_ char *dst = NULL;
    _cleanup_(fileio_temp_discard) FileioTemp t = {.fd = -EBADF};
    struct stat st;
    char buf[65536];
    int r;

    if (changed)
        *changed = false;
    if (in < 0 || fstat(in, &st) < 0)
        return rg_error(err, negative_errno(), 0, "%s: %s", src, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return rg_error(err, -EINVAL, 0, "%s: not a regular file", src);
    if (strchr(name, '/') || streq(name, ".") || streq(name, ".."))
        return rg_error(err, -EINVAL, 0, "%s: not a file name", name);
    if (asprintf(&dst, "%s/%s", dir, name) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
    if (same_file(in, &st, dst, mode))
        return 0;
    r = fileio_temp_open(dst, &t);
    if (r < 0)
        return io_error(err, r, dir, "cannot create a temp file");
    for (off_t off = 0;;) {
        ssize_t k = pread(in, buf, sizeof(buf), off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return rg_error(err, negative_errno(), 0, "%s: read: %s", src, strerror(errno));
        if (k == 0)
            break;
        r = fileio_write_all(t.fd, buf, (size_t)k);
        if (r < 0)
            return io_error(err, r, t.path, "write");
        off += k;
    }
    r = fileio_temp_commit(&t, dst, &(FileioWrite){.mode = mode});
    if (r < 0)
        return io_error(err, r, dst, "cannot install it");
    if (changed)
        *changed = true;
    return 0;
}

static int mkdir_p(const char *path, mode_t mode, RgError *err) {
    int r = fileio_mkdir_p(path, mode);

    if (r == -ENOTDIR)
        return rg_error(err, r, 0, "%s: not a directory", path);
    return r < 0 ? io_error(err, r, path, "cannot create it") : 0;
}

int install_copy_dir(const char *src_dir, const char *dst_dir, mode_t mode, unsigned *n_changed,
                     RgError *err) {
    _cleanup_(closedirp) DIR *d = NULL;
    _cleanup_free_ char *marker = NULL;
    struct dirent *de;
    bool changed;
    int r;

    if (n_changed)
        *n_changed = 0;
    d = opendir(src_dir);
    if (!d)
        return rg_error(err, negative_errno(), 0, "%s: %s", src_dir, strerror(errno));
    r = mkdir_p(dst_dir, 0755, err);
    if (r < 0)
        return r;
    /* the marker first: a half-done copy can still be removed by uninstall */
    if (asprintf(&marker, "%s/%s", dst_dir, INSTALL_LIB_MARKER) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", dst_dir);
    static const char note[] = "railgate-cni-install owns this directory\n";
    if (!same_content(marker, note, sizeof(note) - 1, 0644)) {
        r = install_write_atomic(marker, note, sizeof(note) - 1, 0644, NULL, err);
        if (r < 0)
            return r;
    }
    while ((errno = 0, de = readdir(d))) {
        _cleanup_free_ char *src = NULL;
        struct stat st;

        if (de->d_name[0] == '.')
            continue;
        if (asprintf(&src, "%s/%s", src_dir, de->d_name) < 0)
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", src_dir);
        if (stat(src, &st) < 0)
            return rg_error(err, negative_errno(), 0, "%s: %s", src, strerror(errno));
        if (!S_ISREG(st.st_mode))
            continue;
        r = install_copy_file(src, dst_dir, de->d_name, mode, &changed, err);
        if (r < 0)
            return r;
        if (changed && n_changed)
            (*n_changed)++;
    }
    if (errno)
        return rg_error(err, negative_errno(), 0, "%s: %s", src_dir, strerror(errno));
    return 0;
}

int install_remove_file(const char *path, bool *changed, RgError *err) {
    int r;

    if (changed)
        *changed = false;
    if (unlink(path) < 0) {
        if (errno == ENOENT)
            return 0;
        return rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", path, strerror(errno));
    }
    if (changed)
        *changed = true;
    r = fileio_sync_parent(path);
    return r < 0 ? io_error(err, r, path, "fsync of its directory") : 0;
}

/* Unlink every entry of dir but keep (NULL: none). Without AT_REMOVEDIR: a
 * symlink goes, never what it names; a subdirectory is an error. */
static int unlink_entries(const char *dir, const char *keep, RgError *err) {
    _cleanup_(closedirp) DIR *d = opendir(dir);
    struct dirent *de;

    if (!d)
        return rg_error(err, negative_errno(), 0, "%s: %s", dir, strerror(errno));
    while ((errno = 0, de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, "..") || (keep && streq(de->d_name, keep)))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) < 0)
            return rg_error(err, negative_errno(), 0, "%s/%s: cannot remove: %s", dir, de->d_name,
                            strerror(errno));
    }
    if (errno)
        return rg_error(err, negative_errno(), 0, "%s: %s", dir, strerror(errno));
    return 0;
}

int install_remove_dir(const char *dir, bool *changed, RgError *err) {
    _cleanup_free_ char *marker = NULL;
    struct stat st;
    int r;

    if (changed)
        *changed = false;
    if (asprintf(&marker, "%s/%s", dir, INSTALL_LIB_MARKER) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
    if (lstat(dir, &st) < 0 && errno == ENOENT)
        return 0;
    if (lstat(marker, &st) < 0)
        return rg_error(err, -EPERM, 0,
                        "%s: no %s in it: not a directory railgate-cni-install filled, left alone",
                        dir, INSTALL_LIB_MARKER);
    r = unlink_entries(dir, INSTALL_LIB_MARKER, err);
    if (r < 0)
        return r;
    if (unlink(marker) < 0)
        return rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", marker, strerror(errno));
    /* a mount point (a hostPath volume of exactly this dir) stays, empty */
    if (rmdir(dir) < 0 && errno != EBUSY)
        return rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", dir, strerror(errno));
    if (changed)
        *changed = true;
    return 0;
}

/* ---- the state dir ------------------------------------------------------ */

/* Unlink every entry of state_dir/sub (files railgate wrote), then the dir. */
static int remove_state_sub(const char *state_dir, const char *sub, RgError *err) {
    _cleanup_free_ char *path = NULL;
    struct stat st;
    int r;

    if (asprintf(&path, "%s/%s", state_dir, sub) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", state_dir);
    if (lstat(path, &st) < 0 && errno == ENOENT)
        return 0;
    r = unlink_entries(path, NULL, err);
    if (r < 0)
        return r;
    if (rmdir(path) < 0)
        return rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", path, strerror(errno));
    return 0;
}

/* The first entry of dir other than . and ..; NULL if none (or unreadable). */
static char *first_entry(const char *dir) {
    _cleanup_(closedirp) DIR *d = opendir(dir);
    struct dirent *de;

    while (d && (de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
            return strdup(de->d_name);
    return NULL;
}

/* The node agent's socket when nobody serves it any more (an agent killed
 * before it could remove it); one that answers stays, and keeps the dir. */
static int remove_stale_agent_socket(const char *state_dir, RgError *err) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    _cleanup_close_ int fd = -EBADF;
    struct stat st;

    if (agent_socket_path(state_dir, sa.sun_path, sizeof(sa.sun_path)) < 0 ||
        lstat(sa.sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return 0;
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != ECONNREFUSED)
        return 0;
    if (unlink(sa.sun_path) < 0 && errno != ENOENT)
        return rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", sa.sun_path,
                        strerror(errno));
    return 0;
}

int install_remove_state(const char *state_dir, bool *changed, char **kept, RgError *err) {
    static const char *const subs[] = {"attachments", "units", "locks"};
    _cleanup_(strv_freep) char **keys = NULL;
    _cleanup_free_ char *lock = NULL, *inventory = NULL, *held = NULL;
    size_t n_held = 0;
    struct stat st;
    int fd, r = 0;

    if (changed)
        *changed = false;
    if (kept)
        *kept = NULL;
    if (lstat(state_dir, &st) < 0)
        return errno == ENOENT
                   ? 0
                   : rg_error(err, negative_errno(), 0, "%s: %s", state_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return rg_error(err, -ENOTDIR, 0, "%s: not a directory, left alone", state_dir);
    if (asprintf(&lock, "%s/lock", state_dir) < 0 ||
        asprintf(&inventory, "%s/" INVENTORY_FILE, state_dir) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", state_dir);
    /* no ADD claims units while we look, and none starts after: the
     * config entry and the binary are gone before this runs */
    fd = state_lock(state_dir);
    if (fd < 0)
        return rg_error(err, fd, 0, "%s: cannot take the state lock: %s", lock, strerror(-fd));
    r = state_record_list(state_dir, &keys);
    if (r < 0) {
        r = rg_error(err, r, 0, "%s/attachments: %s", state_dir, strerror(-r));
        goto out;
    }
    for (char **k = keys; *k; k++) {
        Attachment *a = NULL;
        int l = state_record_load_key(state_dir, *k, &a);
        /* of an earlier boot, or torn by a node crash (so of one too) */
        bool earlier = l == 0 ? state_record_from_earlier_boot(a)
                              : l == -EBADMSG && state_record_torn(state_dir, *k);

        attachment_free(a);
        if (earlier)
            continue;
        if (n_held++ == 0)
            held = strdup(*k);
    }
    if (n_held) {
        r = rg_error(err, -EBUSY, 0,
                     "%s: %zu attachment record(s) of this boot (%s%s): their NICs are in pods; "
                     "delete the pods that hold railgate units, then uninstall again "
                     "(the state dir is left as it is)",
                     state_dir, n_held, held ? held : "?", n_held > 1 ? ", ..." : "");
        goto out;
    }
    for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
        r = remove_state_sub(state_dir, subs[i], err);
        if (r < 0)
            goto out;
    }
    /* the device plugin's published inventory and a socket of its left
     * behind, then the lock we hold */
    r = remove_stale_agent_socket(state_dir, err);
    if (r < 0)
        goto out;
    if (unlink(inventory) < 0 && errno != ENOENT) {
        r = rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", inventory, strerror(errno));
        goto out;
    }
    if (unlink(lock) < 0 && errno != ENOENT) {
        r = rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", lock, strerror(errno));
        goto out;
    }
    if (changed)
        *changed = true;
    if (rmdir(state_dir) < 0 && errno != EBUSY) {
        if (errno != ENOTEMPTY && errno != EEXIST) {
            r = rg_error(err, negative_errno(), 0, "%s: cannot remove: %s", state_dir,
                         strerror(errno));
            goto out;
        }
        if (kept)
            *kept = first_entry(state_dir);
    }
out:
    close(fd);
    return r;
}

/* ---- the network config ------------------------------------------------- */

static bool is_config_name(const char *name) {
    return has_suffix(name, ".conf") || has_suffix(name, ".conflist") || has_suffix(name, ".json");
}

/* Sorted names of the non-directory entries of dir ending in one of the
 * config suffixes (only_conflist: ".conflist"), NULL-terminated. */
static int list_configs(const char *dir, bool only_conflist, char ***ret, RgError *err) {
    _cleanup_(closedirp) DIR *d = opendir(dir);
    _cleanup_(strv_freep) char **names = NULL;
    size_t n = 0;
    struct dirent *de;

    if (!d)
        return rg_error(err, negative_errno(), 0, "%s: %s", dir, strerror(errno));
    names = calloc(1, sizeof(char *));
    if (!names)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
    while ((errno = 0, de = readdir(d))) {
        struct stat st;

        if (only_conflist ? !has_suffix(de->d_name, ".conflist") : !is_config_name(de->d_name))
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || S_ISDIR(st.st_mode))
            continue;
        char **m = realloc(names, (n + 2) * sizeof(char *));
        if (!m)
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
        names = m;
        names[n] = strdup(de->d_name);
        names[++n] = NULL;
        if (!names[n - 1])
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
    }
    if (errno)
        return rg_error(err, negative_errno(), 0, "%s: %s", dir, strerror(errno));
    /* libcni sorts the names byte-wise (Go's sort.Strings) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    *ret = TAKE_PTR(names);
    return 0;
}

int install_primary_config(const char *conf_dir, char **ret, RgError *err) {
    _cleanup_(strv_freep) char **names = NULL;
    int r;

    r = list_configs(conf_dir, false, &names, err);
    if (r < 0)
        return r;
    if (!names[0])
        return rg_error(err, -ENOENT, 0,
                        "%s: no network config (*.conf, *.conflist, *.json): is the node's primary "
                        "CNI plugin installed?",
                        conf_dir);
    if (asprintf(ret, "%s/%s", conf_dir, names[0]) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", conf_dir);
    return 0;
}

/* Parse a network config file strictly; *ret_st (if given) is its stat. */
static int load_conf(const char *path, json_t **ret, struct stat *ret_st, RgError *err) {
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    json_error_t je;
    json_t *root;
    int r;

    r = read_small(path, INSTALL_MAX_CONF_SIZE, &text, &len, err);
    if (r < 0)
        return r;
    if (ret_st && stat(path, ret_st) < 0)
        return rg_error(err, negative_errno(), 0, "%s: %s", path, strerror(errno));
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rg_error(err, -EINVAL, 0, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return rg_error(err, -EINVAL, 0, "%s: not a JSON object", path);
    }
    *ret = root;
    return 0;
}

/* The cniVersion of a config, checked against what railgate speaks. */
static int check_version(const char *path, json_t *root, RgError *err) {
    json_t *v = json_object_get(root, "cniVersion");

    if (!json_is_string(v))
        return rg_error(err, -EINVAL, 0, "%s: no \"cniVersion\" string", path);
    if (!cni_version_supported(json_string_value(v)))
        return rg_error(
            err, -EINVAL, 0,
            "%s: cniVersion \"%s\": railgate speaks 0.4.0, 1.0.0 and 1.1.0; chaining it "
            "here would fail every pod of the node",
            path, json_string_value(v));
    return 0;
}

/* The "plugins" array of a conflist, each entry an object with a "type". */
static int conflist_plugins(const char *path, json_t *root, json_t **ret, RgError *err) {
    json_t *plugins = json_object_get(root, "plugins"), *p;
    size_t i;

    if (!json_is_array(plugins))
        return rg_error(err, -EINVAL, 0,
                        "%s: no \"plugins\" array: not a CNI network configuration list", path);
    json_array_foreach(plugins, i, p) {
        if (!json_is_object(p))
            return rg_error(err, -EINVAL, 0, "%s: plugins[%zu]: not an object", path, i);
        if (!json_is_string(json_object_get(p, "type")))
            return rg_error(err, -EINVAL, 0, "%s: plugins[%zu]: no \"type\" string", path, i);
    }
    *ret = plugins;
    return 0;
}

static bool is_ours(json_t *plugin) {
    return streq_ptr(json_string_value(json_object_get(plugin, "type")), INSTALL_PLUGIN_TYPE);
}

/* Dump root as the file's new text: 2-space indent, key order kept, final newline. */
static int write_conf(const char *path, json_t *root, const struct stat *st, RgError *err) {
    _cleanup_free_ char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    _cleanup_free_ char *out = NULL;
    InstallOwner owner = {st->st_uid, st->st_gid};

    if (!text || asprintf(&out, "%s\n", text) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    return install_write_atomic(path, out, strlen(out), st->st_mode & 07777, &owner, err);
}

static json_t *railgate_entry(void) {
    return json_pack("{s:s}", "type", INSTALL_PLUGIN_TYPE);
}

/* A single-plugin config as a conflist: cniVersion and name on top, the rest
 * of the keys (in order) as plugins[0], railgate as plugins[1]. */
static int convert(const char *path, json_t *root, const struct stat *st, char **ret_path,
                   RgError *err) {
    json_auto_t *list = NULL;
    json_auto_t *plugin = json_object();
    json_auto_t *plugins = json_array();
    _cleanup_free_ char *dst = NULL;
    const char *key, *dot = strrchr(base_of(path), '.');
    json_t *v;
    struct stat ignored;
    int r;

    if (!json_is_string(json_object_get(root, "type")))
        return rg_error(err, -EINVAL, 0, "%s: no \"type\" string: not a CNI network configuration",
                        path);
    if (json_object_get(root, "plugins"))
        return rg_error(err, -EINVAL, 0,
                        "%s: has \"plugins\" but is not named .conflist: runtimes read it as a "
                        "single plugin; rename it",
                        path);
    r = check_version(path, root, err);
    if (r < 0)
        return r;
    if (!plugin || !plugins)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    json_object_foreach(root, key, v) {
        if (!streq(key, "cniVersion") && !streq(key, "name") && json_object_set(plugin, key, v) < 0)
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    }
    if (json_array_append(plugins, plugin) < 0 ||
        json_array_append_new(plugins, railgate_entry()) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    list = json_pack("{s:O, s:O?, s:O}", "cniVersion", json_object_get(root, "cniVersion"), "name",
                     json_object_get(root, "name"), "plugins", plugins);
    if (!list)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    if (json_is_null(json_object_get(list, "name")))
        json_object_del(list, "name");
    if (asprintf(&dst, "%.*s.conflist", dot ? (int)(dot - path) : (int)strlen(path), path) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    if (lstat(dst, &ignored) == 0)
        return rg_error(err, -EEXIST, 0, "%s: cannot convert %s: the file exists", dst, path);
    r = write_conf(dst, list, st, err);
    if (r < 0)
        return r;
    /* the .conflist is in place; the .conf would still sort before it */
    r = install_remove_file(path, NULL, err);
    if (r < 0)
        return r;
    if (ret_path)
        *ret_path = TAKE_PTR(dst);
    return 0;
}

int install_conflist_add(const char *path, bool convert_single, bool *changed, char **ret_path,
                         RgError *err) {
    json_auto_t *root = NULL;
    json_t *plugins, *p;
    struct stat st;
    size_t i;
    int r;

    if (changed)
        *changed = false;
    r = load_conf(path, &root, &st, err);
    if (r < 0)
        return r;
    if (!has_suffix(path, ".conflist")) {
        if (!convert_single)
            return rg_error(
                err, -EINVAL, 0,
                "%s: a single-plugin network config, not a .conflist: railgate can only "
                "be chained in a list (pass --convert to turn it into one)",
                path);
        r = convert(path, root, &st, ret_path, err);
        if (r >= 0 && changed)
            *changed = true;
        return r;
    }
    r = conflist_plugins(path, root, &plugins, err);
    if (r < 0)
        return r;
    json_array_foreach(plugins, i, p) {
        if (is_ours(p))
            goto done; /* there already: the file stays as it is */
    }
    r = check_version(path, root, err);
    if (r < 0)
        return r;
    if (json_array_append_new(plugins, railgate_entry()) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    r = write_conf(path, root, &st, err);
    if (r < 0)
        return r;
    if (changed)
        *changed = true;
done:
    if (ret_path && !(*ret_path = strdup(path)))
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", path);
    return 0;
}

int install_conflist_remove(const char *path, bool *changed, RgError *err) {
    json_auto_t *root = NULL;
    json_t *plugins;
    struct stat st;
    size_t removed = 0;
    int r;

    if (changed)
        *changed = false;
    r = load_conf(path, &root, &st, err);
    if (r < 0)
        return r;
    r = conflist_plugins(path, root, &plugins, err);
    if (r < 0)
        return r;
    for (size_t i = json_array_size(plugins); i-- > 0;)
        if (is_ours(json_array_get(plugins, i))) {
            json_array_remove(plugins, i);
            removed++;
        }
    if (removed == 0)
        return 0;
    if (json_array_size(plugins) == 0)
        return rg_error(err, -EINVAL, 0,
                        "%s: railgate is its only plugin; removing it would leave an empty list "
                        "(remove the file instead)",
                        path);
    r = write_conf(path, root, &st, err);
    if (r < 0)
        return r;
    if (changed)
        *changed = true;
    return 0;
}

int install_conflist_remove_dir(const char *conf_dir, unsigned *n_changed, RgError *err) {
    _cleanup_(strv_freep) char **names = NULL;
    RgError first = {0};
    int ret = 0, r;

    if (n_changed)
        *n_changed = 0;
    r = list_configs(conf_dir, true, &names, err);
    if (r < 0)
        return r;
    for (char **n = names; *n; n++) {
        _cleanup_free_ char *path = NULL;
        RgError e = {0};
        bool changed;

        if (asprintf(&path, "%s/%s", conf_dir, *n) < 0)
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", conf_dir);
        r = install_conflist_remove(path, &changed, &e);
        if (r < 0 && ret == 0) {
            ret = r;
            first = e;
        }
        if (r >= 0 && changed && n_changed)
            (*n_changed)++;
    }
    if (ret < 0 && err)
        *err = first;
    return ret;
}

/* ---- the node config ---------------------------------------------------- */

/* A node name as a ConfigMap key: [-._a-zA-Z0-9]{1,253}, not "." or "..". */
static bool valid_key(const char *s) {
    size_t n = strlen(s);

    if (n == 0 || n > 253 || streq(s, ".") || streq(s, ".."))
        return false;
    for (; *s; s++)
        if (!strchr("-._", *s) && !(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
            !(*s >= '0' && *s <= '9'))
            return false;
    return true;
}

int install_render(const char *dir, const char *node, const char *out, bool *changed,
                   char **ret_key, RgError *err) {
    _cleanup_(config_freep) NodeConfig *cfg = NULL;
    _cleanup_free_ char *src = NULL, *text = NULL, *out_dir = NULL;
    const char *key = node;
    size_t len = 0;
    struct stat st;
    int r;

    if (changed)
        *changed = false;
    if (!node || !valid_key(node))
        return rg_error(err, -EINVAL, 0, "node name \"%s\": not a ConfigMap key", node ? node : "");
    if (asprintf(&src, "%s/%s", dir, node) < 0)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
    if (stat(src, &st) < 0 && errno == ENOENT) {
        free(src);
        key = "default";
        if (asprintf(&src, "%s/%s", dir, key) < 0)
            return rg_error(err, -ENOMEM, 0, "%s: out of memory", dir);
        if (stat(src, &st) < 0 && errno == ENOENT)
            return rg_error(err, -ENOENT, 0,
                            "%s: neither a key \"%s\" nor a key \"default\": this node has no "
                            "railgate config",
                            dir, node);
    }
    r = read_small(src, CONFIG_MAX_FILE_SIZE, &text, &len, err);
    if (r < 0)
        return r;
    if (strlen(text) != len)
        return rg_error(err, -EINVAL, 0, "%s: contains a NUL byte", src);
    r = config_parse(text, src, &cfg, err);
    if (r < 0)
        return r;
    out_dir = dir_of(out);
    if (!out_dir)
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", out);
    r = mkdir_p(out_dir, 0755, err);
    if (r < 0)
        return r;
    if (!same_content(out, text, len, 0644)) {
        r = install_write_atomic(out, text, len, 0644, NULL, err);
        if (r < 0)
            return r;
        if (changed)
            *changed = true;
    }
    if (ret_key && !(*ret_key = strdup(key)))
        return rg_error(err, -ENOMEM, 0, "%s: out of memory", src);
    return 0;
}

int install_check_config(const char *path, RgError *err) {
    _cleanup_(config_freep) NodeConfig *cfg = NULL;

    return config_load(path, &cfg, err);
}
