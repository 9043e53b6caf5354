/* SPDX-License-Identifier: Apache-2.0 */
/* railgate-cni-install's library: conflist edits, binary copy, node config render, state
 * removal. No root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "boottime.h"
#include "attachment.h"
#include "fileio.h"
#include "install.h"
#include "state.h"

static char tmp[256];

static const char CONFLIST[] =
    "{\n"
    "\t\"cniVersion\": \"1.0.0\",\n"
    "\t\"name\": \"pods\",\n"
    "\t\"plugins\": [\n"
    "\t{\"type\": \"ptp\", \"ipMasq\": false, \"mtu\": 1500,\n"
    "\t \"ipam\": {\"type\": \"host-local\", \"dataDir\": \"/run/ipam\",\n"
    "\t  \"ranges\": [[{\"subnet\": \"10.244.1.0/24\"}]]}},\n"
    "\t{\"type\": \"portmap\", \"capabilities\": {\"portMappings\": true}}\n"
    "\t],\n"
    "\t\"disableCheck\": false, \"x-weight\": 0.25\n"
    "}\n";

/* ---- helpers ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static int setup(void **state) {
    const char *t = getenv("TMPDIR");

    snprintf(tmp, sizeof(tmp), "%s/railgate-cni-install-XXXXXX", t && t[0] ? t : "/tmp");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
    return nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh empty dir tmp/<name>; its path in buf. */
static char *subdir(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", tmp, name);
    assert_int_equal(mkdir(buf, 0755), 0);
    return buf;
}

static void write_file(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    size_t n = 0;

    assert_non_null(f);
    assert_int_equal(getdelim(&buf, &n, '\0', f) >= 0 || feof(f), 1);
    fclose(f);
    return buf ? buf : strdup("");
}

static json_t *read_json(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

    if (!j)
        fail_msg("%s:%d: %s", path, je.line, je.text);
    return j;
}

/* No temp file of an atomic write is left behind in dir. */
static void assert_no_temp(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;

    assert_non_null(d);
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".tmp-"))
            fail_msg("temp file left: %s/%s", dir, de->d_name);
    closedir(d);
}

static void assert_contains(const char *s, const char *part) {
    if (!strstr(s, part))
        fail_msg("\"%s\" does not contain \"%s\"", s, part);
}

static size_t count_type(json_t *list, const char *type) {
    json_t *p;
    size_t i, n = 0;

    json_array_foreach(json_object_get(list, "plugins"), i, p) {
        if (streq_ptr(json_string_value(json_object_get(p, "type")), type))
            n++;
    }
    return n;
}

/* ---- the conflist ---- */

static void test_add_appends_last_and_keeps_the_rest(void **state) {
    char dir[300], path[340];
    char *holder = NULL;
    RgError err = {0};
    bool changed = false;
    struct stat st;

    subdir(dir, sizeof(dir), "add");
    snprintf(path, sizeof(path), "%s/10-pods.conflist", dir);
    write_file(path, CONFLIST, 0640);
    json_t *before = read_json(path);

    assert_int_equal(install_conflist_add(path, false, &changed, &holder, &err), 0);
    assert_true(changed);
    assert_string_equal(holder, path);
    json_t *after = read_json(path), *plugins = json_object_get(after, "plugins");
    assert_int_equal(json_array_size(plugins), 3);
    json_t *entry = json_pack("{s:s}", "type", "railgate");
    assert_true(json_equal(json_array_get(plugins, 2), entry));
    json_decref(entry);
    /* the rest, key by key: without the new entry, the document is what it was */
    json_array_remove(plugins, 2);
    assert_true(json_equal(before, after));
    /* and key order is kept */
    const char *first = json_object_iter_key(json_object_iter(after));
    assert_string_equal(first, "cniVersion");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_no_temp(dir);
    json_decref(before);
    json_decref(after);
    free(holder);
}

