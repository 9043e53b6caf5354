/* Attachment records as JSON files in the state dir (jansson). */
#include "attachment.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "state.h"
#include "strv.h"

#define ATTACHMENT_MAX_NICS 1024

void attachment_free(Attachment *a) {
    if (!a)
        return;
    for (size_t i = 0; i < a->n_nics; i++) {
        strv_free(a->nics[i].host_addrs);
        strv_free(a->nics[i].pod_addrs);
    }
    free(a->nics);
    free(a->ipam_conf);
    free(a);
}

AttachedNic *attachment_add_nic(Attachment *a) {
    AttachedNic *m;

    if (a->n_nics >= ATTACHMENT_MAX_NICS)
        return NULL;
    m = realloc(a->nics, (a->n_nics + 1) * sizeof(*m));
    if (!m)
        return NULL;
    a->nics = m;
    memset(&m[a->n_nics], 0, sizeof(*m));
    return &m[a->n_nics++];
}

static int key_path(const char *state_dir, const char *sub, const char *key, const char *ext,
                    char *buf, size_t n) {
    if (!*key || strchr(key, '/') || key[0] == '.')
        return -EINVAL;
    if ((size_t)snprintf(buf, n, "%s/%s/%s%s", state_dir, sub, key, ext) >= n)
        return -ENAMETOOLONG;
    return 0;
}

int attachment_key(const char *cid, const char *ifname, char *buf, size_t n) {
    if ((size_t)snprintf(buf, n, "%s-%s", cid, ifname) >= n)
        return -ENAMETOOLONG;
    return 0;
}

static json_t *strv_to_json(char *const *l) {
    json_t *a = json_array();

    for (size_t i = 0; a && l && l[i]; i++)
        json_array_append_new(a, json_string(l[i]));
    return a;
}

static json_t *nic_to_json(const AttachedNic *n) {
    char mac[18];

    snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", n->mac[0], n->mac[1], n->mac[2],
             n->mac[3], n->mac[4], n->mac[5]);
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:o, s:s, s:o, s:s, s:I, s:I, s:i}", "unit", n->unit,
        "hostName", n->host_name, "podName", n->pod_name, "pci", n->pci, "mac", mac, "mtu",
        (int)n->mtu, "wasUp", n->was_up, "hostAddresses", strv_to_json(n->host_addrs), "stage",
        n->stage == NIC_MOVED ? "moved" : "planned", "podAddresses", strv_to_json(n->pod_addrs),
        "gateway", n->gateway, "table", (json_int_t)n->table, "rulePriority",
        (json_int_t)n->rule_prio, "podMtu", (int)n->pod_mtu);
}

static json_t *attachment_to_json(const Attachment *a) {
    json_t *nics = json_array();

    for (size_t i = 0; nics && i < a->n_nics; i++)
        json_array_append_new(nics, nic_to_json(&a->nics[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:s?, s:o}", "containerID", a->container_id,
                     "ifname", a->ifname, "netns", a->netns, "podNamespace", a->pod_ns, "podName",
                     a->pod_name, "ipam", a->ipam, "ipamConf", a->ipam_conf, "nics", nics);
}

static int write_all(int fd, const char *s, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        s += w;
        len -= (size_t)w;
    }
    return 0;
}

