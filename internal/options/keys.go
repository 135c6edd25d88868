package options

import (
	"fmt"
	"strings"
	"time"
)

// Key is a served option with a typed accessor. Readers of the option use Parse or Get, so
// the option's type, default and constraints are applied in one place.
type Key[T any] struct {
	*Option
	parse func(string) (T, error)
}

// Parse parses value as this option's value, with its constraints.
func (k Key[T]) Parse(value string) (T, error) {
	var zero T
	if err := k.Option.Check(value); err != nil {
		return zero, err
	}
	return k.parse(strings.TrimSpace(value))
}

// Get returns the option's value in raw (a server's options by key), or its default when it
// is absent or empty. Errors name the key.
func (k Key[T]) Get(raw map[string]string) (T, error) {
	if v, ok := raw[k.Key]; ok && strings.TrimSpace(v) != "" {
		t, err := k.Parse(v)
		if err != nil {
			return t, fmt.Errorf("option %s: %w", k.Key, err)
		}
		return t, nil
	}
	return k.DefaultValue(), nil
}

// IsSet reports whether raw holds a non-empty value for the option.
func (k Key[T]) IsSet(raw map[string]string) bool {
	v, ok := raw[k.Key]
	return ok && strings.TrimSpace(v) != ""
}

// DefaultValue is the parsed default; the zero value when the option has none. A default
// that does not parse is a declaration bug, caught by TestDefaultsParse.
func (k Key[T]) DefaultValue() T {
	var zero T
	if k.Default == "" {
		return zero
	}
	t, err := k.parse(k.Default)
	if err != nil {
		return zero
	}
	return t
}

// constraint validates a parsed value.
type constraint[T any] func(T) error

func define[T any](o Option, t Type, parse func(string) (T, error), cons ...constraint[T]) Key[T] {
	if t != String || o.Type != Password {
		o.Type = t
	}
	if o.Status != Served {
		panic("options: " + o.Key + ": a typed option is served")
	}
	full := func(s string) (T, error) {
		v, err := parse(s)
		if err != nil {
			return v, err
		}
		for _, c := range cons {
			if err := c(v); err != nil {
				return v, err
			}
		}
		return v, nil
	}
	o.check = func(s string) error { _, err := full(strings.TrimSpace(s)); return err }
	return Key[T]{Option: register(o), parse: full}
}

// Typed constructors, one per Go type an accessor returns.

// Int32Of declares a served 32-bit integer option.
func Int32Of(o Option, cons ...constraint[int32]) Key[int32] {
	return define(o, Int, func(s string) (int32, error) { n, err := parseInt(s, 32); return int32(n), err }, cons...)
}

// IntOf declares a served integer option read as an int.
func IntOf(o Option, cons ...constraint[int]) Key[int] {
	return define(o, Int, func(s string) (int, error) { n, err := parseInt(s, 32); return int(n), err }, cons...)
}

// BytesOf declares a served memory-size option, in bytes.
func BytesOf(o Option, cons ...constraint[int64]) Key[int64] {
	return define(o, Memory, ParseBytes, cons...)
}

// DurationOf declares a served duration option.
func DurationOf(o Option, cons ...constraint[time.Duration]) Key[time.Duration] {
	return define(o, Duration, ParseDuration, cons...)
}

// BoolOf declares a served boolean option.
func BoolOf(o Option) Key[bool] { return define(o, Bool, parseBool) }

// StringOf declares a served string option.
func StringOf(o Option, cons ...constraint[string]) Key[string] {
	return define(o, String, func(s string) (string, error) { return s, nil }, cons...)
}

// ListOf declares a served comma-separated list option.
func ListOf(o Option, cons ...constraint[[]string]) Key[[]string] {
	return define(o, List, func(s string) ([]string, error) { return SplitList(s), nil }, cons...)
}

// CustomOf declares a served option with its own parser (listeners, port ranges, ...).
func CustomOf[T any](o Option, t Type, parse func(string) (T, error)) Key[T] {
	return define(o, t, parse)
}

// oneOf refuses a string other than the given ones (case-insensitively).
func oneOf(allowed ...string) constraint[string] {
	return func(s string) error {
		for _, a := range allowed {
			if strings.EqualFold(s, a) {
				return nil
			}
		}
		return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), s)
	}
}

// Positive refuses zero and negative values.
func Positive[T int | int32 | int64 | time.Duration](v T) error {
	if v <= 0 {
		return fmt.Errorf("must be positive")
	}
	return nil
}

// NonNegative refuses negative values.
func NonNegative[T int | int32 | int64 | time.Duration](v T) error {
	if v < 0 {
		return fmt.Errorf("must not be negative")
	}
	return nil
}
