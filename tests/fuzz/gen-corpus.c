/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes the protobuf seeds of the fuzz corpus: fuzz-gen-corpus DIR writes
 * DIR/<target>/<name> for the device-plugin, PodResources and node agent
 * targets. The
 * output is committed under tests/fuzz/corpus; rerun after a .proto change.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agentproto.h"
#include "deviceplugin.pb-c.h"
#include "pb.h"
#include "podresources.pb-c.h"

static const char *out_dir;
static int failed;

static void write_bytes(const char *target, const char *name, const uint8_t *prefix,
                        size_t prefix_len, const uint8_t *data, size_t len) {
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", out_dir, target);
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        perror(path);
        failed = 1;
        return;
    }
    snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
    f = fopen(path, "wb");
    if (!f || (prefix_len && fwrite(prefix, 1, prefix_len, f) != prefix_len) ||
        (len && fwrite(data, 1, len, f) != len)) {
        perror(path);
        failed = 1;
    }
    if (f && fclose(f) != 0) {
        perror(path);
        failed = 1;
    }
}

/* m packed, after prefix (the mode byte of fuzz-podresources); cut: drop that many bytes. */
static void write_msg(const char *target, const char *name, const uint8_t *prefix,
                      size_t prefix_len, const ProtobufCMessage *m, size_t cut) {
    uint8_t *buf = NULL;
    size_t len = 0;

    if (pb_pack(m, &buf, &len) < 0) {
        failed = 1;
        return;
    }
    write_bytes(target, name, prefix, prefix_len, buf, len > cut ? len - cut : 0);
    free(buf);
}

/* ---- Allocate ----------------------------------------------------------- */

static void allocate(const char *name, size_t cut, ...) {
    V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest cr[80];
    V1beta1__ContainerAllocateRequest *crp[80];
    char *ids[80][16];
    const char *s;
    va_list ap;

    /* containers separated by "|", ids as strings, NULL at the end */
    va_start(ap, cut);
    req.container_requests = crp;
    v1beta1__container_allocate_request__init(&cr[0]);
    cr[0].devices_ids = ids[0];
    crp[req.n_container_requests++] = &cr[0];
    while ((s = va_arg(ap, const char *))) {
        V1beta1__ContainerAllocateRequest *c = &cr[req.n_container_requests - 1];
        if (streq(s, "|")) {
            size_t k = req.n_container_requests++;
            v1beta1__container_allocate_request__init(&cr[k]);
            cr[k].devices_ids = ids[k];
            crp[k] = &cr[k];
        } else
            c->devices_ids[c->n_devices_ids++] = (char *)s;
    }
    va_end(ap);
    write_msg("dp-allocate", name, NULL, 0, &req.base, cut);
}

static void allocate_seeds(void) {
    V1beta1__AllocateRequest empty = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__AllocateRequest many = V1BETA1__ALLOCATE_REQUEST__INIT;
    V1beta1__ContainerAllocateRequest cr[65], *crp[65];
    static char *one[] = {"rail0"};

    allocate("one-unit", 0, "rail0", NULL);
    allocate("four-units", 0, "rail3", "rail1", "rail0", "rail2", NULL);
    allocate("two-containers", 0, "rail4", "|", "rail5", "rail6", NULL);
    allocate("tenant-b", 0, "rail7", "rail4", NULL);
    allocate("vf-units", 0, "rail1-vf3", "rail1-vf0", "rail2-vf1", "rail0", NULL);
    allocate("rail1023", 0, "rail1023", NULL);
    allocate("dgx-switch", 0, "rail6", "rail7", NULL);
    allocate("bad-unknown", 0, "rail99", NULL);
    allocate("bad-twice", 0, "rail0", "rail0", NULL);
    allocate("bad-cross-tenant", 0, "rail0", "rail4", NULL);
    allocate("bad-empty-container", 0, NULL);
    allocate("bad-second-container", 0, "rail0", "|", "rail4", NULL);
    allocate("bad-truncated", 3, "rail0", "rail1", NULL);
    write_msg("dp-allocate", "bad-no-containers", NULL, 0, &empty.base, 0);
    /* more container requests than DP_MAX_CONTAINER_REQUESTS */
    many.container_requests = crp;
    for (size_t i = 0; i < ELEMENTSOF(cr); i++) {
        v1beta1__container_allocate_request__init(&cr[i]);
        cr[i].devices_ids = one;
        cr[i].n_devices_ids = 1;
        crp[many.n_container_requests++] = &cr[i];
    }
    write_msg("dp-allocate", "bad-65-containers", NULL, 0, &many.base, 0);
}

