/* SPDX-License-Identifier: Apache-2.0 */
/* BPF programs on a link that no netlink request detaches: XDP held by a
 * BPF link, and tcx (6.6+). */
#pragma once

#include <stdint.h>

/*
 * Detach every XDP BPF link (BPF_LINK_CREATE, BPF_XDP) of program prog_id
 * whose device is ifindex, through the bpf() syscall: BPF_LINK_GET_NEXT_ID,
 * BPF_LINK_GET_FD_BY_ID (CAP_SYS_ADMIN), BPF_OBJ_GET_INFO_BY_FD,
 * BPF_LINK_DETACH (5.9+). A BPF link names its device by ifindex alone;
 * the program id (global, and only its holder attaches it) ties it to the
 * link the caller read. How many were detached in *ret_n.
 */
int xdp_bpf_links_detach(int ifindex, uint32_t prog_id, unsigned *ret_n);

/*
 * The tcx programs (BPF_TCX_INGRESS, BPF_TCX_EGRESS: 6.6+) on the link at
 * ifindex in the caller's namespace, attached by BPF_PROG_ATTACH or held
 * by a BPF link: how many in *ret_n (BPF_PROG_QUERY); 0 on a kernel
 * without tcx (it answers EINVAL: nothing can be attached there).
 */
int tcx_count(int ifindex, unsigned *ret_n);
/* Every one of them detached: a BPF link's by BPF_LINK_DETACH, the others
 * by BPF_PROG_DETACH; how many in *ret_n. */
int tcx_detach_all(int ifindex, unsigned *ret_n);
