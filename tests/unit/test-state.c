/* SPDX-License-Identifier: Apache-2.0 */
/* The state dir as one state machine: keys, atomic files, claims, staleness, boots, locks. No root.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <dirent.h>

#include "boottime.h"
#include "fileio.h"
#include "state.h"
#include "strv.h"
#include "testns.h"

static char tmp[256], st[300], proc[300];

static int rm_entry(const char *path, const struct stat *s, int flag, struct FTW *ftw) {
    return remove(path);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void set_boot(const char *id) {
    char path[400];

    snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", proc);
    write_text(path, id);
}

static int setup(void **state) {
    char dir[400];

    snprintf(tmp, sizeof(tmp), "/tmp/rg-state-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    snprintf(st, sizeof(st), "%s/state", tmp);
    snprintf(proc, sizeof(proc), "%s/proc", tmp);
    snprintf(dir, sizeof(dir), "%s/sys/kernel/random", proc);
    assert_int_equal(fileio_mkdir_p(dir, 0755), 0);
    setenv(STATE_PROC_ROOT_ENV, proc, 1);
    set_boot("11111111-1111-1111-1111-111111111111\n");
    return 0;
}

static int teardown(void **state) {
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    unsetenv(STATE_PROC_ROOT_ENV);
    return 0;
}

static char *read_file(const char *path) {
    char *text = NULL;

    assert_int_equal(fileio_read_bounded(path, 1 << 20, &text, NULL), 0);
    return text;
}

static size_t entries(const char *sub) {
    char path[400];
    _cleanup_(strv_freep) char **l = NULL;
    size_t n = 0;

    snprintf(path, sizeof(path), "%s/%s", st, sub);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));)
        n += de->d_name[0] != '.' || (de->d_name[1] && de->d_name[1] != '.');
    if (d)
        closedir(d);
    return n;
}

/* A record of cid:ifname holding units. */
static void record(const char *cid, const char *ifname, char *const *units) {
    Attachment *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    assert_true(strlen(cid) < sizeof(a->container_id));
    memcpy(a->container_id, cid, strlen(cid) + 1);
    snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
    for (size_t i = 0; units && units[i]; i++) {
        AttachedNic *n = attachment_add_nic(a);
        assert_non_null(n);
        snprintf(n->unit, sizeof(n->unit), "%s", units[i]);
    }
    assert_int_equal(state_record_save(st, a), 0);
    attachment_free(a);
}

/* ---- keys ---- */

static void test_keys_injective(void **state) {
    char a[STATE_KEY_MAX + 1], b[STATE_KEY_MAX + 1], cid[300];

    assert_int_equal(state_key("k1-x", "eth0", a, sizeof(a)), 0);
    assert_int_equal(state_key("k1", "x-eth0", b, sizeof(b)), 0);
    assert_string_not_equal(a, b);
    assert_string_equal(a, "k1-x:eth0");
    assert_int_equal(state_key("k1:x", "eth0", a, sizeof(a)), -EINVAL);
    assert_int_equal(state_key("k1", "x:eth0", a, sizeof(a)), -EINVAL);
    assert_int_equal(state_key("k1", "a/b", a, sizeof(a)), -EINVAL);
    assert_int_equal(state_key("", "eth0", a, sizeof(a)), -EINVAL);
    /* a spec-valid 250-character id cannot have a key: no ADD records it */
    memset(cid, 'c', 250);
    cid[250] = 0;
    assert_int_equal(state_key(cid, "eth0", a, sizeof(a)), -ENAMETOOLONG);
    cid[245] = 0; /* 245 + ':' + "eth0" = 250: the longest that fits */
    assert_int_equal(state_key(cid, "eth0", a, sizeof(a)), 0);
    record(cid, "eth0", NULL);
    Attachment *r = NULL;
    assert_int_equal(state_record_load(st, cid, "eth0", &r), 0);
    assert_string_equal(r->container_id, cid);
    attachment_free(r);
    int fd = state_attachment_lock(st, a);
    assert_true(fd >= 0);
    state_attachment_unlock(st, a, fd, true);
}

