package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/metadata"
)

// Names of the synthetic child fields. They never travel on the wire (there is no Schema
// message); these are the names the Rust client (fluss-rs, pyfluss) gives them, so Arrow
// records handed to Go users look like the ones Python users see.
const (
	listItemName   = "item"
	mapEntriesName = "entries"
	mapKeyName     = "key"
	mapValueName   = "value"
	// ltzTimeZone is the zone the Rust client attaches to TIMESTAMP_LTZ columns (Java
	// attaches none). The zone does not change the physical layout.
	ltzTimeZone = "UTC"
)

// ArrowSchema returns the Arrow schema of a Fluss row type: one field per column, in column
// order, named after the column and nullable unless the column type is NOT NULL.
func ArrowSchema(cols []metadata.Column) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		t, err := ArrowType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("arrowlog: column %q: %w", c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: !c.Type.NotNull}
	}
	return arrow.NewSchema(fields, nil), nil
}

func timestampUnit(p int) (arrow.TimeUnit, error) {
	switch {
	case p == 0:
		return arrow.Second, nil
	case p >= 1 && p <= 3:
		return arrow.Millisecond, nil
	case p >= 4 && p <= 6:
		return arrow.Microsecond, nil
	case p >= 7 && p <= 9:
		return arrow.Nanosecond, nil
	}
	return 0, fmt.Errorf("invalid TIMESTAMP precision %d", p)
}
