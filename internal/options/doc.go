// Package options is the one registry of every option Strom reads or a Fluss user can set:
// server options (server.yaml, --set), table options (a table descriptor's `table.*`
// properties) and the client options Fluss declares beside them. Each option is declared once,
// here, with its key, type, default, scope, the Fluss versions that have it, its status in
// Strom and a one-line description; docs/configuration.md's option tables are generated from
// these declarations (`go generate ./internal/options`), and a test holds the registry against
// the option keys of Fluss 0.9.1 and 1.0 (testdata/, extracted from fluss-common's
// ConfigOptions.java), so that no Fluss option can be left unclassified.
//
// Invariants: a key is declared at most once; a key Fluss's ConfigOptions has is declared with
// exactly the versions that have it (TestRegistryClassifiesEveryFlussKey); a served option is
// parsed by its typed accessor (Key.Parse, Key.Get), except the options whose Parser names the
// package that still parses them itself (listener lists in server/config, the lake options in
// server/lakeconf, KV snapshot options in server/kvsnap, remote storage options in
// server/remote), which are declared here all the same.
//
// Adding an option:
//
//  1. Declare it in the file of its concern (server.go for served server options,
//     server_fluss.go for Fluss server options Strom does not serve, storage.go for remote
//     storage, table.go, client.go) with
//     Key, Type, Default (the default Strom applies, "" for none), Scope, Versions (Fluss's
//     versions that have the key; 0 for a Strom option), Status and Desc. A Fluss key that Strom
//     does not serve yet is declared NoEffect (accepted, a WARN at start says why) or Refused
//     (the server does not start; a table option is refused with INVALID_CONFIG_EXCEPTION),
//     with Why saying what is missing.
//  2. To serve it, declare it with one of the typed constructors (Int32, Duration, Bytes, ...)
//     instead of a plain Option, set Status to Served, and read it only through that accessor
//     (Get over the raw option map, or Parse in server/config.Config.Set).
//  3. Run `go generate ./internal/options` to rewrite docs/configuration.md's tables;
//     TestDocUpToDate fails until the committed doc matches.
package options
