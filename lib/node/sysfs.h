/* SPDX-License-Identifier: Apache-2.0 */
/* sysfs and procfs lookups for PCI NICs, SR-IOV VFs, RDMA and GPU nodes. */
#pragma once

#include <stddef.h>

/*
 * Every function takes the root it reads from ("/sys" or "/proc" on a real
 * node, a fixture tree in tests) and writes a NUL-terminated result of at
 * most n bytes. -ENOENT when the thing does not exist. Names (pci, netdev,
 * rdma) must be a single path component: -EINVAL otherwise. A result that
 * does not fit in n is -ENAMETOOLONG, never truncated; content that is not
 * what the kernel writes there is -EBADMSG. Nothing is written on failure.
 */

/* First netdev of a PCI function: <sys>/bus/pci/devices/<pci>/net/<name>. */
int sysfs_pci_netdev(const char *sys, const char *pci, char *ret, size_t n);
/* PCI address of a netdev: basename of <sys>/class/net/<name>/device. */
int sysfs_netdev_pci(const char *sys, const char *netdev, char *ret, size_t n);
/* First RDMA device of a PCI function: <sys>/bus/pci/devices/<pci>/infiniband/<name>. */
int sysfs_pci_rdma(const char *sys, const char *pci, char *ret, size_t n);
/* PCI address of VF vf of a PF: basename of <sys>/bus/pci/devices/<pf>/virtfn<vf>. */
int sysfs_vf_pci(const char *sys, const char *pf_pci, unsigned vf, char *ret, size_t n);
/* PCI address of the PF of a VF: basename of <sys>/bus/pci/devices/<vf>/physfn;
 * -ENOENT for a function that is no VF. */
int sysfs_vf_physfn(const char *sys, const char *vf_pci, char *ret, size_t n);
/* Number of VFs enabled on a PF (sriov_numvfs), or -ENOENT. */
int sysfs_pf_numvfs(const char *sys, const char *pf_pci, unsigned *ret);
/* uverbs char device name ("uverbs3") of an RDMA device: the
 * <sys>/class/infiniband_verbs/uverbs* whose ibdev file holds rdma. */
int sysfs_rdma_uverbs(const char *sys, const char *rdma, char *ret, size_t n);
/* umad char device names of every port of an RDMA device, NULL-terminated,
 * in port order ({"umad0", "umad1"}): the <sys>/class/infiniband_mad/umad*
 * whose ibdev file holds rdma (their port file gives the order). -ENOENT
 * when there is none (ib_umad not loaded), -EBADMSG for a port file of
 * rdma's that is no port number. The caller frees *ret (strv_free). */
int sysfs_rdma_umads(const char *sys, const char *rdma, char ***ret);
/* NVIDIA driver view of a GPU: <proc>/driver/nvidia/gpus/<pci>/information
 * gives "Device Minor:" and "GPU UUID:". uuid may be NULL; it is "" when the
 * file has no UUID line. */
int procfs_nvidia_gpu(const char *proc, const char *pci, int *ret_minor, char *uuid, size_t n);
/* The PCIe root complex of a PCI function as Kubernetes names it
 * (resource.kubernetes.io/pcieRoot, "pci0000:17"): the first component
 * after "devices/" of where <sys>/bus/pci/devices/<pci> links to. */
int sysfs_pci_root(const char *sys, const char *pci, char *ret, size_t n);
/* DRM render node name ("renderD128") of a GPU: <sys>/bus/pci/devices/<pci>/drm/renderD*. */
int sysfs_drm_render(const char *sys, const char *pci, char *ret, size_t n);