static void test_second_add_leaves_the_file_untouched(void **state) {
    char dir[300], path[340];
    RgError err = {0};
    bool changed = true;
    struct stat a, b;

    subdir(dir, sizeof(dir), "idem");
    snprintf(path, sizeof(path), "%s/10-pods.conflist", dir);
    write_file(path, CONFLIST, 0644);
    assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), 0);
    assert_true(changed);
    char *once = read_text(path);
    assert_int_equal(stat(path, &a), 0);

    assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), 0);
    assert_false(changed);
    char *twice = read_text(path);
    assert_int_equal(stat(path, &b), 0);
    assert_string_equal(once, twice);     /* byte-identical */
    assert_int_equal(a.st_ino, b.st_ino); /* not even rewritten */
    assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
    json_t *j = read_json(path);
    assert_int_equal(count_type(j, "railgate"), 1);
    json_decref(j);
    free(once);
    free(twice);
}

static void test_add_keeps_an_entry_anywhere_in_the_list(void **state) {
    char dir[300], path[340];
    RgError err = {0};
    bool changed = true;

    subdir(dir, sizeof(dir), "present");
    snprintf(path, sizeof(path), "%s/10-pods.conflist", dir);
    write_file(path,
               "{\"cniVersion\": \"0.4.0\", \"name\": \"n\", \"plugins\": "
               "[{\"type\": \"railgate\", \"ipam\": {}}, {\"type\": \"ptp\"}]}",
               0644);
    char *before = read_text(path);
    assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), 0);
    assert_false(changed);
    char *after = read_text(path);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_uninstall_removes_the_entry(void **state) {
    char dir[300], path[340];
    RgError err = {0};
    bool changed = false;

    subdir(dir, sizeof(dir), "uninstall");
    snprintf(path, sizeof(path), "%s/10-pods.conflist", dir);
    write_file(path, CONFLIST, 0600);
    json_t *original = read_json(path);
    assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), 0);
    assert_int_equal(install_conflist_remove(path, &changed, &err), 0);
    assert_true(changed);
    json_t *j = read_json(path);
    assert_true(json_equal(original, j));
    assert_int_equal(count_type(j, "railgate"), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_no_temp(dir);
    json_decref(original);
    json_decref(j);
}