/* ---- GetPreferredAllocation --------------------------------------------- */

typedef struct Pref {
    const char *avail;
    const char *must;
    int size;
} Pref;

/* space-separated ids into a NULL-terminated array in buf */
static size_t split(const char *s, char *copy, size_t n, char **out, size_t max) {
    size_t k = 0;
    char *save = NULL;

    snprintf(copy, n, "%s", s ? s : "");
    for (char *t = strtok_r(copy, " ", &save); t && k < max; t = strtok_r(NULL, " ", &save))
        out[k++] = t;
    return k;
}

static void preferred(const char *name, const Pref *p, size_t n) {
    V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    V1beta1__ContainerPreferredAllocationRequest cr[4], *crp[4];
    char copy[4][2][512];
    char *avail[4][32], *must[4][32];

    req.container_requests = crp;
    for (size_t i = 0; i < n; i++) {
        v1beta1__container_preferred_allocation_request__init(&cr[i]);
        cr[i].available_deviceids = avail[i];
        cr[i].n_available_deviceids = split(p[i].avail, copy[i][0], 512, avail[i], 32);
        cr[i].must_include_deviceids = must[i];
        cr[i].n_must_include_deviceids = split(p[i].must, copy[i][1], 512, must[i], 32);
        cr[i].allocation_size = p[i].size;
        crp[req.n_container_requests++] = &cr[i];
    }
    write_msg("dp-preferred", name, NULL, 0, &req.base, 0);
}

#define ALL8 "rail0 rail1 rail2 rail3 rail4 rail5 rail6 rail7"

static void preferred_seeds(void) {
    preferred("two-of-eight", (Pref[]){{ALL8, NULL, 2}}, 1);
    preferred("must-include", (Pref[]){{ALL8, "rail5", 2}}, 1);
    preferred("must-two-switches", (Pref[]){{ALL8, "rail0 rail2", 3}}, 1);
    preferred("fewest-numa", (Pref[]){{"rail0 rail1 rail3 rail4 rail5 rail6 rail7", NULL, 7}}, 1);
    preferred("vf-units", (Pref[]){{"rail1-vf0 rail1-vf1 rail1-vf2 rail2-vf0 rail0", NULL, 3}}, 1);
    preferred("two-containers", (Pref[]){{"rail0 rail1", NULL, 1}, {"rail4 rail5", "rail5", 1}}, 2);
    preferred("size-zero", (Pref[]){{ALL8, NULL, 0}}, 1);
    preferred("size-negative", (Pref[]){{ALL8, "rail1", -5}}, 1);
    preferred("size-too-big", (Pref[]){{"rail1 rail6", NULL, 2147483647}}, 1);
    preferred("must-more-than-size", (Pref[]){{ALL8, "rail0 rail1 rail2", 2}}, 1);
    preferred("must-not-available", (Pref[]){{"rail1 rail2", "rail3", 2}}, 1);
    preferred("unknown-and-dups", (Pref[]){{"rail0 rail0 rail99 rail4 x", "rail0 rail0", 2}}, 1);
    preferred("no-containers", NULL, 0);
}

/* ---- PreStartContainer -------------------------------------------------- */

static void prestart(const char *name, const char *ids) {
    V1beta1__PreStartContainerRequest req = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;
    char copy[512], *v[32];

    req.devices_ids = v;
    req.n_devices_ids = split(ids, copy, sizeof(copy), v, 32);
    write_msg("dp-prestart", name, NULL, 0, &req.base, 0);
}

