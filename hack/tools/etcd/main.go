// Command etcd is etcd's own server entry point, built from the Go module
// proxy so that the test bed needs no prebuilt download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