static void test_uninstall_when_absent_changes_nothing(void **state) {
    char dir[300], path[340], other[340];
    RgError err = {0};
    bool changed = true;
    unsigned n = 9;
    struct stat a, b;

    subdir(dir, sizeof(dir), "absent");
    snprintf(path, sizeof(path), "%s/10-pods.conflist", dir);
    write_file(path, CONFLIST, 0644);
    assert_int_equal(stat(path, &a), 0);
    assert_int_equal(install_conflist_remove(path, &changed, &err), 0);
    assert_false(changed);
    assert_int_equal(install_conflist_remove_dir(dir, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(stat(path, &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);
    char *text = read_text(path);
    assert_string_equal(text, CONFLIST);
    free(text);

    /* the dir form takes the entry out of every conflist that has one, and only those */
    snprintf(other, sizeof(other), "%s/20-more.conflist", dir);
    write_file(other,
               "{\"cniVersion\": \"1.1.0\", \"name\": \"m\", \"plugins\": "
               "[{\"type\": \"bridge\"}, {\"type\": \"railgate\"}]}",
               0644);
    assert_int_equal(install_conflist_remove_dir(dir, &n, &err), 0);
    assert_int_equal(n, 1);
    json_t *j = read_json(other);
    assert_int_equal(count_type(j, "railgate"), 0);
    assert_int_equal(count_type(j, "bridge"), 1);
    json_decref(j);
    assert_int_equal(stat(path, &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);
}

static void test_malformed_conflist_is_refused(void **state) {
    static const struct {
        const char *text, *reason;
    } cases[] = {
        {"{\"cniVersion\": \"1.0.0\", \"plugins\": [\n{\"type\": \"ptp\",}]}", ":2:"},
        {"{\"cniVersion\": \"1.0.0\", \"name\": \"a\", \"name\": \"b\", \"plugins\": []}",
         "duplicate"},
        {"[1, 2]", "not a JSON object"},
        {"{\"cniVersion\": \"1.0.0\", \"name\": \"n\", \"plugins\": {}}", "no \"plugins\" array"},
        {"{\"cniVersion\": \"1.0.0\", \"name\": \"n\"}", "no \"plugins\" array"},
        {"{\"cniVersion\": \"1.0.0\", \"plugins\": [{\"type\": \"ptp\"}, 3]}",
         "plugins[1]: not an object"},
        {"{\"cniVersion\": \"1.0.0\", \"plugins\": [{\"ipam\": {}}]}",
         "plugins[0]: no \"type\" string"},
        {"{\"cniVersion\": \"0.3.1\", \"plugins\": [{\"type\": \"ptp\"}]}",
         "cniVersion \"0.3.1\": railgate speaks"},
        {"{\"plugins\": [{\"type\": \"ptp\"}]}", "no \"cniVersion\" string"},
    };
    char dir[300], path[340];

    subdir(dir, sizeof(dir), "malformed");
    snprintf(path, sizeof(path), "%s/10-bad.conflist", dir);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        RgError err = {0};
        bool changed = true;

        write_file(path, cases[i].text, 0644);
        assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), -EINVAL);
        assert_false(changed);
        assert_contains(err.msg, path); /* names the file */
        assert_contains(err.msg, cases[i].reason);
        char *text = read_text(path);
        assert_string_equal(text, cases[i].text); /* untouched */
        free(text);
        assert_no_temp(dir);
    }
    /* uninstall does not take a broken file for an empty one either */
    RgError err = {0};
    write_file(path, "{\"plugins\": [", 0644);
    assert_int_equal(install_conflist_remove(path, NULL, &err), -EINVAL);
    assert_contains(err.msg, path);
    /* a missing file: the reason is the errno */
    snprintf(path, sizeof(path), "%s/missing.conflist", dir);
    assert_int_equal(install_conflist_add(path, false, NULL, NULL, &err), -ENOENT);
    assert_contains(err.msg, "missing.conflist: No such file or directory");
}

static void test_single_conf_needs_convert(void **state) {
    static const char CONF[] = "{\"cniVersion\": \"1.0.0\", \"name\": \"br\", \"type\": \"bridge\","
                               " \"bridge\": \"cni0\", \"ipam\": {\"type\": \"host-local\"}}\n";
    char dir[300], path[340], list[340];
    char *holder = NULL;
    RgError err = {0};
    bool changed = true;

    subdir(dir, sizeof(dir), "conf");
    snprintf(path, sizeof(path), "%s/10-bridge.conf", dir);
    snprintf(list, sizeof(list), "%s/10-bridge.conflist", dir);
    write_file(path, CONF, 0644);
    assert_int_equal(install_conflist_add(path, false, &changed, NULL, &err), -EINVAL);
    assert_false(changed);
    assert_contains(err.msg, path);
    assert_contains(err.msg, "--convert");
    char *text = read_text(path);
    assert_string_equal(text, CONF);
    free(text);
    assert_int_equal(access(list, F_OK), -1);

    assert_int_equal(install_conflist_add(path, true, &changed, &holder, &err), 0);
    assert_true(changed);
    assert_string_equal(holder, list);
    assert_int_equal(access(path, F_OK), -1); /* it would sort before the .conflist */
    json_t *j = read_json(list);
    json_t *want = json_loads("{\"cniVersion\": \"1.0.0\", \"name\": \"br\", \"plugins\": ["
                              "{\"type\": \"bridge\", \"bridge\": \"cni0\","
                              " \"ipam\": {\"type\": \"host-local\"}}, {\"type\": \"railgate\"}]}",
                              0, NULL);
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    free(holder);
    holder = NULL;

    /* the converted list is a list like any other now */
    assert_int_equal(install_conflist_add(list, false, &changed, &holder, &err), 0);
    assert_false(changed);
    free(holder);
    assert_no_temp(dir);
}

static void test_primary_config_is_the_first_name(void **state) {
    char dir[300], p[340];
    char *primary = NULL;
    RgError err = {0};

    subdir(dir, sizeof(dir), "primary");
    assert_int_equal(install_primary_config(dir, &primary, &err), -ENOENT);
    assert_contains(err.msg, dir);
    snprintf(p, sizeof(p), "%s/20-b.conflist", dir);
    write_file(p, CONFLIST, 0644);
    snprintf(p, sizeof(p), "%s/10-a.conflist", dir);
    write_file(p, CONFLIST, 0644);
    snprintf(p, sizeof(p), "%s/05-notes.txt", dir); /* not a config suffix */
    write_file(p, "x", 0644);
    snprintf(p, sizeof(p), "%s/00-dir.conflist", dir); /* a directory */
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(install_primary_config(dir, &primary, &err), 0);
    snprintf(p, sizeof(p), "%s/10-a.conflist", dir);
    assert_string_equal(primary, p);
    free(primary);
    /* a .conf sorting first is what the runtime uses, so it is the primary one */
    snprintf(p, sizeof(p), "%s/09-z.conf", dir);
    write_file(p, "{}", 0644);
    assert_int_equal(install_primary_config(dir, &primary, &err), 0);
    assert_string_equal(primary, p);
    free(primary);
}

/* ---- files ---- */

static void test_binary_copy_is_0755_and_atomic(void **state) {
    char src_dir[300], bin[300], src[340], dst[340];
    RgError err = {0};
    bool changed = false;
    struct stat a, b;

    subdir(src_dir, sizeof(src_dir), "img");
    subdir(bin, sizeof(bin), "bin");
    snprintf(src, sizeof(src), "%s/railgate", src_dir);
    snprintf(dst, sizeof(dst), "%s/railgate", bin);
    write_file(src, "\177ELF not really\n", 0600);

    assert_int_equal(install_copy_file(src, bin, "railgate", 0755, &changed, &err), 0);
    assert_true(changed);
    assert_int_equal(stat(dst, &a), 0);
    assert_true(S_ISREG(a.st_mode));
    assert_int_equal(a.st_mode & 07777, 0755);
    char *text = read_text(dst);
    assert_string_equal(text, "\177ELF not really\n");
    free(text);
    assert_no_temp(bin);

    /* same bytes: nothing written */
    assert_int_equal(install_copy_file(src, bin, "railgate", 0755, &changed, &err), 0);
    assert_false(changed);
    assert_int_equal(stat(dst, &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);

    /* a new build, or a wrong mode, replaces the file by rename: a running CNI keeps its inode */
    write_file(src, "\177ELF version 2\n", 0600);
    int keep = open(dst, O_RDONLY | O_CLOEXEC);
    assert_true(keep >= 0);
    assert_int_equal(install_copy_file(src, bin, "railgate", 0755, &changed, &err), 0);
    assert_true(changed);
    assert_int_equal(stat(dst, &b), 0);
    assert_int_not_equal(a.st_ino, b.st_ino);
    assert_int_equal(b.st_mode & 07777, 0755);
    char old[32] = {0};
    assert_true(pread(keep, old, sizeof(old) - 1, 0) > 0);
    assert_string_equal(old, "\177ELF not really\n");
    close(keep);
    assert_int_equal(chmod(dst, 0700), 0);
    assert_int_equal(install_copy_file(src, bin, "railgate", 0755, &changed, &err), 0);
    assert_true(changed);
    assert_int_equal(stat(dst, &b), 0);
    assert_int_equal(b.st_mode & 07777, 0755);

    /* errors name the file */
    assert_int_equal(install_copy_file(src_dir, bin, "railgate", 0755, &changed, &err), -EINVAL);
    assert_contains(err.msg, "not a regular file");
    snprintf(src, sizeof(src), "%s/nothing", src_dir);
    assert_int_equal(install_copy_file(src, bin, "railgate", 0755, &changed, &err), -ENOENT);
    assert_contains(err.msg, src);
    snprintf(src, sizeof(src), "%s/railgate", src_dir);
    assert_int_equal(install_copy_file(src, "/nonexistent-dir", "railgate", 0755, &changed, &err),
                     -ENOENT);
    assert_contains(err.msg, "/nonexistent-dir");

    /* removal is idempotent */
    assert_int_equal(install_remove_file(dst, &changed, &err), 0);
    assert_true(changed);
    assert_int_equal(install_remove_file(dst, &changed, &err), 0);
    assert_false(changed);
}

static void test_lib_dir_copy_and_removal(void **state) {
    char src[300], dst[340], p[400];
    RgError err = {0};
    unsigned n = 0;
    bool changed;

    subdir(src, sizeof(src), "libsrc");
    snprintf(p, sizeof(p), "%s/libjansson.so.4", src);
    write_file(p, "lib1", 0644);
    snprintf(p, sizeof(p), "%s/ld-linux-x86-64.so.2", src);
    write_file(p, "ld", 0755);
    snprintf(p, sizeof(p), "%s/sub", src); /* not a file: skipped */
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(dst, sizeof(dst), "%s/host/opt/railgate/lib", tmp);

    assert_int_equal(install_copy_dir(src, dst, 0755, &n, &err), 0);
    assert_int_equal(n, 2);
    snprintf(p, sizeof(p), "%s/libjansson.so.4", dst);
    char *text = read_text(p);
    assert_string_equal(text, "lib1");
    free(text);
    snprintf(p, sizeof(p), "%s/" INSTALL_LIB_MARKER, dst);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(install_copy_dir(src, dst, 0755, &n, &err), 0);
    assert_int_equal(n, 0);

    assert_int_equal(install_remove_dir(dst, &changed, &err), 0);
    assert_true(changed);
    assert_int_equal(access(dst, F_OK), -1);
    assert_int_equal(install_remove_dir(dst, &changed, &err), 0);
    assert_false(changed);
    /* a dir without the marker is never emptied */
    assert_int_equal(install_remove_dir(src, &changed, &err), -EPERM);
    assert_contains(err.msg, src);
    snprintf(p, sizeof(p), "%s/libjansson.so.4", src);
    assert_int_equal(access(p, F_OK), 0);
}

/* ---- the state dir ---- */

/* A record of cid:eth1 holding unit, written in the boot the proc root says. */
static void state_record(const char *st, const char *cid, const char *unit) {
    Attachment *a = calloc(1, sizeof(*a));
    AttachedNic *nic;

    assert_non_null(a);
    snprintf(a->container_id, sizeof(a->container_id), "%s", cid);
    snprintf(a->ifname, sizeof(a->ifname), "eth1");
    nic = attachment_add_nic(a);
    assert_non_null(nic);
    snprintf(nic->unit, sizeof(nic->unit), "%s", unit);
    assert_int_equal(state_record_save(st, a), 0);
    attachment_free(a);
}

static void set_boot_id(const char *proc, const char *id) {
    char p[400];

    snprintf(p, sizeof(p), "%s/sys/kernel/random", proc);
    assert_int_equal(fileio_mkdir_p(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/sys/kernel/random/boot_id", proc);
    write_file(p, id, 0644);
}

/* A unix socket bound at path; listening (a live agent's) or not (a
 * killed one's, which refuses): the fd, to close. */
static int agent_socket_at(const char *path, bool live) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0 && strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (live)
        assert_int_equal(listen(fd, 1), 0);
    return fd;
}

static void test_state_removal(void **state) {
    char st[300], proc[300], p[400];
    char *const units[] = {"tenant-a-0", NULL};
    _cleanup_free_ char *kept = NULL;
    RgError err = {0};
    bool changed = true;

    snprintf(st, sizeof(st), "%s/var-lib-railgate", tmp);
    snprintf(proc, sizeof(proc), "%s/proc", tmp);
    set_boot_id(proc, "11111111-1111-1111-1111-111111111111\n");
    setenv(STATE_PROC_ROOT_ENV, proc, 1);

    /* no state dir: nothing to do */
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), 0);
    assert_false(changed);
    assert_null(kept);

    /* a pod of this boot holds a NIC: refused, and every file stays */
    assert_int_equal(state_dir_ensure(st), 0);
    assert_int_equal(state_units_claim(st, units, 1, "c1:eth1", NULL, NULL, 0), 0);
    state_record(st, "c1", "tenant-a-0");
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), -EBUSY);
    assert_false(changed);
    assert_contains(err.msg, st);
    assert_contains(err.msg, "c1:eth1");
    assert_contains(err.msg, "delete the pods");
    snprintf(p, sizeof(p), "%s/attachments/c1:eth1.json", st);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof(p), "%s/units/tenant-a-0", st);
    assert_int_equal(access(p, F_OK), 0);

    /* an unreadable record counts as held: it may be a pod's */
    assert_int_equal(state_record_remove(st, "c1:eth1"), 0);
    snprintf(p, sizeof(p), "%s/attachments/c2:eth1.json", st);
    write_file(p, "{\"torn", 0600);
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), -EBUSY);
    assert_contains(err.msg, "c2:eth1");
    /* unless a node crash tore it: written before this boot began, it is of
     * an earlier boot and holds nothing (the record of this boot, c3's,
     * still refuses; then the torn one alone goes with the rest) */
    assert_int_equal(backdate(p, 3600, 0), 0);
    state_record(st, "c3", "tenant-a-0");
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), -EBUSY);
    assert_contains(err.msg, "c3:eth1");
    assert_int_equal(state_record_remove(st, "c3:eth1"), 0);
    (void)state_unit_release_owner(st, "c1:eth1");
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), 0);
    assert_true(changed);
    assert_int_equal(access(st, F_OK), -1);
    assert_int_equal(state_dir_ensure(st), 0);

    /* after a reboot the record holds nothing: it goes, with the rest and the dir */
    state_record(st, "c1", "tenant-a-0");
    set_boot_id(proc, "22222222-2222-2222-2222-222222222222\n");
    snprintf(p, sizeof(p), "%s/outside", tmp);
    write_file(p, "not railgate's", 0600);
    snprintf(p, sizeof(p), "%s/locks/c9:eth1.lock", st);
    assert_int_equal(symlink("../../outside", p), 0); /* unlinked, never followed */
    snprintf(p, sizeof(p), "%s/inventory.json", st);  /* the device plugin's */
    write_file(p, "{}", 0600);
    snprintf(p, sizeof(p), "%s/agent.sock", st); /* a killed agent's: refuses */
    close(agent_socket_at(p, false));
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), 0);
    assert_true(changed);
    assert_null(kept);
    assert_int_equal(access(st, F_OK), -1);
    snprintf(p, sizeof(p), "%s/outside", tmp);
    assert_int_equal(access(p, F_OK), 0);

    /* a file that is not railgate's keeps the dir, and is named */
    assert_int_equal(state_dir_ensure(st), 0);
    snprintf(p, sizeof(p), "%s/notes.txt", st);
    write_file(p, "an admin's", 0600);
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), 0);
    assert_true(changed);
    assert_non_null(kept);
    assert_string_equal(kept, "notes.txt");
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof(p), "%s/units", st);
    assert_int_equal(access(p, F_OK), -1);
    snprintf(p, sizeof(p), "%s/notes.txt", st);
    assert_int_equal(unlink(p), 0);

    /* an agent still serving its socket: the socket stays, and keeps the dir */
    assert_int_equal(state_dir_ensure(st), 0);
    snprintf(p, sizeof(p), "%s/agent.sock", st);
    int live = agent_socket_at(p, true);
    free(kept);
    kept = NULL;
    assert_int_equal(install_remove_state(st, &changed, &kept, &err), 0);
    assert_non_null(kept);
    assert_string_equal(kept, "agent.sock");
    assert_int_equal(access(p, F_OK), 0);
    close(live);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(rmdir(st), 0);
    unsetenv(STATE_PROC_ROOT_ENV);
}