static void prestart_seeds(void) {
    prestart("one-unit", "rail0");
    prestart("all-of-a", "rail0 rail1 rail2 rail3");
    prestart("vf-units", "rail1-vf2 rail2-vf1");
    prestart("empty", "");
    prestart("bad-twice", "rail0 rail0");
    prestart("bad-unknown", "rail0 nope");
    prestart("bad-too-many", "rail0 rail1 rail2 rail3 rail4 rail5 rail6 rail7 rail0 rail1");
}

/* ---- ListAndWatch / GetDevicePluginOptions ------------------------------ */

static void listwatch_seeds(void) {
    V1beta1__Empty e = V1BETA1__EMPTY__INIT;
    /* what a kubelet sends, and fields an Empty does not have */
    static const uint8_t unknown_field[] = {0x0a, 0x03, 'a', 'b', 'c', 0x10, 0x01};
    static const uint8_t bad_varint[] = {0x08, 0xff, 0xff, 0xff};

    write_msg("dp-listwatch", "empty", NULL, 0, &e.base, 0);
    write_bytes("dp-listwatch", "unknown-fields", NULL, 0, unknown_field, sizeof(unknown_field));
    write_bytes("dp-listwatch", "bad-varint", NULL, 0, bad_varint, sizeof(bad_varint));
}

/* ---- PodResources ------------------------------------------------------- */

/* A pod with containers; each container: "resource:id,id;resource:id". */
typedef struct PodSpec {
    const char *ns, *name;
    const char *containers[3];
} PodSpec;

typedef struct PodBuf {
    V1__PodResources pod;
    V1__ContainerResources c[3], *cp[3];
    V1__ContainerDevices d[3][4], *dp[3][4];
    char copy[3][512];
    char *ids[3][4][16];
} PodBuf;

static void pod_build(PodBuf *b, const PodSpec *s) {
    v1__pod_resources__init(&b->pod);
    b->pod.namespace_ = (char *)s->ns;
    b->pod.name = (char *)s->name;
    b->pod.containers = b->cp;
    for (size_t i = 0; i < 3 && s->containers[i]; i++) {
        V1__ContainerResources *c = &b->c[i];
        char *save = NULL;

        v1__container_resources__init(c);
        c->name = "main";
        c->devices = b->dp[i];
        snprintf(b->copy[i], sizeof(b->copy[i]), "%s", s->containers[i]);
        for (char *dev = strtok_r(b->copy[i], ";", &save); dev && c->n_devices < 4;
             dev = strtok_r(NULL, ";", &save)) {
            V1__ContainerDevices *d = &b->d[i][c->n_devices];
            char *colon = strchr(dev, ':'), *save2 = NULL;

            v1__container_devices__init(d);
            if (colon)
                *colon = 0;
            d->resource_name = dev;
            d->device_ids = b->ids[i][c->n_devices];
            for (char *id = colon ? strtok_r(colon + 1, ",", &save2) : NULL;
                 id && d->n_device_ids < 16; id = strtok_r(NULL, ",", &save2))
                d->device_ids[d->n_device_ids++] = id;
            b->dp[i][c->n_devices++] = d;
        }
        b->cp[b->pod.n_containers++] = c;
    }
}

static void pod_get(const char *name, uint8_t mode, const PodSpec *s) {
    V1__GetPodResourcesResponse g = V1__GET_POD_RESOURCES_RESPONSE__INIT;
    PodBuf b;

    if (s) {
        pod_build(&b, s);
        g.pod_resources = &b.pod;
    }
    write_msg("podresources", name, &mode, 1, &g.base, 0);
}

static void pod_list(const char *name, uint8_t mode, const PodSpec *s, size_t n) {
    V1__ListPodResourcesResponse l = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
    PodBuf b[4];
    V1__PodResources *pp[4];

    l.pod_resources = pp;
    for (size_t i = 0; i < n; i++) {
        pod_build(&b[i], &s[i]);
        pp[l.n_pod_resources++] = &b[i].pod;
    }
    write_msg("podresources", name, &mode, 1, &l.base, 0);
}

