// Command s3emu is the S3 store of `make test-java-remote` in S3 mode (tests/javaremote/run.sh
// s3): gofakes3 with an in-memory backend on a free 127.0.0.1 port, one bucket. It prints
// "s3emu ready endpoint=http://127.0.0.1:PORT" once it listens and runs until killed.
// gofakes3 does not check signatures, so any keys do. Every GET of a .log object is logged to
// stderr as "GET <path> <User-Agent>", so the test can tell who read the tiered segments.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	bucket := flag.String("bucket", "strom", "the bucket to create")
	flag.Parse()
	backend := s3mem.New()
	if err := backend.CreateBucket(*bucket); err != nil {
		log.Fatalf("s3emu: create bucket: %v", err)
	}
	faker := gofakes3.New(backend, gofakes3.WithIntegrityCheck(true), gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("s3emu: %v", err)
	}
	fmt.Fprintf(os.Stdout, "s3emu ready endpoint=http://%s\n", ln.Addr())
	h := faker.Server()
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".log") {
			fmt.Fprintf(os.Stderr, "GET %s %s\n", r.URL.Path, r.UserAgent())
		}
		h.ServeHTTP(w, r)
	})))
}