/* ---- atomic files ---- */

static void test_fileio(void **state) {
    char path[400], link[400], fifo[400], *text = NULL;
    size_t len;

    assert_int_equal(fileio_mkdir_p(st, 0700), 0);
    snprintf(path, sizeof(path), "%s/f", st);
    assert_int_equal(fileio_write_atomic(path, "one", 3, 0600, false), 0);
    assert_int_equal(fileio_write_atomic(path, "two!", 4, 0600, false), 0);
    assert_int_equal(fileio_read_bounded(path, 16, &text, &len), 0);
    assert_string_equal(text, "two!");
    assert_int_equal(len, 4);
    free(text);
    assert_int_equal(fileio_read_bounded(path, 3, &text, &len), -EFBIG);
    /* exclusive publish: never over an existing file */
    assert_int_equal(fileio_write_atomic(path, "x", 1, 0600, true), -EEXIST);
    text = read_file(path);
    assert_string_equal(text, "two!");
    free(text);
    assert_int_equal(entries("."), 1); /* no temp file left behind */
    struct stat s;
    assert_int_equal(stat(path, &s), 0);
    assert_int_equal(s.st_mode & 0777, 0600);
    /* a symlink is not followed by a read, and replaced (not written through) by a publish */
    snprintf(link, sizeof(link), "%s/l", st);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(fileio_read_bounded(link, 16, &text, NULL), -ELOOP);
    assert_int_equal(fileio_write_atomic(link, "new", 3, 0600, false), 0);
    text = read_file(path);
    assert_string_equal(text, "two!");
    free(text);
    snprintf(fifo, sizeof(fifo), "%s/p", st);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fileio_read_bounded(fifo, 16, &text, NULL), -EBADFD);
    assert_int_equal(fileio_read_bounded("/nonexistent/x", 16, &text, NULL), -ENOENT);
}

/* ---- claims ---- */

static void test_claim_marker_whole(void **state) {
    char *units[] = {"u0", "u1", NULL}, path[400], holder[300];
    size_t bad = 99;
    _cleanup_free_ char *text = NULL;

    assert_int_equal(state_units_claim(st, units, 2, "c1:eth0", &bad, holder, sizeof(holder)), 0);
    snprintf(path, sizeof(path), "%s/units/u0", st);
    text = read_file(path);
    assert_string_equal(text, "c1:eth0\n11111111-1111-1111-1111-111111111111\n");
    assert_int_equal(state_unit_holder(st, "u1", holder, sizeof(holder)), 0);
    assert_string_equal(holder, "c1:eth0");
    /* claiming again what we hold is fine */
    assert_int_equal(state_units_claim(st, units, 2, "c1:eth0", &bad, holder, sizeof(holder)), 0);
    assert_int_equal(entries("units"), 2); /* the claim's own file is gone: */
    /* the markers are links of one file, and each goes on its own */
    struct stat s0, s1;
    char path1[400];
    snprintf(path1, sizeof(path1), "%s/units/u1", st);
    assert_int_equal(stat(path, &s0), 0);
    assert_int_equal(stat(path1, &s1), 0);
    assert_true(s0.st_ino == s1.st_ino);
    assert_int_equal(s0.st_nlink, 2);
    assert_int_equal(s0.st_mode & 0777, 0600);
    assert_int_equal(state_unit_release(st, "u0", "c1:eth0"), 0);
    assert_int_equal(state_unit_holder(st, "u0", holder, sizeof(holder)), -ENOENT);
    assert_int_equal(state_unit_holder(st, "u1", holder, sizeof(holder)), 0);
    assert_string_equal(holder, "c1:eth0");
}

