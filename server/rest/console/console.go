// Package console is Strom's web console: static HTML, CSS and JavaScript embedded in the
// binary and served by `strom serve` at Path. The page is only a client of the REST API
// (package rest) and of /metrics; it has no server-side state and no build step.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// Path is where the console is mounted.
const Path = "/console/"

//go:embed assets
var assets embed.FS

// Handler serves the console's files under Path.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/: a build error, not input
	}
	files := http.StripPrefix(Path, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
