// SPDX-License-Identifier: Apache-2.0
//go:build tools

// Package tool pins the helm CLI that scripts/helm.sh builds: go.mod and
// go.sum here fix helm.sh/helm/v3 and every module it builds with, and this
// import keeps `go mod tidy` from dropping them.
package tool

import _ "helm.sh/helm/v3/cmd/helm"
