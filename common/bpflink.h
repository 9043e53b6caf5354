/* BPF links that hold an XDP program on a link, which no netlink request can detach. */
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
