// The pause process of the real node's sandbox image: it holds the pod's namespaces and
// exits at once on SIGINT or SIGTERM, as the upstream pause binary does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