static void test_claim_all_or_none(void **state) {
    char *mine[] = {"u0", NULL}, *both[] = {"u1", "u0", NULL}, *bad_id[] = {"u2", "..", NULL};
    char holder[300] = "";
    size_t bad = 99;

    record("c1", "eth0", mine);
    assert_int_equal(state_units_claim(st, mine, 1, "c1:eth0", NULL, NULL, 0), 0);
    /* u0 is live (c1's record lists it): u1 must not stay claimed */
    assert_int_equal(state_units_claim(st, both, 2, "c2:eth0", &bad, holder, sizeof(holder)),
                     -EBUSY);
    assert_int_equal(bad, 1);
    assert_string_equal(holder, "c1:eth0");
    assert_false(state_unit_attached(st, "u1"));
    assert_int_equal(state_unit_holder(st, "u1", holder, sizeof(holder)), -ENOENT);
    /* an error other than EBUSY releases what was claimed too */
    assert_int_equal(state_units_claim(st, bad_id, 2, "c2:eth0", &bad, holder, sizeof(holder)),
                     -EINVAL);
    assert_int_equal(bad, 1);
    assert_int_equal(state_unit_holder(st, "u2", holder, sizeof(holder)), -ENOENT);
    assert_int_equal(entries("units"), 1);
}

static void test_stale_markers(void **state) {
    char *u0[] = {"u0", NULL}, *other[] = {"u9", NULL}, path[400], holder[300];
    int fd;

    assert_int_equal(state_dir_ensure(st), 0);
    /* an empty marker (what a crash between create and write left before) */
    snprintf(path, sizeof(path), "%s/units/u0", st);
    write_text(path, "");
    assert_true(state_unit_stale(st, "u0"));
    assert_false(state_unit_attached(st, "u0"));
    assert_int_equal(state_units_claim(st, u0, 1, "c1:eth0", NULL, holder, sizeof(holder)), 0);
    /* no record, nobody holds the lock: an ADD died between claim and record */
    assert_true(state_unit_stale(st, "u0"));
    assert_false(state_unit_attached(st, "u0"));
    /* while its ADD runs (lock held) it is live */
    fd = state_attachment_lock(st, "c1:eth0");
    assert_true(fd >= 0);
    assert_false(state_unit_stale(st, "u0"));
    assert_true(state_unit_attached(st, "u0"));
    assert_int_equal(state_units_claim(st, u0, 1, "c2:eth0", NULL, holder, sizeof(holder)), -EBUSY);
    assert_int_equal(state_attachment_trylock(st, "c1:eth0"), -EWOULDBLOCK);
    /* recorded: live after the ADD ends */
    record("c1", "eth0", u0);
    state_attachment_unlock(st, "c1:eth0", fd, false);
    assert_true(state_unit_attached(st, "u0"));
    /* a record that does not list the unit does not keep it */
    record("c1", "eth0", other);
    assert_false(state_unit_attached(st, "u0"));
    assert_int_equal(state_units_sweep(st), 1);
    assert_int_equal(entries("units"), 0);
    /* a marker naming no owner is not one a claim wrote */
    write_text(path, "junk");
    assert_true(state_unit_stale(st, "u0"));
    assert_int_equal(state_units_claim(st, u0, 1, "c2:eth0", NULL, holder, sizeof(holder)), 0);
    assert_int_equal(state_unit_holder(st, "u0", holder, sizeof(holder)), 0);
    assert_string_equal(holder, "c2:eth0");
}

/* The state dirs are made by the first write that needs them, and again
 * when someone removed them; nothing is made before it is needed. */
