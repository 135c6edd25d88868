package remotelog

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stromdb/strom/internal/formatver"
)

// Segment is one remote log segment as a manifest lists it (Fluss RemoteLogSegment).
type Segment struct {
	ID           string `json:"segment_id"`
	StartOffset  int64  `json:"start_offset"`
	EndOffset    int64  `json:"end_offset"` // exclusive: the next segment's base offset
	MaxTimestamp int64  `json:"max_timestamp"`
	SizeInBytes  int32  `json:"size_in_bytes"`
}

// Manifest is a bucket's remote log manifest, in the JSON of Fluss's
// RemoteLogManifestJsonSerde (version 1). Segments are sorted by start offset with strictly
// increasing end offsets; a segment starts at its predecessor's end, or after it where
// retention cut the local log before it was tiered, or (by less than one batch) before it
// where a new leader's batch straddled the old leader's last copied offset.
type Manifest struct {
	Version       int       `json:"version"`
	Database      string    `json:"database"`
	Table         string    `json:"table"`
	PartitionName *string   `json:"partition_name,omitempty"`
	TableID       int64     `json:"table_id"`
	PartitionID   *int64    `json:"partition_id,omitempty"`
	BucketID      int32     `json:"bucket_id"`
	Segments      []Segment `json:"remote_log_segments"`
}

const manifestVersion = 1

// ManifestFormat is the format of a remote log manifest; its version is the manifest's own
// "version" member (Fluss's), docs/durability.md, "Versioned formats".
var ManifestFormat = formatver.Format{Name: "fluss-remote-log-manifest", Current: manifestVersion, Supported: []int{manifestVersion}}

// decodeManifest decodes the manifest read from key (named in errors).
func decodeManifest(key string, data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("remotelog: decode manifest %s: %w", key, err)
	}
	if err := formatver.Check("remote log manifest "+key, ManifestFormat, m.Version); err != nil {
		return nil, fmt.Errorf("remotelog: %w", err)
	}
	slices.SortFunc(m.Segments, func(a, b Segment) int { return cmpInt(a.StartOffset, b.StartOffset) })
	for i, s := range m.Segments {
		if s.EndOffset <= s.StartOffset || (i > 0 && s.EndOffset <= m.Segments[i-1].EndOffset) {
			return nil, fmt.Errorf("remotelog: manifest segment %s [%d, %d) is empty or inside its predecessor", s.ID, s.StartOffset, s.EndOffset)
		}
	}
	return &m, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// trimAndMerge returns a copy of m without the expired segments and with added appended
// (Fluss RemoteLogManifest.trimAndMerge).
func (m *Manifest) trimAndMerge(expired []Segment, added []Segment) *Manifest {
	out := *m
	gone := make(map[string]bool, len(expired))
	for _, s := range expired {
		gone[s.ID] = true
	}
	out.Segments = nil
	for _, s := range m.Segments {
		if !gone[s.ID] {
			out.Segments = append(out.Segments, s)
		}
	}
	out.Segments = append(out.Segments, added...)
	return &out
}

// StartOffset is the first remote offset (0 segments: -1).
func (m *Manifest) StartOffset() int64 {
	if len(m.Segments) == 0 {
		return -1
	}
	return m.Segments[0].StartOffset
}

// EndOffset is the offset after the last remote one (0 segments: -1).
func (m *Manifest) EndOffset() int64 {
	if len(m.Segments) == 0 {
		return -1
	}
	return m.Segments[len(m.Segments)-1].EndOffset
}

// Size is the bytes of all remote segments' .log files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, s := range m.Segments {
		n += int64(s.SizeInBytes)
	}
	return n
}
