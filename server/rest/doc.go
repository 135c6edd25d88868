// Package rest is Strom's HTTP gateway: a REST API over the Fluss protocol, in the shape of
// Fluss's FIP-49 gateway (docs/rest.md lists every route and every difference from FIP-49).
//
// The gateway is stateless and is only a client: every request is served through package
// fluss, connected to the node's own Fluss listener. Writes, lookups and scans therefore take
// exactly the path (and the authorization checks) of any other Fluss client; nothing here
// touches the catalog or the storage directly.
//
// Invariants:
//   - Every error response is JSON with the Fluss error code and name (errors.go).
//   - Every request body is read through a limit (Options.MaxBodyBytes); a larger body is
//     refused with 413 and RECORD_TOO_LARGE_EXCEPTION before it is decoded.
//   - With a SASL listener, a request runs on a connection logged in as the user of its
//     HTTP Basic credentials (or of the user a bearer token stands for), so the listener's
//     ACLs apply unchanged; the pool keys on a SHA-256 of user and password.
package rest
