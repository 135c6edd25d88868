package lakehost

import (
	"fmt"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

// hostService is HostService as served to one child.
type hostService struct {
	h *Host
	c *child
}

func (s *hostService) Config(_ lakeconf.Nothing, reply *lakeconf.Config) error {
	*reply = s.h.opts.Config
	return nil
}

func (s *hostService) Ready(args lakeconf.ReadyArgs, _ *lakeconf.Nothing) error {
	select {
	case s.c.ready <- args.Err:
	default:
	}
	return nil
}

// Buckets lists the buckets of lake-enabled tables this server leads (none before Start) and
// remembers their logs for Read.
func (s *hostService) Buckets(_ lakeconf.Nothing, reply *[]lakeconf.BucketRef) error {
	s.h.mu.Lock()
	src := s.h.src
	s.h.mu.Unlock()
	if src == nil {
		*reply = nil
		return nil
	}
	bs := src.LakeBuckets()
	logs := make(map[cluster.Bucket]*logstore.Log, len(bs))
	out := make([]lakeconf.BucketRef, 0, len(bs))
	for _, b := range bs {
		if !b.Table.Descriptor.Properties.DataLakeEnabled() {
			continue // the tiering skips them; do not ship them
		}
		logs[b.ID] = b.Log
		out = append(out, lakeconf.BucketRef{Table: b.Table, Partition: b.Partition, ID: b.ID,
			LogStart: b.Log.LogStartOffset(), HighWatermark: b.Log.HighWatermark()})
	}
	s.h.mu.Lock()
	s.h.logs = logs
	s.h.mu.Unlock()
	*reply = out
	return nil
}

func (s *hostService) log(b cluster.Bucket) (*logstore.Log, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	l, ok := s.h.logs[b]
	if !ok {
		return nil, fmt.Errorf("bucket %s is not led by this server", b)
	}
	return l, nil
}

func (s *hostService) LogOffsets(b cluster.Bucket, reply *lakeconf.LogOffsets) error {
	l, err := s.log(b)
	if err != nil {
		return err
	}
	*reply = lakeconf.LogOffsets{LogStart: l.LogStartOffset(), HighWatermark: l.HighWatermark()}
	return nil
}

func (s *hostService) Read(args lakeconf.ReadArgs, reply *[]byte) error {
	l, err := s.log(args.Bucket)
	if err != nil {
		return err
	}
	*reply, err = l.ReadBatches(args.Offset, args.MaxBytes)
	return err
}

func (s *hostService) catalog() Catalog {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.cat
}

// TableByID finds nothing before Start.
func (s *hostService) TableByID(id int64, reply *lakeconf.TableReply) error {
	if cat := s.catalog(); cat != nil {
		reply.Table, reply.Found = cat.TableByID(id)
	}
	return nil
}

// Schema finds nothing before Start.
func (s *hostService) Schema(args lakeconf.SchemaArgs, reply *lakeconf.SchemaReply) error {
	if cat := s.catalog(); cat != nil {
		reply.Schema, reply.Found = cat.Schema(args.TableID, args.SchemaID)
	}
	return nil
}

// Offsets records a table's committed offsets reported by the child.
func (s *hostService) Offsets(args lakeconf.OffsetsArgs, _ *lakeconf.Nothing) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if args.Known {
		if args.Offsets == nil {
			args.Offsets = lakeconf.Offsets{}
		}
		s.c.offsets[args.TableID] = args.Offsets
	} else {
		delete(s.c.offsets, args.TableID)
	}
	return nil
}
