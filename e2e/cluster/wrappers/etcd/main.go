// Wrapper main for etcd: go.etcd.io/etcd/server/v3 cannot be `go install`ed
// (its go.mod has replace directives), so we depend on it from this module.
// Mirrors upstream server/main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