int attachment_save(const char *state_dir, const Attachment *a) {
    char key[300], path[4096], tmp[4200], dir[4096];
    json_auto_t *j = attachment_to_json(a);
    _cleanup_free_ char *text = NULL;
    _cleanup_close_ int fd = -EBADF;
    int r;

    if (!j || !(text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
        return -ENOMEM;
    r = attachment_key(a->container_id, a->ifname, key, sizeof(key));
    if (r < 0)
        return r;
    r = key_path(state_dir, "attachments", key, ".json", path, sizeof(path));
    if (r < 0)
        return r;
    snprintf(dir, sizeof(dir), "%s/attachments", state_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    r = write_all(fd, text, strlen(text));
    if (r >= 0 && fsync(fd) < 0)
        r = -errno;
    if (r >= 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        (void)unlink(tmp);
    return r;
}

static int copy_field(char *dst, size_t n, json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));

    if (!s || strlen(s) >= n)
        return -EBADMSG;
    strcpy(dst, s);
    return 0;
}

/* Append the strings of a JSON array (or of nothing) to *v. */
static int strv_from_json(json_t *a, char ***v) {
    json_t *s;
    size_t i;

    json_array_foreach(a, i, s) {
        if (!json_is_string(s) || strv_push(v, json_string_value(s)) < 0)
            return -EBADMSG;
    }
    return 0;
}

static int nic_from_json(json_t *o, AttachedNic *n) {
    const char *mac = json_string_value(json_object_get(o, "mac"));
    json_t *addrs = json_object_get(o, "hostAddresses"), *pods = json_object_get(o, "podAddresses");
    int r = 0;

    r = r ?: copy_field(n->unit, sizeof(n->unit), o, "unit");
    r = r ?: copy_field(n->host_name, sizeof(n->host_name), o, "hostName");
    r = r ?: copy_field(n->pod_name, sizeof(n->pod_name), o, "podName");
    r = r ?: copy_field(n->pci, sizeof(n->pci), o, "pci");
    if (r < 0 || !mac ||
        sscanf(mac, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &n->mac[0], &n->mac[1], &n->mac[2], &n->mac[3],
               &n->mac[4], &n->mac[5]) != 6)
        return -EBADMSG;
    n->mtu = (unsigned)json_integer_value(json_object_get(o, "mtu"));
    n->was_up = json_is_true(json_object_get(o, "wasUp"));
    n->stage = streq_ptr(json_string_value(json_object_get(o, "stage")), "moved") ? NIC_MOVED
                                                                                  : NIC_PLANNED;
    if (strv_from_json(addrs, &n->host_addrs) < 0 || strv_from_json(pods, &n->pod_addrs) < 0)
        return -EBADMSG;
    r = copy_field(n->gateway, sizeof(n->gateway), o, "gateway");
    n->table = (uint32_t)json_integer_value(json_object_get(o, "table"));
    n->rule_prio = (uint32_t)json_integer_value(json_object_get(o, "rulePriority"));
    n->pod_mtu = (unsigned)json_integer_value(json_object_get(o, "podMtu"));
    return r;
}

static int attachment_from_json(json_t *j, Attachment *a) {
    json_t *nics = json_object_get(j, "nics"), *v;
    size_t i;
    int r = 0;

    r = r ?: copy_field(a->container_id, sizeof(a->container_id), j, "containerID");
    r = r ?: copy_field(a->ifname, sizeof(a->ifname), j, "ifname");
    r = r ?: copy_field(a->netns, sizeof(a->netns), j, "netns");
    r = r ?: copy_field(a->pod_ns, sizeof(a->pod_ns), j, "podNamespace");
    r = r ?: copy_field(a->pod_name, sizeof(a->pod_name), j, "podName");
    if (r < 0 || !json_is_array(nics) || json_array_size(nics) > ATTACHMENT_MAX_NICS)
        return -EBADMSG;
    a->ipam = json_is_true(json_object_get(j, "ipam"));
    v = json_object_get(j, "ipamConf");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            return -EBADMSG;
        a->ipam_conf = strdup(json_string_value(v));
        if (!a->ipam_conf)
            return -ENOMEM;
    }
    json_array_foreach(nics, i, v) {
        AttachedNic *n = attachment_add_nic(a);
        if (!n)
            return -ENOMEM;
        r = nic_from_json(v, n);
        if (r < 0)
            return r;
    }
    return 0;
}

int attachment_load_key(const char *state_dir, const char *key, Attachment **ret) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    json_auto_t *j = NULL;
    char path[4096];
    int r;

    r = key_path(state_dir, "attachments", key, ".json", path, sizeof(path));
    if (r < 0)
        return r;
    if (access(path, F_OK) < 0)
        return -errno;
    j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    if (!j)
        return -EBADMSG;
    a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    r = attachment_from_json(j, a);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(a);
    return 0;
}

int attachment_load(const char *state_dir, const char *container_id, const char *ifname,
                    Attachment **ret) {
    char key[300];
    int r = attachment_key(container_id, ifname, key, sizeof(key));

    return r < 0 ? r : attachment_load_key(state_dir, key, ret);
}

int attachment_remove(const char *state_dir, const char *container_id, const char *ifname) {
    char key[300], path[4096];
    int r;

    r = attachment_key(container_id, ifname, key, sizeof(key));
    if (r >= 0)
        r = key_path(state_dir, "attachments", key, ".json", path, sizeof(path));
    if (r < 0)
        return r;
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int attachment_list(const char *state_dir, char ***ret) {
    char dir[4096];
    char **l = calloc(1, sizeof(char *));
    struct dirent *de;
    DIR *d;

    if (!l)
        return -ENOMEM;
    snprintf(dir, sizeof(dir), "%s/attachments", state_dir);
    d = opendir(dir);
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 5 || !streq(de->d_name + n - 5, ".json"))
            continue;
        if (strv_pushf(&l, "%.*s", (int)(n - 5), de->d_name) < 0) {
            closedir(d);
            strv_free(l);
            return -ENOMEM;
        }
    }
    if (d)
        closedir(d);
    *ret = l;
    return 0;
}

static int lock_file(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0)
        return -errno;
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR) {
            int r = -errno;
            close(fd);
            return r;
        }
    return fd;
}

int attachment_lock(const char *state_dir, const char *container_id, const char *ifname) {
    char key[300], path[4096], dir[4096];
    int r;

    r = state_dir_ensure(state_dir);
    if (r < 0)
        return r;
    snprintf(dir, sizeof(dir), "%s/locks", state_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    r = attachment_key(container_id, ifname, key, sizeof(key));
    if (r >= 0)
        r = key_path(state_dir, "locks", key, ".lock", path, sizeof(path));
    return r < 0 ? r : lock_file(path);
}

bool attachment_claim_stale(const char *state_dir, const char *key, const char *unit_id) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    _cleanup_close_ int fd = -EBADF;
    char path[4096];
    int r;

    if (key_path(state_dir, "locks", key, ".lock", path, sizeof(path)) < 0)
        return false;
    fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
        return false; /* its ADD or DEL is running */
    if (fd < 0 && errno != ENOENT)
        return false;
    r = attachment_load_key(state_dir, key, &a);
    if (r == -ENOENT)
        return true;
    if (r < 0)
        return false; /* unreadable: keep it, DEL or GC will say why */
    for (size_t i = 0; i < a->n_nics; i++)
        if (streq(a->nics[i].unit, unit_id))
            return false;
    return true;
}

int state_lock(const char *state_dir) {
    char path[4096];
    int r = state_dir_ensure(state_dir);

    if (r < 0)
        return r;
    if ((size_t)snprintf(path, sizeof(path), "%s/lock", state_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    return lock_file(path);
}
