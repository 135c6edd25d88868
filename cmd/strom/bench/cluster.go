package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// session is the coordinator connection and the tables a run created.
type session struct {
	cfg       *Config
	coord     *wire.ClientConn
	createdDB bool
	tables    map[bool]*tableInfo // by "has primary key"
	// extraTables are the other tables a mode created (see createTable); dropped at the end.
	extraTables []*tableInfo
}

// tableInfo is what the bench needs to address a table's buckets.
type tableInfo struct {
	path     string
	name     string
	id       int64
	schemaID int16
	leaders  []string // tablet server address per bucket
	servers  []string // distinct leader addresses
	loaded   int      // rows known to be in the table (keys 0..loaded-1 for the PK table)
}

func (c *Config) clientConfig() wire.ClientConfig {
	return wire.ClientConfig{SoftwareName: "strom-bench", Username: c.Username, Password: c.Password}
}

func openSession(ctx context.Context, cfg *Config) (*session, error) {
	coord, err := wire.Dial(ctx, cfg.Bootstrap, cfg.clientConfig())
	if err != nil {
		return nil, err
	}
	s := &session{cfg: cfg, coord: coord, tables: map[bool]*tableInfo{}}
	var exists flusspb.DatabaseExistsResponse
	if err := coord.Call(ctx, wire.DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String(cfg.Database)}, &exists); err != nil {
		coord.Close()
		return nil, fmt.Errorf("check database %s: %w", cfg.Database, err)
	}
	if !exists.GetExists() {
		req := &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(cfg.Database), IgnoreIfExists: proto.Bool(true)}
		if err := coord.Call(ctx, wire.CreateDatabase, req, &flusspb.CreateDatabaseResponse{}); err != nil {
			coord.Close()
			return nil, fmt.Errorf("create database %s: %w", cfg.Database, err)
		}
		s.createdDB = true
	}
	return s, nil
}

// table returns the log table (pk false) or the PK table, creating it on first use. A table
// of that name left by an earlier run is an error: its contents would skew the numbers.
func (s *session) table(ctx context.Context, pk bool) (*tableInfo, error) {
	if t := s.tables[pk]; t != nil {
		return t, nil
	}
	name := s.cfg.Table + "_log"
	if pk {
		name = s.cfg.Table + "_kv"
	}
	t, err := s.create(ctx, name, s.cfg.descriptor(pk))
	if err != nil {
		return nil, err
	}
	s.tables[pk] = t
	if err := s.waitForLeaders(ctx, t); err != nil {
		return nil, err
	}
	if err := s.waitForBuckets(ctx, t, pk); err != nil {
		return nil, err
	}
	return t, nil
}

// create creates table name of the benchmark's database from d. A table of that name left by
// an earlier run is an error: its contents would skew the numbers. The caller registers the
// table to be dropped at the end and waits for its buckets.
func (s *session) create(ctx context.Context, name string, d metadata.TableDescriptor) (*tableInfo, error) {
	req := &flusspb.CreateTableRequest{
		TablePath:      &flusspb.PbTablePath{DatabaseName: proto.String(s.cfg.Database), TableName: proto.String(name)},
		TableJson:      d.JSON(),
		IgnoreIfExists: proto.Bool(false),
	}
	if err := s.coord.Call(ctx, wire.CreateTable, req, &flusspb.CreateTableResponse{}); err != nil {
		if ferr.CodeOf(err) == ferr.TableAlreadyExist {
			return nil, fmt.Errorf("create table %s.%s: it already exists (drop it or pick another -table): %w", s.cfg.Database, name, err)
		}
		return nil, fmt.Errorf("create table %s.%s: %w", s.cfg.Database, name, err)
	}
	return &tableInfo{name: name, path: s.cfg.Database + "." + name}, nil
}

// waitForLeaders polls GET_METADATA until every bucket of t has a reachable leader (leaders
// may appear shortly after CREATE_TABLE returns), for at most 30 seconds.
func (s *session) waitForLeaders(ctx context.Context, t *tableInfo) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.metadata(ctx, t)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var errNoLeader = errors.New("bucket has no leader yet")