static void test_dirs_made_on_demand(void **state) {
    char *u0[] = {"u0", NULL}, path[400], holder[300];
    struct stat sb;
    int fd;

    assert_int_equal(stat(st, &sb), -1); /* setup made none */
    fd = state_attachment_lock(st, "c1:eth0");
    assert_true(fd >= 0);
    snprintf(path, sizeof(path), "%s/locks", st);
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0700);
    state_attachment_unlock(st, "c1:eth0", fd, true);
    nftw(st, rm_entry, 16, FTW_DEPTH | FTW_PHYS); /* an operator's rm -rf */
    assert_int_equal(state_units_claim(st, u0, 1, "c1:eth0", NULL, holder, sizeof(holder)), 0);
    assert_int_equal(state_unit_holder(st, "u0", holder, sizeof(holder)), 0);
    assert_string_equal(holder, "c1:eth0");
    nftw(st, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    record("c1", "eth0", u0);
    assert_int_equal(entries("attachments"), 1);
    /* a file where the dir should be is an error, not something to replace */
    nftw(st, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    assert_int_equal(fileio_mkdir_p(st, 0700), 0);
    snprintf(path, sizeof(path), "%s/units", st);
    write_text(path, "not a dir");
    assert_true(state_units_claim(st, u0, 1, "c2:eth0", NULL, holder, sizeof(holder)) < 0);
    assert_int_equal(state_dir_ensure(st), -ENOTDIR);
}

static void test_earlier_boot(void **state) {
    char *u0[] = {"u0", NULL}, holder[300];
    Attachment *a = NULL;

    record("c1", "eth0", u0);
    assert_int_equal(state_units_claim(st, u0, 1, "c1:eth0", NULL, NULL, 0), 0);
    assert_true(state_unit_attached(st, "u0"));
    assert_int_equal(state_record_load(st, "c1", "eth0", &a), 0);
    assert_false(state_record_from_earlier_boot(a));
    set_boot("22222222-2222-2222-2222-222222222222\n");
    /* the node rebooted: neither the marker nor the record keeps u0 */
    assert_true(state_record_from_earlier_boot(a));
    attachment_free(a);
    assert_false(state_unit_attached(st, "u0"));
    assert_int_equal(state_units_claim(st, u0, 1, "c2:eth0", NULL, holder, sizeof(holder)), 0);
    /* a marker of this boot whose owner's record is of the earlier one */
    assert_int_equal(state_unit_mark(st, "u0", "c1:eth0"), 0);
    assert_true(state_unit_stale(st, "u0"));
}

static void test_records(void **state) {
    char *u0[] = {"u0", NULL}, path[400];
    Attachment *a = NULL;
    _cleanup_(strv_freep) char **keys = NULL;

    record("c1", "eth0", u0);
    assert_int_equal(state_record_load(st, "c1", "eth0", &a), 0);
    assert_int_equal(a->n_nics, 1);
    a->ipam_conf = strdup("{\"cniVersion\":\"1.0.0\",\"ipam\":{\"type\":\"host-local\"}}");
    snprintf(a->nics[0].kind, sizeof(a->nics[0].kind), "veth");
    a->nics[0].peer_ifindex = 42;
    a->nics[0].peer_nsid = -1;
    snprintf(a->nics[0].peer_name, sizeof(a->nics[0].peer_name), "rail-peer0");
    assert_int_equal(state_record_save(st, a), 0);
    attachment_free(a);
    assert_int_equal(state_record_load(st, "c1", "eth0", &a), 0);
    assert_string_equal(a->ipam_conf,
                        "{\"cniVersion\":\"1.0.0\",\"ipam\":{\"type\":\"host-local\"}}");
    assert_string_equal(a->nics[0].kind, "veth");
    assert_int_equal(a->nics[0].peer_ifindex, 42);
    assert_int_equal(a->nics[0].peer_nsid, -1);
    assert_string_equal(a->nics[0].peer_name, "rail-peer0");
    assert_string_equal(a->boot_id, "11111111-1111-1111-1111-111111111111");
    /* a record filed under another attachment's key is never that attachment */
    snprintf(path, sizeof(path), "%s/attachments/c2:eth0.json", st);
    char src[400];
    snprintf(src, sizeof(src), "%s/attachments/c1:eth0.json", st);
    assert_int_equal(link(src, path), 0);
    attachment_free(a);
    a = NULL;
    assert_int_equal(state_record_load(st, "c2", "eth0", &a), -EXDEV);
    assert_int_equal(state_record_list(st, &keys), 0);
    assert_int_equal(strv_length(keys), 2);
    assert_int_equal(state_record_remove(st, "c1:eth0"), 0);
    assert_int_equal(state_record_load(st, "c1", "eth0", &a), -ENOENT);
    assert_int_equal(state_record_remove(st, "c1:eth0"), 0);
    /* garbage is refused, not half-read */
    write_text(path, "{\"containerID\": ");
    assert_int_equal(state_record_load(st, "c2", "eth0", &a), -EBADMSG);
}

/* A record a node crash tore: unparseable and written before this boot
 * began is of an earlier boot (records without IPAM have no fsync); one
 * written since is refused as any garbage is. */
static void test_torn_records(void **state) {
    char *u0[] = {"u0", NULL}, path[400];
    Attachment *a = NULL;

    /* dated an hour before the boot began, or a second before it (in the slack) */

    record("c1", "eth0", u0);
    snprintf(path, sizeof(path), "%s/attachments/c2:eth0.json", st);
    write_text(path, "");
    assert_int_equal(state_record_load(st, "c2", "eth0", &a), -EBADMSG);
    /* written now: refused, not forgotten */
    assert_false(state_record_torn(st, "c2:eth0"));
    assert_int_equal(backdate(path, 1, 0), 0);
    assert_false(state_record_torn(st, "c2:eth0"));
    assert_int_equal(backdate(path, 3600, 0), 0);
    assert_true(state_record_torn(st, "c2:eth0"));
    /* partial, of an earlier boot */
    write_text(path, "{\"containerID\": \"c2\", \"ifname\": ");
    assert_false(state_record_torn(st, "c2:eth0"));
    assert_int_equal(backdate(path, 3600, 0), 0);
    assert_true(state_record_torn(st, "c2:eth0"));
    /* whole: the boot id tells, not the mtime */
    snprintf(path, sizeof(path), "%s/attachments/c1:eth0.json", st);
    assert_int_equal(backdate(path, 3600, 0), 0);
    assert_false(state_record_torn(st, "c1:eth0"));
    /* none, or a key that is no key */
    assert_false(state_record_torn(st, "c3:eth0"));
    assert_false(state_record_torn(st, "../x"));
}

/* The temp files of writes a power loss cut short: those last written
 * before this boot began go; one written since (a write under way), a
 * symlink, a directory, and a file that is no temp file stay. */
static void test_temps_sweep(void **state) {
    char path[400], target[400];

    assert_int_equal(state_dir_ensure(st), 0);
    static const char *const olds[] = {"attachments/.c1:eth0.json.tmp-Ab12Cd",
                                       "units/.rail0.tmp-zzzzzz", ".inventory.json.tmp-q1w2e3"};
    for (size_t i = 0; i < ELEMENTSOF(olds); i++) {
        snprintf(path, sizeof(path), "%s/%s", st, olds[i]);
        write_text(path, "{\"half");
        assert_int_equal(backdate(path, 3600, 0), 0);
    }
    snprintf(path, sizeof(path), "%s/attachments/.c2:eth0.json.tmp-now123", st);
    write_text(path, "{");
    snprintf(path, sizeof(path), "%s/units/rail1", st); /* a marker, no temp file */
    write_text(path, "c1:eth0");
    assert_int_equal(backdate(path, 3600, 0), 0);
    snprintf(path, sizeof(path), "%s/units/.x.tmp-abcdefg", st); /* not the pattern */
    write_text(path, "x");
    assert_int_equal(backdate(path, 3600, 0), 0);
    snprintf(target, sizeof(target), "%s/victim", tmp);
    write_text(target, "keep");
    snprintf(path, sizeof(path), "%s/attachments/.c3:eth0.json.tmp-link00", st);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(backdate(path, 3600, AT_SYMLINK_NOFOLLOW), 0);

    assert_int_equal(state_temps_sweep(st), 3);
    for (size_t i = 0; i < ELEMENTSOF(olds); i++) {
        snprintf(path, sizeof(path), "%s/%s", st, olds[i]);
        assert_int_equal(access(path, F_OK), -1);
    }
    assert_int_equal(entries("attachments"), 2); /* the write under way, the symlink */
    assert_int_equal(entries("units"), 2);
    _cleanup_free_ char *text = read_file(target);
    assert_string_equal(text, "keep");
    assert_int_equal(state_temps_sweep(st), 0);
}

/* ---- locks ---- */

static void test_locks(void **state) {
    char path[400], target[400];
    int fd;

    fd = state_attachment_lock(st, "c1:eth0");
    assert_true(fd >= 0);
    assert_int_equal(state_lock_path(st, "c1:eth0", path, sizeof(path)), 0);
    assert_int_equal(access(path, F_OK), 0);
    /* the attachment ended: its lock file goes */
    state_attachment_unlock(st, "c1:eth0", fd, true);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(entries("locks"), 0);
    /* a symlink or a FIFO at the lock path is refused, never followed */
    snprintf(target, sizeof(target), "%s/victim", tmp);
    write_text(target, "keep");
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(state_attachment_lock(st, "c1:eth0"), -ELOOP);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(state_attachment_lock(st, "c1:eth0"), -EBADFD);
    assert_int_equal(unlink(path), 0);
    _cleanup_free_ char *text = read_file(target);
    assert_string_equal(text, "keep");
    /* lock files of ended attachments (older versions left them) are swept,
     * a held one and one with a record are not */
    fd = state_attachment_lock(st, "c1:eth0");
    state_attachment_unlock(st, "c1:eth0", fd, false);
    fd = state_attachment_lock(st, "c2:eth0");
    state_attachment_unlock(st, "c2:eth0", fd, false);
    record("c2", "eth0", NULL);
    int held = state_attachment_lock(st, "c3:eth0");
    assert_true(held >= 0);
    assert_int_equal(state_locks_sweep(st), 1);
    assert_int_equal(entries("locks"), 2);
    state_attachment_unlock(st, "c3:eth0", held, true);
    assert_int_equal(entries("locks"), 1);
    /* the whole-dir lock excludes another holder */
    int l1 = state_lock(st);
    assert_true(l1 >= 0);
    char lp[400];
    snprintf(lp, sizeof(lp), "%s/lock", st);
    int other = open(lp, O_RDWR | O_CLOEXEC);
    assert_true(other >= 0);
    assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
    close(other);
    close(l1);
}

static unsigned long waited_ino;

static bool lock_waiter(void *arg) {
    char line[256], want[32];
    FILE *f = fopen("/proc/locks", "re");
    bool found = false;

    snprintf(want, sizeof(want), ":%lu ", waited_ino);
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, "->") && strstr(line, want);
    if (f)
        fclose(f);
    return found;
}

