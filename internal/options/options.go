package options

import (
	"fmt"
	"sort"
	"strings"
)

// Type is an option's value type, as Fluss's ConfigBuilder names it.
type Type uint8

// Option types.
const (
	String Type = iota
	Int         // a 32-bit integer
	Long        // a 64-bit integer
	Bool
	Double
	Duration // a number with a unit (ms, s, min, h, d); a bare number is milliseconds for server options
	Memory   // a size: a number with b, kb/k, mb/m, gb/g, tb/t
	Enum
	List     // comma-separated values
	Map      // comma-separated key:value pairs
	Password // a string never shown back
)

func (t Type) String() string {
	return [...]string{"string", "int", "long", "boolean", "double", "duration", "memory", "enum", "list", "map", "password"}[t]
}

// Scope says where an option is set.
type Scope uint8

// Option scopes.
const (
	Server Scope = iota // server.yaml or --set
	Table               // a table descriptor's properties (CREATE_TABLE, ALTER_TABLE)
	Both                // either: a server value is the default of the table's
	Client              // a client's configuration; a server ignores it
)

func (s Scope) String() string { return [...]string{"server", "table", "both", "client"}[s] }

// Version is a set of Fluss versions.
type Version uint8

// Fluss versions an option can exist in. A Strom-only option has none.
const (
	V091        Version = 1 << iota // Apache Fluss 0.9.1
	V10                             // Apache Fluss 1.0
	Both09And10 = V091 | V10
)

func (v Version) String() string {
	var parts []string
	if v&V091 != 0 {
		parts = append(parts, "0.9.1")
	}
	if v&V10 != 0 {
		parts = append(parts, "1.0")
	}
	if len(parts) == 0 {
		return "Strom"
	}
	return strings.Join(parts, ", ")
}

// Status is what Strom does with an option that is set.
type Status uint8

// Option statuses.
const (
	// Served: Strom implements the option.
	Served Status = iota
	// NoEffect: accepted and validated by type, but nothing in Strom reads it (Why says why);
	// a server option that is set is reported by a WARN at start.
	NoEffect
	// Refused: setting it to anything but its default is an error (Why says why): the server
	// does not start, a table is not created or altered (INVALID_CONFIG_EXCEPTION).
	Refused
)

func (s Status) String() string { return [...]string{"served", "no effect", "refused"}[s] }

// Option is the declaration of one option.
type Option struct {
	Key string
	// Prefix marks a family of keys: Key ends with "." and every key starting with it is this
	// option (datalake.iceberg.*, security.sasl.listener.name.*, s3.*).
	Prefix  bool
	Type    Type
	Default string // Strom's default, as text; "" for none
	// FlussDefault is Fluss's default where it differs from Default ("" when the same,
	// NoFlussDefault when Fluss has none).
	FlussDefault string
	Scope        Scope
	Versions     Version
	Status       Status
	Why          string // for NoEffect and Refused: what Strom lacks; for Served, a difference from Fluss if any
	Desc         string // one line, ours
	See          string // a page of docs/ (and anchor) that says more, "" for none

	// Dynamic marks the server options Fluss 1.0 lets ALTER_CLUSTER_CONFIGS change at runtime
	// (fluss-server DynamicServerConfig; 0.9.1 allows only datalake.format and
	// kv.rocksdb.shared-rate-limiter.bytes-per-sec). A change is validated by Type and Check.
	Dynamic bool

	// Table options only.
	EnumClass string   // the Java enum class, for Fluss's error messages
	Enum      []string // the enum's constants as Java prints them
	Alterable bool     // ALTER_TABLE may set or reset it (Fluss 1.0's list)

	// FlussSource says where Fluss reads a key that its ConfigOptions does not declare (a
	// prefix family, a file system plugin); "" for ConfigOptions' keys and Strom's own.
	FlussSource string

	// Parser names the package that parses the option itself instead of through an accessor
	// here, while that package is rewritten by its owner ("" when parsed here).
	Parser string

	// check validates a value beyond its type (set by the typed constructors).
	check func(string) error
}

// NoFlussDefault is FlussDefault of an option Fluss declares without a default where Strom
// has one.
const NoFlussDefault = "none"

var (
	byKey    = map[string]*Option{}
	prefixes []*Option // Prefix options, longest key first
)

// register adds o to the registry; a key declared twice is a programming error.
func register(o Option) *Option {
	if _, dup := byKey[o.Key]; dup {
		panic("options: " + o.Key + " declared twice")
	}
	p := &o
	byKey[o.Key] = p
	if o.Prefix {
		prefixes = append(prefixes, p)
		sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i].Key) > len(prefixes[j].Key) })
	}
	return p
}

func registerAll(os []Option) bool {
	for _, o := range os {
		register(o)
	}
	return true
}

// Lookup returns the declaration of key: the option of that exact key, else the longest
// prefix family that covers it.
func Lookup(key string) (*Option, bool) {
	if o, ok := byKey[key]; ok {
		return o, true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(key, p.Key) {
			return p, true
		}
	}
	return nil, false
}

// All returns every declaration sorted by key.
func All() []*Option {
	out := make([]*Option, 0, len(byKey))
	for _, o := range byKey {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Check validates value for the option declared as key: by its type and any constraint of
// its accessor. It does not apply Status.
func (o *Option) Check(value string) error {
	if err := checkType(o.Type, o.Scope, value); err != nil {
		return err
	}
	if o.check != nil {
		return o.check(value)
	}
	return nil
}

// IsDefault reports whether value is the option's default (Strom's or Fluss's), compared as
// text, case-insensitively.
func (o *Option) IsDefault(value string) bool {
	v := strings.TrimSpace(value)
	return (o.Default != "" && strings.EqualFold(v, o.Default)) ||
		(o.FlussDefault != "" && o.FlussDefault != NoFlussDefault && strings.EqualFold(v, o.FlussDefault))
}

// Refusal returns the error of setting a Refused option to value, nil when the option is not
// refused or value is its default.
func (o *Option) Refusal(value string) error {
	if o.Status != Refused || o.IsDefault(value) {
		return nil
	}
	return fmt.Errorf("option %s is not supported by Strom: %s", o.Key, o.Why)
}

func checkType(t Type, s Scope, value string) error {
	var err error
	switch t {
	case Int:
		_, err = parseInt(value, 32)
	case Long:
		_, err = parseInt(value, 64)
	case Bool:
		_, err = parseBool(value)
	case Double:
		_, err = parseDouble(value)
	case Duration:
		if s == Table {
			_, err = ParseFlussDuration(value)
		} else {
			_, err = ParseDuration(value)
		}
	case Memory:
		_, err = ParseBytes(value)
	case Map:
		for _, e := range strings.Split(value, ",") {
			if strings.TrimSpace(e) == "" {
				continue
			}
			if _, _, ok := strings.Cut(e, ":"); !ok {
				err = fmt.Errorf("map entry %q: want key:value", strings.TrimSpace(e))
				break
			}
		}
	}
	return err
}