/* ---- the node config ---- */

static const char NODE[] = "{\"rails\": [{\"index\": 0, \"gpu\": {\"simulated\": \"gpu0\"},"
                           " \"nic\": {\"name\": \"rail0\"}, \"address\": \"10.100.0.11/24\"}],"
                           " \"tenants\": [{\"name\": \"tenant-a\", \"namespaces\": [\"team-a\"],"
                           " \"rails\": [0], \"vrf\": {\"table\": 100}}]}\n";

static void test_render_picks_the_node_key_else_default(void **state) {
    char cm[300], out[340], p[400];
    char *key = NULL;
    RgError err = {0};
    bool changed = false;

    subdir(cm, sizeof(cm), "configmap");
    snprintf(out, sizeof(out), "%s/etc/railgate/node.json", tmp);
    snprintf(p, sizeof(p), "%s/default", cm);
    write_file(p, NODE, 0644);

    assert_int_equal(install_render(cm, "worker1", out, &changed, &key, &err), 0);
    assert_true(changed);
    assert_string_equal(key, "default");
    free(key);
    char *text = read_text(out);
    assert_string_equal(text, NODE);
    free(text);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(install_render(cm, "worker1", out, &changed, NULL, &err), 0);
    assert_false(changed);

    /* a key for the node wins */
    static const char MINE[] = "{\"domain\": \"example.com\", \"tenants\": [{\"name\": \"t\","
                               " \"namespaces\": [\"n\"], \"rails\": [1],"
                               " \"vrf\": {\"table\": 7}}], \"discovery\": {\"enabled\": true}}";
    snprintf(p, sizeof(p), "%s/worker1", cm);
    write_file(p, MINE, 0644);
    assert_int_equal(install_render(cm, "worker1", out, &changed, &key, &err), 0);
    assert_true(changed);
    assert_string_equal(key, "worker1");
    free(key);
    text = read_text(out);
    assert_string_equal(text, MINE);
    free(text);

    /* an invalid config never reaches the node: the error names key and JSON path */
    snprintf(p, sizeof(p), "%s/worker2", cm);
    write_file(p, "{\"tenants\": [], \"raisl\": []}", 0644);
    assert_int_equal(install_render(cm, "worker2", out, &changed, NULL, &err), -EINVAL);
    assert_false(changed);
    assert_contains(err.msg, "worker2");
    assert_contains(err.msg, "raisl");
    text = read_text(out);
    assert_string_equal(text, MINE);
    free(text);
    assert_int_equal(install_check_config(p, &err), -EINVAL);
    assert_contains(err.msg, "worker2");

    /* names that are no ConfigMap key are refused before any path is built */
    assert_int_equal(install_render(cm, "../configmap/default", out, &changed, NULL, &err),
                     -EINVAL);
    assert_int_equal(install_render(cm, "..", out, &changed, NULL, &err), -EINVAL);
    assert_int_equal(install_render(cm, "", out, &changed, NULL, &err), -EINVAL);

    /* neither the node's key nor default */
    snprintf(p, sizeof(p), "%s/default", cm);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(install_render(cm, "worker3", out, &changed, NULL, &err), -ENOENT);
    assert_contains(err.msg, "worker3");
    assert_contains(err.msg, "default");
    assert_no_temp(cm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_appends_last_and_keeps_the_rest),
        cmocka_unit_test(test_second_add_leaves_the_file_untouched),
        cmocka_unit_test(test_add_keeps_an_entry_anywhere_in_the_list),
        cmocka_unit_test(test_uninstall_removes_the_entry),
        cmocka_unit_test(test_uninstall_when_absent_changes_nothing),
        cmocka_unit_test(test_malformed_conflist_is_refused),
        cmocka_unit_test(test_single_conf_needs_convert),
        cmocka_unit_test(test_primary_config_is_the_first_name),
        cmocka_unit_test(test_binary_copy_is_0755_and_atomic),
        cmocka_unit_test(test_lib_dir_copy_and_removal),
        cmocka_unit_test(test_state_removal),
        cmocka_unit_test(test_render_picks_the_node_key_else_default),
    };

    return cmocka_run_group_tests_name("cni-install", tests, setup, teardown);
}
