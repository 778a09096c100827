// A web server for WebApps on the cluster tier: answers every path with the pod's name, so a test can
// tell which pod behind a Service answered. Listens on $PORT, 8080 when unset.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	log.Printf("serving on :%s", port)
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
