// SPDX-License-Identifier: Apache-2.0
//go:build tools

// Package tool pins the containerd that tests/k8s/build.sh builds
// (containerd, containerd-shim-runc-v2, ctr from the Go module proxy): go.mod
// and go.sum fix github.com/containerd/containerd/v2 and every module its
// commands build with, and these imports (what the commands' mains import)
// keep `go mod tidy` from dropping them.
package tool

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	_ "github.com/containerd/containerd/v2/cmd/containerd/command"
	_ "github.com/containerd/containerd/v2/cmd/ctr/app"
	_ "github.com/containerd/containerd/v2/pkg/shim"
)
