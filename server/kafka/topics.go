package kafka

import (
	"fmt"
	"regexp"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// A topic is a log table of kafka.database whose columns are, in order:
//
//	key       BYTES
//	value     BYTES
//	headers   ARRAY<ROW<key STRING, value BYTES>>
//	timestamp TIMESTAMP_LTZ(3)
//
// with the ARROW log format and without partition keys. Its partitions are the table's
// buckets, its topic id is derived from the table id. docs/kafka.md.

// Column names of a topic's table.
const (
	colKey       = "key"
	colValue     = "value"
	colHeaders   = "headers"
	colTimestamp = "timestamp"
)

func bytesType() metadata.DataType { return metadata.DataType{Root: metadata.Bytes} }

func headersType() metadata.DataType {
	return metadata.DataType{Root: metadata.Array, Elem: &metadata.DataType{Root: metadata.Row, Fields: []metadata.Field{
		{Name: "key", Type: metadata.DataType{Root: metadata.String}},
		{Name: "value", Type: bytesType()},
	}}}
}

func timestampType() metadata.DataType {
	return metadata.DataType{Root: metadata.TimestampLTZ, Precision: 3}
}

// topicColumns are the columns of a topic's table.
func topicColumns() []metadata.Column {
	return []metadata.Column{
		{Name: colKey, Type: bytesType(), ID: -1},
		{Name: colValue, Type: bytesType(), ID: -1},
		{Name: colHeaders, Type: headersType(), ID: -1},
		{Name: colTimestamp, Type: timestampType(), ID: -1},
	}
}

// topicDescriptor is the table CreateTopics makes.
func topicDescriptor(partitions int32, replication int32, configs map[string]string) metadata.TableDescriptor {
	props := map[string]string{}
	if replication > 0 {
		props["table.replication.factor"] = fmt.Sprint(replication)
	}
	for k, v := range configs {
		props[k] = v
	}
	return metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: topicColumns(), HighestFieldID: 5},
		BucketCount: partitions, Properties: props,
		CustomProperties: map[string]string{},
	}
}

// isTopicTable reports whether a table has a topic's shape.
func isTopicTable(t *cluster.TableInfo) bool {
	d := &t.Descriptor
	if t.HasPrimaryKey() || t.Partitioned() || d.Properties.LogFormat() != metadata.LogFormatArrow {
		return false
	}
	want := topicColumns()
	cols := d.Schema.Columns
	if len(cols) != len(want) {
		return false
	}
	for i, c := range cols {
		if c.Name != want[i].Name || !sameType(c.Type, want[i].Type) {
			return false
		}
	}
	return true
}

// sameType compares types ignoring nullability.
func sameType(a, b metadata.DataType) bool {
	if a.Root != b.Root || (a.Root == metadata.TimestampLTZ && a.Precision != b.Precision) {
		return false
	}
	if (a.Elem == nil) != (b.Elem == nil) || len(a.Fields) != len(b.Fields) {
		return false
	}
	if a.Elem != nil && !sameType(*a.Elem, *b.Elem) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !sameType(a.Fields[i].Type, b.Fields[i].Type) {
			return false
		}
	}
	return true
}

// topicID is the stable topic id of a table: the table id in the low 8 bytes, a fixed marker
// in the high ones, so it is never the zero UUID.
func topicID(tableID int64) [16]byte {
	var id [16]byte
	copy(id[:8], "strom-tb")
	for i := 0; i < 8; i++ {
		id[15-i] = byte(tableID >> (8 * i))
	}
	return id
}

// tableOfTopicID inverts topicID.
func tableOfTopicID(id [16]byte) (int64, bool) {
	if string(id[:8]) != "strom-tb" {
		return 0, false
	}
	var t int64
	for i := 8; i < 16; i++ {
		t = t<<8 | int64(id[i])
	}
	return t, true
}

// Kafka's legal topic names: [a-zA-Z0-9._-]{1,249}. Fluss table names allow the same
// characters except '.', which Strom refuses in a topic name.
var topicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,200}$`)

// topic looks a topic up: the table, or ok false when it does not exist or is not a topic.
func (s *Server) topic(name string) (*cluster.TableInfo, bool) {
	t, ok := s.opts.Catalog.TableByPath(cluster.TablePath{Database: s.opts.Config.Database, Table: name})
	if !ok || !isTopicTable(t) {
		return nil, false
	}
	return t, true
}

// topics lists every topic.
func (s *Server) topics() []*cluster.TableInfo {
	names, err := s.opts.Catalog.TableNames(s.opts.Config.Database)
	if err != nil {
		return nil
	}
	var out []*cluster.TableInfo
	for _, n := range names {
		if t, ok := s.topic(n); ok {
			out = append(out, t)
		}
	}
	return out
}
