/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec files for prepared DRA claims: what the runtime gives the containers. */
#pragma once

#include <stddef.h>

#include "edits.h"
#include "error.h"

#define CDI_DEFAULT_DIR "/var/run/cdi" /* containerd 2.x and CRI-O read it */
#define CDI_VERSION "0.6.0"            /* hostPath (0.5.0), device names starting with a digit */
#define CDI_CLASS "unit"

/*
 * One spec file per claim, "<vendor>-unit_<claim uid>.json" in cdi_dir, of
 * kind "<vendor>/unit" (vendor: the driver's domain, "railgate.io"):
 *   - the spec's containerEdits carry the claim's environment (edits.h:
 *     CUDA/NCCL/UCX and RAILGATE_*), applied once whatever number of its
 *     devices a container gets: every variable names all the claim's rails;
 *   - one device per unit, "<claim uid>-<unit id>", with the unit's device
 *     nodes (path, devRoot + path as hostPath, rw) and RAILGATE_CLAIM=<uid>
 *     (CDI refuses a device without edits, and a NIC-only unit has no node).
 * Written atomically: a runtime reading the directory sees the old spec or
 * the new one.
 */
typedef struct CdiUnit {
    const char *unit;        /* unit id */
    const ContainerEdits *e; /* its device nodes (devices) */
} CdiUnit;

int cdi_spec_write(const char *cdi_dir, const char *vendor, const char *dev_root,
                   const char *claim_uid, const ContainerEdits *claim, const CdiUnit *units,
                   size_t n, RgError *err);
/* Idempotent: 0 when there is none. */
int cdi_spec_remove(const char *cdi_dir, const char *vendor, const char *claim_uid);
/* "<vendor>/unit=<claim uid>-<unit id>" */
int cdi_device_id(const char *vendor, const char *claim_uid, const char *unit, char *buf, size_t n);
int cdi_spec_path(const char *cdi_dir, const char *vendor, const char *claim_uid, char *buf,
                  size_t n);
