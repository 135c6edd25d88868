package metadata

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// memoryUnits maps Fluss memory-size unit labels (MemorySize.MemoryUnit, case-insensitive)
// to their multipliers; a missing label means bytes.
var memoryUnits = map[string]int64{
	"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// ParseFlussMemorySize parses a Fluss memory size option value such as "64mb", "1 gb", "4k"
// or "1024" (Java MemorySize.parseBytes: a non-negative integer, optional spaces, an optional
// unit label, case-insensitive, powers of 1024). Sizes that overflow int64 are rejected.
func ParseFlussMemorySize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fmt.Errorf("argument is an empty- or whitespace-only string")
	}
	pos := 0
	for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
		pos++
	}
	number, label := s[:pos], strings.ToLower(strings.TrimSpace(s[pos:]))
	if number == "" {
		return 0, fmt.Errorf("text does not start with a number")
	}
	v, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the value %q cannot be represented as a 64-bit number", number)
	}
	mult, ok := memoryUnits[label]
	if !ok {
		return 0, fmt.Errorf("memory size unit %q does not match any of the recognized units: b, k, kb, m, mb, g, gb, t, tb (and bytes, kibibytes, mebibytes, gibibytes, tebibytes)", label)
	}
	if v > math.MaxInt64/mult {
		return 0, fmt.Errorf("the value %q cannot be represented as a 64-bit number of bytes", text)
	}
	return v * mult, nil
}
