/* SPDX-License-Identifier: Apache-2.0 */
/* An SR-IOV VF's admin state, through its PF (vf.c). */
#pragma once

#include "attachment.h"
#include "error.h"
#include "nicns.h"

/* An SR-IOV VF's admin state through its PF, as the rail's vfConfig
 * asks. Record: the PF (from sysfs) and VF number, what will be set, and
 * each of those settings as the PF has it now, into n (nothing changes; a
 * NIC that is no VF, or whose rail keeps everything, records none). Apply:
 * set what was recorded to set. Restore: give back what was saved. Check:
 * the PF still has what was set. Each acts only on a recorded VF. */
int nic_vf_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err);
int nic_vf_apply(NicNs *ns, const AttachedNic *n, RgError *err);
int nic_vf_restore(NicNs *ns, const AttachedNic *n, RgError *err);
int nic_vf_check(NicNs *ns, const AttachedNic *n, RgError *err);