func (s *session) metadata(ctx context.Context, t *tableInfo) error {
	var resp flusspb.MetadataResponse
	req := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(s.cfg.Database), TableName: proto.String(t.name)}}}
	if err := s.coord.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
		return fmt.Errorf("metadata of %s: %w", t.path, err)
	}
	if len(resp.TableMetadata) != 1 {
		return fmt.Errorf("metadata of %s: %d table entries", t.path, len(resp.TableMetadata))
	}
	addrs := map[int32]string{}
	for _, n := range resp.TabletServers {
		addrs[n.GetNodeId()] = net.JoinHostPort(n.GetHost(), strconv.Itoa(int(n.GetPort())))
	}
	tm := resp.TableMetadata[0]
	t.id, t.schemaID = tm.GetTableId(), int16(tm.GetSchemaId())
	if _, err := metadata.ParseTableDescriptor(tm.TableJson); err != nil {
		return fmt.Errorf("metadata of %s: table_json: %w", t.path, err)
	}
	t.leaders = make([]string, s.cfg.Buckets)
	seen := map[string]bool{}
	t.servers = t.servers[:0]
	for _, b := range tm.BucketMetadata {
		id := b.GetBucketId()
		if id < 0 || int(id) >= len(t.leaders) {
			return fmt.Errorf("metadata of %s: bucket %d of %d", t.path, id, s.cfg.Buckets)
		}
		if b.LeaderId == nil {
			continue
		}
		addr, ok := addrs[b.GetLeaderId()]
		if !ok {
			continue
		}
		t.leaders[id] = addr
		if !seen[addr] {
			seen[addr] = true
			t.servers = append(t.servers, addr)
		}
	}
	for b, a := range t.leaders {
		if a == "" {
			return fmt.Errorf("metadata of %s: bucket %d: %w", t.path, b, errNoLeader)
		}
	}
	return nil
}

// close drops what the run created (unless keep) and closes the coordinator connection.
func (s *session) close(ctx context.Context, keep bool) error {
	defer s.coord.Close()
	if keep {
		return nil
	}
	var errs []error
	all := slices.Collect(maps.Values(s.tables))
	for _, t := range append(all, s.extraTables...) {
		req := &flusspb.DropTableRequest{
			TablePath:         &flusspb.PbTablePath{DatabaseName: proto.String(s.cfg.Database), TableName: proto.String(t.name)},
			IgnoreIfNotExists: proto.Bool(true),
		}
		if err := s.coord.Call(ctx, wire.DropTable, req, &flusspb.DropTableResponse{}); err != nil {
			errs = append(errs, fmt.Errorf("drop table %s: %w", t.path, err))
		}
	}
	if s.createdDB {
		req := &flusspb.DropDatabaseRequest{DatabaseName: proto.String(s.cfg.Database), IgnoreIfNotExists: proto.Bool(true), Cascade: proto.Bool(false)}
		if err := s.coord.Call(ctx, wire.DropDatabase, req, &flusspb.DropDatabaseResponse{}); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", s.cfg.Database, err))
		}
	}
	return errors.Join(errs...)
}

// pool holds the tablet connections of the workers of one mode: conns[w][addr] is worker
// w's connection to the server at addr.
type pool struct {
	all   []*wire.ClientConn
	conns []map[string]*wire.ClientConn
}

// dialPool opens the connections before the clock starts. With cfg.Conns == 0 every worker
// gets its own connection per server; otherwise workers share cfg.Conns per server round-robin.
func dialPool(ctx context.Context, cfg *Config, workers int, servers []string) (*pool, error) {
	p := &pool{conns: make([]map[string]*wire.ClientConn, workers)}
	n := cfg.Conns
	if n == 0 || n > workers {
		n = workers
	}
	shared := make([]map[string]*wire.ClientConn, n)
	for i := range shared {
		shared[i] = map[string]*wire.ClientConn{}
		for _, addr := range servers {
			c, err := wire.Dial(ctx, addr, cfg.clientConfig())
			if err != nil {
				p.close()
				return nil, fmt.Errorf("connect to tablet server: %w", err)
			}
			p.all = append(p.all, c)
			shared[i][addr] = c
		}
	}
	for w := range p.conns {
		p.conns[w] = shared[w%n]
	}
	return p, nil
}

func (p *pool) close() {
	for _, c := range p.all {
		c.Close()
	}
}

// bucketError returns the error of a per-bucket response entry, or nil.
func bucketError(what string, bucket int32, code *int32, msg *string) error {
	if code == nil || *code == 0 {
		return nil
	}
	return fmt.Errorf("%s bucket %d: %w", what, bucket, &ferr.Error{Code: ferr.Code(*code), Message: derefString(msg)})
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