/* A waiter that gets the lock of an attachment that ended meanwhile (its
 * file unlinked) locks the new file instead: two holders never coexist. */
static void test_lock_removed_under_waiter(void **state) {
    int pipefd[2], held, r;
    char path[400];
    struct stat a, b;

    assert_int_equal(pipe(pipefd), 0);
    held = state_attachment_lock(st, "c1:eth0");
    assert_true(held >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* dies with the test, even one that fails before killing it */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(held); /* the lock belongs to the open file, which fork() shared */
        int fd = state_attachment_lock(st, "c1:eth0");
        char ok = 'n';
        if (fd >= 0 && state_lock_path(st, "c1:eth0", path, sizeof(path)) >= 0 &&
            fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino)
            ok = 'y';
        (void)!write(pipefd[1], &ok, 1);
        pause(); /* hold it until killed */
        _exit(0);
    }
    /* wait until the child is queued on the old inode (/proc/locks lists
     * blocked waiters with "->") */
    assert_int_equal(state_lock_path(st, "c1:eth0", path, sizeof(path)), 0);
    assert_int_equal(stat(path, &a), 0);
    waited_ino = (unsigned long)a.st_ino;
    assert_true(testns_wait_until(lock_waiter, NULL, 30000));
    state_attachment_unlock(st, "c1:eth0", held, true);
    char ok = 0;
    ssize_t k = read(pipefd[0], &ok, 1);
    /* the child holds the lock at the path: nobody else gets it */
    r = state_attachment_trylock(st, "c1:eth0");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(k, 1);
    assert_int_equal(ok, 'y');
    assert_int_equal(r, -EWOULDBLOCK);
    r = state_attachment_trylock(st, "c1:eth0");
    assert_true(r >= 0);
    state_attachment_unlock(st, "c1:eth0", r, true);
    close(pipefd[0]);
    close(pipefd[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keys_injective, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fileio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_marker_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_all_or_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_markers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirs_made_on_demand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_earlier_boot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_temps_sweep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_removed_under_waiter, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
