// SPDX-License-Identifier: Apache-2.0
// Command kubeadm is upstream's kubeadm, built from the release pinned in
// go.mod; kind's node image (kind/node-image.sh) bootstraps its nodes with it.
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	kubeadmerrors.HandleError(app.Run())
}
