// etcd at the version the chosen Kubernetes release pins, started the way the etcd binary starts.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
