// SPDX-License-Identifier: Apache-2.0
// Command etcd is etcd's server, built from the release pinned in go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