static void podresources_seeds(void) {
    const PodSpec pod = {"team-a", "pod-a", {"railgate.io/a:rail0,rail1;nvidia.com/gpu:GPU-0"}};
    const PodSpec two_containers = {
        "team-a", "pod-a", {"railgate.io/a:rail0", "railgate.io/a:rail2,rail0;example.com/x:y"}};
    const PodSpec two_resources = {
        "team-a", "pod-a", {"railgate.io/a:rail0", "railgate.io/b:rail4"}};
    const PodSpec other = {"team-b", "pod-a", {"railgate.io/b:rail4"}};
    const PodSpec no_units = {"team-a", "pod-a", {"example.com/x:a,b"}};
    const PodSpec list[] = {other, {"team-a", "pod-b", {"railgate.io/a:rail3"}}, pod};
    static const uint8_t garbage[] = {0, 0x0a, 0x05, 0x0a, 0xff};

    pod_get("get-pod", 0, &pod);
    pod_get("get-two-containers", 0, &two_containers);
    pod_get("get-two-resources", 0, &two_resources);
    pod_get("get-no-units", 0, &no_units);
    pod_get("get-no-pod", 0, NULL);
    pod_list("list-unimplemented", 1, list, 3);
    pod_list("list-unknown", 2, list, 3);
    pod_list("list-no-match", 1, list, 2);
    pod_list("list-two-resources", 2, &two_resources, 1);
    pod_get("unavailable", 3, &pod);
    write_bytes("podresources", "get-garbage", NULL, 0, garbage, sizeof(garbage));
}

/* ---- the node agent's frames -------------------------------------------- */

/* m framed as on the socket, after a mode byte: 0, the frame as it came;
 * cut: drop that many bytes off its end; magic: replace the magic. */
static void agent_frame(const char *target, const char *name, const ProtobufCMessage *m, size_t cut,
                        const char *magic) {
    uint8_t mode = 0, *buf = NULL;
    size_t len = 0;

    if (agent_frame_pack(m, 1u << 20, &buf, &len) < 0) {
        failed = 1;
        return;
    }
    if (magic)
        memcpy(buf, magic, 4);
    write_bytes(target, name, &mode, 1, buf, len > cut ? len - cut : 0);
    free(buf);
}

/* m's payload alone, after mode byte 1 (the target frames it). */
static void agent_payload(const char *target, const char *name, const ProtobufCMessage *m) {
    uint8_t mode = 1;

    write_msg(target, name, &mode, 1, m, 0);
}

