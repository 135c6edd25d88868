package metrics

import (
	"strings"

	"github.com/stromdb/strom/internal/wire"
)

// requestName returns the value of the "request" label for an API: Fluss's request names
// (fluss-rpc RequestsMetrics) for the APIs Fluss measures, and the lower camel case of the
// API name for the others (CREATE_TABLE -> createTable). Strom has no followers, so every
// FETCH_LOG comes from a client.
func requestName(k wire.APIKey) string {
	switch k {
	case wire.ProduceLog:
		return "produceLog"
	case wire.PutKv:
		return "putKv"
	case wire.Lookup:
		return "lookup"
	case wire.PrefixLookup:
		return "prefixLookup"
	case wire.FetchLog:
		return "fetchLogClient"
	case wire.GetMetadata:
		return "metadata"
	}
	return lowerCamel(k.String())
}

func lowerCamel(s string) string {
	var b strings.Builder
	for i, part := range strings.Split(strings.ToLower(s), "_") {
		if part == "" {
			continue
		}
		if i > 0 {
			b.WriteString(strings.ToUpper(part[:1]))
			part = part[1:]
		}
		b.WriteString(part)
	}
	return b.String()
}
