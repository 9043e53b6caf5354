/* SPDX-License-Identifier: Apache-2.0 */
/* The railgate CNI plugin: command environment, network config and errors. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* CNI spec error codes, and railgate's own from 100 up. */
enum {
    CNI_ERR_INCOMPATIBLE_VERSION = 1,
    CNI_ERR_UNSUPPORTED_FIELD = 2,
    CNI_ERR_UNKNOWN_CONTAINER = 3,
    CNI_ERR_INVALID_ENV = 4,
    CNI_ERR_IO = 5,
    CNI_ERR_DECODE = 6,
    CNI_ERR_INVALID_CONFIG = 7,
    CNI_ERR_TRY_AGAIN = 11,
    CNI_ERR_NOT_AVAILABLE = 50,
    CNI_ERR_TENANT = 100,  /* the pod's namespace is not of its units' tenant */
    CNI_ERR_DEVICE = 101,  /* a device the pod does not hold, or one that is missing */
    CNI_ERR_NETLINK = 102, /* the kernel refused a change */
    CNI_ERR_CHECK = 103,   /* CHECK found drift */
    CNI_ERR_VRF = 104,     /* VRF-device mode without kernel support */
};

#define CNI_STDIN_MAX (1u << 20)
#define CNI_DEFAULT_NODE_CONFIG "/etc/railgate/node.json"
#define CNI_NODE_CONFIG_ENV "RAILGATE_NODE_CONFIG"

typedef enum CniCommand {
    CNI_CMD_ADD = 0,
    CNI_CMD_DEL,
    CNI_CMD_CHECK,
    CNI_CMD_VERSION,
    CNI_CMD_STATUS,
    CNI_CMD_GC,
} CniCommand;

typedef struct CniEnv {
    CniCommand command;
    const char *container_id; /* CNI_CONTAINERID */
    const char *netns;        /* CNI_NETNS, may be NULL on DEL */
    const char *ifname;       /* CNI_IFNAME */
    const char *path;         /* CNI_PATH */
    /* from CNI_ARGS (copies) */
    char *pod_ns, *pod_name, *pod_uid, *sandbox_id;
} CniEnv;

typedef struct CniConf {
    char *cni_version;
    char *name;
    json_t *root; /* the whole stdin document */
    char *raw;    /* the stdin bytes */
    size_t raw_len;
    json_t *prev_result;       /* borrowed from root, or NULL; checked for ADD and CHECK */
    char *device_id;           /* Multus' device id, or NULL */
    json_t *valid_attachments; /* GC: borrowed, or NULL */
    char ignored[512];         /* DEL, GC, STATUS: what ADD would have refused, for the log */
} CniConf;

const char *cni_command_name(CniCommand cmd);
/* Read the command and its variables; err->code is 4 and names the variable. */
int cni_env_parse(CniEnv *ret, RgError *err);
void cni_env_done(CniEnv *e);

/* Parse stdin for a command; err->code per the spec (1, 2, 6, 7). Refused by
 * ADD and CHECK: keys that name a host device, tenant or rails (2, at any
 * depth, in any case), "ipam" (7: the node config decides IPAM), a malformed
 * prevResult (7). DEL, GC and STATUS ignore them (ret->ignored says so). */
int cni_conf_parse(const char *raw, size_t len, CniCommand cmd, CniConf *ret, RgError *err);
void cni_conf_done(CniConf *c);

/* stdin's cniVersion when it reads as a version, for the error answer; or NULL. */
char *cni_conf_peek_version(const char *raw, size_t len);
/* Is key the field want as Go's encoding/json would match it (case-insensitive)? */
bool cni_key_equal(const char *key, const char *want);

bool cni_version_supported(const char *v);
/* Spec version a >= b ("1.1.0" >= "1.0.0"). */
bool cni_version_at_least(const char *a, const char *b);
/* {"cniVersion":..,"supportedVersions":[..]} */
json_t *cni_version_result(const char *requested);