static void agent_request_seeds(void) {
    AgentRequest req = AGENT_REQUEST__INIT;
    AgentPodUnits q = AGENT_POD_UNITS__INIT;
    AgentReport rep = AGENT_REPORT__INIT;
    static const uint8_t garbage[] = {0, 'R', 'G', 'A', 'P', 0, 0, 0, 3, 0x0a, 0xff, 0x01};
    static const uint8_t header_only[] = {0, 'R', 'G', 'A', 'P', 0, 0, 0, 0};
    static const uint8_t length_max[] = {0, 'R', 'G', 'A', 'P', 0xff, 0xff, 0xff, 0xff, 0x08, 0x01};

    req.version = AGENT_PROTOCOL_VERSION;
    req.body_case = AGENT_REQUEST__BODY_POD_UNITS;
    req.pod_units = &q;
    q.namespace_ = "team-a";
    q.name = "pod-a";
    q.uid = "0d2c6a4e-5b8f-4d7e-9c3a-1f2e3d4c5b6a";
    agent_frame("agent-request", "pod-units", &req.base, 0, NULL);
    agent_payload("agent-request", "pod-units-payload", &req.base);
    agent_frame("agent-request", "bad-truncated", &req.base, 5, NULL);
    agent_frame("agent-request", "bad-magic", &req.base, 0, "HTTP");
    q.uid = "";
    agent_frame("agent-request", "pod-units-no-uid", &req.base, 0, NULL);
    q.name = "pod a";
    agent_frame("agent-request", "bad-name-space", &req.base, 0, NULL);
    q.name = "";
    agent_frame("agent-request", "bad-name-empty", &req.base, 0, NULL);
    q.name = "pod-a";
    req.version = 2;
    agent_frame("agent-request", "bad-version-2", &req.base, 0, NULL);
    req.version = 0;
    agent_frame("agent-request", "bad-version-missing", &req.base, 0, NULL);
    req.version = AGENT_PROTOCOL_VERSION;
    req.body_case = AGENT_REQUEST__BODY_REPORT;
    req.report = &rep;
    rep.command = AGENT_COMMAND__ADD;
    rep.duration_ns = 12345678;
    rep.rails = 8;
    rep.tenant = "tenant-a";
    agent_frame("agent-request", "report-add", &req.base, 0, NULL);
    agent_payload("agent-request", "report-add-payload", &req.base);
    rep.command = AGENT_COMMAND__GC;
    rep.result_code = 102;
    rep.tenant = "";
    agent_frame("agent-request", "report-gc-failed", &req.base, 0, NULL);
    rep.command = (AgentCommand)9;
    agent_frame("agent-request", "bad-report-command", &req.base, 0, NULL);
    rep.command = (AgentCommand)-1; /* a 10-byte varint */
    agent_frame("agent-request", "bad-report-command-negative", &req.base, 0, NULL);
    rep.command = AGENT_COMMAND__DEL;
    rep.result_code = 1000;
    agent_frame("agent-request", "bad-report-code", &req.base, 0, NULL);
    req.body_case = AGENT_REQUEST__BODY__NOT_SET;
    agent_frame("agent-request", "bad-no-question", &req.base, 0, NULL);
    write_bytes("agent-request", "bad-garbage", NULL, 0, garbage, sizeof(garbage));
    write_bytes("agent-request", "bad-header-only", NULL, 0, header_only, sizeof(header_only));
    write_bytes("agent-request", "bad-length-max", NULL, 0, length_max, sizeof(length_max));
}

static void agent_reply_seeds(void) {
    AgentReply rep = AGENT_REPLY__INIT;
    AgentUnits u = AGENT_UNITS__INIT;
    static char *ids[AGENT_MAX_IDS + 1], names[AGENT_MAX_IDS + 1][16];

    for (size_t i = 0; i <= AGENT_MAX_IDS; i++) {
        snprintf(names[i], sizeof(names[i]), "rail%zu", i);
        ids[i] = names[i];
    }
    rep.version = AGENT_PROTOCOL_VERSION;
    rep.units = &u;
    u.resource = "railgate.io/a";
    u.ids = ids;
    u.n_ids = 2;
    agent_frame("agent-reply", "units", &rep.base, 0, NULL);
    agent_payload("agent-reply", "units-payload", &rep.base);
    agent_frame("agent-reply", "bad-truncated", &rep.base, 3, NULL);
    u.n_ids = AGENT_MAX_IDS + 1;
    agent_frame("agent-reply", "bad-too-many-ids", &rep.base, 0, NULL);
    u.n_ids = 1;
    u.resource = "railgate.io/a b";
    agent_frame("agent-reply", "bad-resource", &rep.base, 0, NULL);
    rep.units = NULL;
    agent_frame("agent-reply", "no-units", &rep.base, 0, NULL);
    rep.status = AGENT_STATUS__UNAVAILABLE;
    rep.message = "kubelet's PodResources API at /var/lib/kubelet/pod-resources/kubelet.sock did "
                  "not answer within 15 s (timeouts.podResourcesSeconds of the node config)";
    agent_frame("agent-reply", "unavailable", &rep.base, 0, NULL);
    rep.status = (AgentStatus)42;
    agent_frame("agent-reply", "bad-status", &rep.base, 0, NULL);
    rep.status = AGENT_STATUS__OK;
    rep.version = 2;
    agent_frame("agent-reply", "bad-version-2", &rep.base, 0, NULL);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
        return 2;
    }
    out_dir = argv[1];
    allocate_seeds();
    preferred_seeds();
    prestart_seeds();
    listwatch_seeds();
    podresources_seeds();
    agent_request_seeds();
    agent_reply_seeds();
    return failed;
}
