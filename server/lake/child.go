package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/rpc"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// snapshotTimeout bounds reading a snapshot for the server (the server's call has its own
// deadline; this one stops the work it no longer waits for).
const snapshotTimeout = time.Minute

// RunChild is the tiering process (cmd/strom-lake): it reads the lake configuration from the
// server over hostConn (lakeconf.HostService), opens the catalog, reports ready, tiers the
// buckets the server leads, and serves lakeconf.TiererService on tiererConn until that
// connection closes (the server stopped or died) or ctx ends.
func RunChild(ctx context.Context, hostConn, tiererConn io.ReadWriteCloser, log *slog.Logger) error {
	host := rpc.NewClient(hostConn)
	defer host.Close()
	defer tiererConn.Close()
	var cfg Config
	if err := host.Call(lakeconf.MethodConfig, lakeconf.Nothing{}, &cfg); err != nil {
		return fmt.Errorf("read the lake configuration from the server: %w", err)
	}
	t, err := New(ctx, Options{Config: cfg, Catalog: remoteCatalog{host}, Logger: log,
		OnOffsets: func(tableID int64, o Offsets) {
			args := lakeconf.OffsetsArgs{TableID: tableID, Offsets: o, Known: o != nil}
			if err := host.Call(lakeconf.MethodOffsets, args, &lakeconf.Nothing{}); err != nil {
				log.Warn("report tiered offsets to the server", "table_id", tableID, "err", err)
			}
		}})
	if err != nil {
		_ = host.Call(lakeconf.MethodReady, lakeconf.ReadyArgs{Err: err.Error()}, &lakeconf.Nothing{})
		return err
	}
	defer t.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(t)
	srv := rpc.NewServer()
	if err := srv.RegisterName(lakeconf.TiererService, &tiererService{t: t, reg: reg}); err != nil {
		return err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeConn(tiererConn)
	}()
	if err := host.Call(lakeconf.MethodReady, lakeconf.ReadyArgs{}, &lakeconf.Nothing{}); err != nil {
		return fmt.Errorf("report ready to the server: %w", err)
	}
	t.Start(remoteSource{host: host, log: log})
	select {
	case <-served:
	case <-ctx.Done():
	}
	return nil
}

// tiererService is lakeconf.TiererService.
type tiererService struct {
	t   *Tierer
	reg *prometheus.Registry
}

func (s *tiererService) Snapshot(args lakeconf.SnapshotArgs, reply *lakeconf.SnapshotReply) error {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	snap, err := s.t.Snapshot(ctx, args.Table, args.SnapshotID)
	if errors.Is(err, ErrNoSnapshot) {
		return nil
	}
	if err != nil {
		return err
	}
	reply.Snapshot, reply.Found = *snap, true
	return nil
}

func (s *tiererService) Metrics(_ lakeconf.Nothing, reply *lakeconf.MetricsReply) error {
	mfs, err := s.reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		data, err := proto.Marshal(mf)
		if err != nil {
			return err
		}
		reply.Families = append(reply.Families, data)
	}
	return nil
}

// remoteCatalog reads the server's catalog.
type remoteCatalog struct{ host *rpc.Client }

func (c remoteCatalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	var r lakeconf.TableReply
	if err := c.host.Call(lakeconf.MethodTableByID, id, &r); err != nil {
		return nil, false
	}
	return r.Table, r.Found
}

func (c remoteCatalog) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	var r lakeconf.SchemaReply
	if err := c.host.Call(lakeconf.MethodSchema, lakeconf.SchemaArgs{TableID: tableID, SchemaID: schemaID}, &r); err != nil {
		return metadata.Schema{}, false
	}
	return r.Schema, r.Found
}

// remoteSource lists the buckets the server leads; none when the server cannot be asked.
type remoteSource struct {
	host *rpc.Client
	log  *slog.Logger
}

func (s remoteSource) LakeBuckets() []Bucket {
	var refs []lakeconf.BucketRef
	if err := s.host.Call(lakeconf.MethodBuckets, lakeconf.Nothing{}, &refs); err != nil {
		s.log.Debug("list the server's buckets", "err", err)
		return nil
	}
	out := make([]Bucket, 0, len(refs))
	for _, r := range refs {
		out = append(out, Bucket{Table: r.Table, Partition: r.Partition, ID: r.ID,
			Log: &remoteLog{host: s.host, id: r.ID, bounds: lakeconf.LogOffsets{LogStart: r.LogStart, HighWatermark: r.HighWatermark}}})
	}
	return out
}

// remoteLog reads a bucket's log in the server. Its bounds fall back to the last known ones
// when the server cannot be asked (a read then fails, and the round with it).
type remoteLog struct {
	host   *rpc.Client
	id     cluster.Bucket
	bounds lakeconf.LogOffsets
}

func (l *remoteLog) refresh() lakeconf.LogOffsets {
	var b lakeconf.LogOffsets
	if err := l.host.Call(lakeconf.MethodLogOffsets, l.id, &b); err == nil {
		l.bounds = b
	}
	return l.bounds
}

func (l *remoteLog) LogStartOffset() int64 { return l.refresh().LogStart }
func (l *remoteLog) HighWatermark() int64  { return l.refresh().HighWatermark }

func (l *remoteLog) ReadBatches(offset int64, maxBytes int) ([]byte, error) {
	var data []byte
	err := l.host.Call(lakeconf.MethodRead, lakeconf.ReadArgs{Bucket: l.id, Offset: offset, MaxBytes: maxBytes}, &data)
	return data, err
}
