package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// HTTP holds the options of the HTTP listener beyond its address: the REST API and web
// console (docs/rest.md, docs/console.md) and TLS.
type HTTP struct {
	// RestDisabled turns the REST API (/api/v1/) and the console (/console/) off
	// (http.rest.enabled=false). They are on whenever the HTTP listener is.
	RestDisabled bool
	// RestMaxRequestSize bounds a REST request body in bytes (http.rest.max-request-size,
	// default 8 MiB); 0 means the default.
	RestMaxRequestSize int64
	// RestTokens maps the hex SHA-256 of a bearer token to the SASL user it stands for
	// (http.rest.tokens: "alice:HEX, bob:HEX"); the tokens themselves are never configured.
	RestTokens map[string]string
	// TLSCertFile and TLSKeyFile (http.tls.cert-file, http.tls.key-file) make the listener
	// serve HTTPS only; both or neither.
	TLSCertFile, TLSKeyFile string
}

// TLS reports whether the HTTP listener serves HTTPS.
func (h HTTP) TLS() bool { return h.TLSCertFile != "" || h.TLSKeyFile != "" }

func (h *HTTP) set(key, value string) error {
	switch key {
	case "http.rest.enabled":
		on, err := strconv.ParseBool(value)
		h.RestDisabled = !on
		return err
	case "http.rest.max-request-size":
		n, err := ParseBytes(value)
		if err != nil {
			return err
		}
		if n < 1024 {
			return fmt.Errorf("%d bytes is too small (at least 1kb)", n)
		}
		h.RestMaxRequestSize = n
	case "http.rest.tokens":
		h.RestTokens = map[string]string{}
		for _, e := range strings.Split(value, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			user, sum, ok := strings.Cut(e, ":")
			b, err := hex.DecodeString(strings.TrimSpace(sum))
			if !ok || strings.TrimSpace(user) == "" || err != nil || len(b) != sha256.Size {
				return fmt.Errorf("%q: want USER:SHA256 (the token's SHA-256 in hex, e.g. from sha256sum)", e)
			}
			h.RestTokens[strings.ToLower(strings.TrimSpace(sum))] = strings.TrimSpace(user)
		}
	case "http.tls.cert-file":
		h.TLSCertFile = value
	case "http.tls.key-file":
		h.TLSKeyFile = value
	}
	return nil
}
