package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/history"
)

// Bounds of a worker: writes in flight per writer, how long a stopping workload waits for
// them, and how long a read or meta worker may take.
const (
	writeWindow = 64
	stopGrace   = 15 * time.Second
	readBound   = 90 * time.Second
)

func runWorker(ctx context.Context, cfg WorkerConfig) error {
	switch cfg.Mode {
	case "setup":
		return runSetup(ctx, cfg)
	case "workload":
		return runWorkload(ctx, cfg)
	case "read":
		return runRead(ctx, cfg)
	case "meta":
		return runMeta(ctx, cfg)
	}
	return fmt.Errorf("unknown mode %q", cfg.Mode)
}

func connect(ctx context.Context, cfg WorkerConfig) (*fluss.Connection, error) {
	conn, err := fluss.Connect(ctx, fluss.Config{
		BootstrapServers:   cfg.Bootstrap,
		WriterBatchTimeout: 2 * time.Millisecond,
		RequestTimeout:     10 * time.Second,
		ConnectTimeout:     3 * time.Second,
		WriterAcks:         cfg.Acks,
	})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", cfg.Bootstrap, err)
	}
	return conn, nil
}

func tables(ctx context.Context, conn *fluss.Connection, cfg WorkerConfig) (logT, pkT *fluss.Table, err error) {
	if logT, err = conn.Table(ctx, fluss.TablePath{Database: cfg.Database, Table: cfg.LogTable}); err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", cfg.LogTable, err)
	}
	if pkT, err = conn.Table(ctx, fluss.TablePath{Database: cfg.Database, Table: cfg.PKTable}); err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", cfg.PKTable, err)
	}
	return logT, pkT, nil
}

// runSetup creates the database and both tables, then waits until every bucket has a leader.
func runSetup(ctx context.Context, cfg WorkerConfig) error {
	ctx, cancel := context.WithTimeout(ctx, readBound)
	defer cancel()
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, cfg.Database, nil, true); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	logDesc := fluss.TableDescriptor{BucketCount: cfg.Buckets, Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("payload", fluss.String())})}
	pkDesc := fluss.TableDescriptor{BucketCount: cfg.Buckets, Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("v", fluss.BigInt())}, "id")}
	descs := map[string]fluss.TableDescriptor{cfg.LogTable: logDesc, cfg.PKTable: pkDesc}
	if cfg.Acks1Table != "" {
		descs[cfg.Acks1Table] = logDesc
	}
	for name, desc := range descs {
		path := fluss.TablePath{Database: cfg.Database, Table: name}
		if err := admin.CreateTable(ctx, path, desc, true); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		for {
			leaders, err := admin.BucketLeaders(ctx, path, "")
			if err == nil && int32(len(leaders)) == cfg.Buckets {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("buckets of %s without a leader: %v (%w)", path, leaders, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return os.WriteFile(cfg.Out, []byte("{}"), 0o644)
}

// runWorkload appends, upserts and looks up until ctx ends, then waits up to stopGrace for
// the writes in flight and records those still unanswered as unknown.
func runWorkload(ctx context.Context, cfg WorkerConfig) error {
	// Writes and their waits outlive ctx: a write the worker stops waiting for is unknown,
	// not cancelled.
	bg := context.Background()
	conn, err := connect(bg, cfg)
	if err != nil {
		return err
	}
	logT, pkT, err := tables(bg, conn, cfg)
	if err != nil {
		return err
	}
	aw, err := logT.NewAppend().CreateWriter()
	if err != nil {
		return err
	}
	uw, err := pkT.NewUpsert().CreateWriter()
	if err != nil {
		return err
	}
	lk, err := pkT.NewLookup().CreateLookuper()
	if err != nil {
		return err
	}
	rec, err := newRecorder(cfg.Out)
	if err != nil {
		return err
	}
	now := func() int64 { return time.Now().UnixNano() }
	base := int64(cfg.Proc) << 40

	var mu sync.Mutex
	type inflight struct {
		op  history.Op
		rec *recorder
	}
	pending := map[int64]inflight{} // by a number unique in this worker
	var nextID int64
	var wg sync.WaitGroup
	// write issues one write, recording its outcome when it completes; it blocks while
	// writeWindow writes of sem are in flight.
	var rec1 *recorder // of the acks=1 appends, when asked for
	write := func(rec *recorder, sem chan struct{}, o history.Op, do func() (*fluss.WriteResult, error)) bool {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		o.Invoke = now()
		r, err := do()
		if err != nil {
			o.Outcome, o.Err = history.Fail, err.Error()
			rec.add(o)
			<-sem
			return true
		}
		mu.Lock()
		nextID++
		id := nextID
		pending[id] = inflight{o, rec}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-r.Done()
			ret := now()
			err := r.Wait(bg)
			mu.Lock()
			_, mine := pending[id]
			delete(pending, id)
			mu.Unlock()
			<-sem
			if !mine {
				return // recorded as unknown when the worker stopped waiting
			}
			o.Return = ret
			if err != nil {
				o.Outcome, o.Err = history.Fail, err.Error()
			} else {
				o.Outcome = history.OK
			}
			rec.add(o)
		}()
		return true
	}
	var loops sync.WaitGroup
	if cfg.Acks1Table != "" {
		c1 := cfg
		c1.Acks = "1"
		conn1, err := connect(bg, c1)
		if err != nil {
			return err
		}
		t1, err := conn1.Table(bg, fluss.TablePath{Database: cfg.Database, Table: cfg.Acks1Table})
		if err != nil {
			return fmt.Errorf("open %s: %w", cfg.Acks1Table, err)
		}
		w1, err := t1.NewAppend().CreateWriter()
		if err != nil {
			return err
		}
		if rec1, err = newRecorder(cfg.Out + ".acks1"); err != nil {
			return err
		}
		loops.Add(1)
		go func() {
			defer loops.Done()
			sem := make(chan struct{}, writeWindow/8) // acks=1 is fast: keep it from starving the rest
			for seq := int64(0); ; seq++ {
				id := base | seq
				if !write(rec1, sem, history.Op{Proc: cfg.Proc, Kind: history.Append, Key: id}, func() (*fluss.WriteResult, error) {
					return w1.Append(bg, fluss.Row{id, "p"})
				}) {
					return
				}
			}
		}()
	}
	loops.Add(4)
	go func() { // appends
		defer loops.Done()
		sem := make(chan struct{}, writeWindow)
		for seq := int64(0); ; seq++ {
			id := base | seq
			if !write(rec, sem, history.Op{Proc: cfg.Proc, Kind: history.Append, Key: id}, func() (*fluss.WriteResult, error) {
				return aw.Append(bg, fluss.Row{id, "p"})
			}) {
				return
			}
		}
	}()
	go func() { // upserts of random keys, each value unique
		defer loops.Done()
		sem := make(chan struct{}, writeWindow/8)
		rng := rand.New(rand.NewPCG(uint64(cfg.Proc), 1))
		for seq := int64(0); ; seq++ {
			key, v := rng.Int64N(cfg.Keys), base|seq
			if !write(rec, sem, history.Op{Proc: cfg.Proc, Kind: history.Upsert, Key: key, Value: v}, func() (*fluss.WriteResult, error) {
				return uw.Upsert(bg, fluss.Row{key, v})
			}) {
				return
			}
		}
	}()
	for l := range 2 { // lookups
		go func() {
			defer loops.Done()
			rng := rand.New(rand.NewPCG(uint64(cfg.Proc), uint64(2+l)))
			for ctx.Err() == nil {
				key := rng.Int64N(cfg.Keys)
				o := history.Op{Proc: cfg.Proc*10 + 1 + l, Kind: history.Lookup, Key: key, Invoke: now()}
				lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				row, err := lk.Lookup(lctx, fluss.Row{key})
				cancel()
				o.Return = now()
				switch {
				case err != nil:
					o.Outcome, o.Err = history.Fail, err.Error()
				case row == nil:
					o.Outcome, o.Value = history.OK, history.Absent
				default:
					o.Outcome, o.Value = history.OK, row[1].(int64)
				}
				rec.add(o)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			rec.flush()
			if rec1 != nil {
				rec1.flush()
			}
		case <-ctx.Done():
		}
	}
	loops.Wait()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(stopGrace):
	}
	mu.Lock()
	for id, p := range pending {
		p.op.Outcome = history.Unknown
		p.rec.add(p.op)
		delete(pending, id)
	}
	mu.Unlock()
	err = rec.close()
	if rec1 != nil {
		err = errors.Join(err, rec1.close())
	}
	return err
}

// runRead reads the final state: both logs from their start, and a lookup of every key. It
// repeats until the logs' ends did not move while it read (a write still waiting for its
// high watermark when the workers stopped may commit meanwhile), at most five times.
func runRead(ctx context.Context, cfg WorkerConfig) error {
	ctx, cancel := context.WithTimeout(ctx, readBound)
	defer cancel()
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	logT, pkT, err := tables(ctx, conn, cfg)
	if err != nil {
		return err
	}
	lk, err := pkT.NewLookup().CreateLookuper()
	if err != nil {
		return err
	}
	var res ReadResult
	for attempt := 0; ; attempt++ {
		res = ReadResult{LogTableID: logT.Info().TableID, PKTableID: pkT.Info().TableID, Final: map[int64]int64{}}
		ends, err := latest(ctx, conn, pkT)
		if err != nil {
			return err
		}
		if res.Log, _, err = readAll(ctx, conn, logT); err != nil {
			return err
		}
		if res.Changelog, _, err = readAll(ctx, conn, pkT); err != nil {
			return err
		}
		if cfg.Acks1Table != "" {
			t1, err := conn.Table(ctx, fluss.TablePath{Database: cfg.Database, Table: cfg.Acks1Table})
			if err != nil {
				return fmt.Errorf("open %s: %w", cfg.Acks1Table, err)
			}
			if res.Acks1Log, _, err = readAll(ctx, conn, t1); err != nil {
				return err
			}
		}
		for k := range cfg.Keys {
			row, err := lk.Lookup(ctx, fluss.Row{k})
			if err != nil {
				return fmt.Errorf("lookup %d: %w", k, err)
			}
			if row != nil {
				res.Final[k] = row[1].(int64)
			}
		}
		after, err := latest(ctx, conn, pkT)
		if err != nil {
			return err
		}
		if fmt.Sprint(after) == fmt.Sprint(ends) || attempt == 4 {
			break
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(cfg.Out, b, 0o644)
}

func latest(ctx context.Context, conn *fluss.Connection, t *fluss.Table) (map[int32]int64, error) {
	buckets := make([]int32, t.Info().NumBuckets())
	for i := range buckets {
		buckets[i] = int32(i)
	}
	ends, err := conn.Admin().ListOffsets(ctx, t.Path(), buckets, fluss.OffsetLatest())
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", t.Path(), err)
	}
	return ends, nil
}

// readAll reads every bucket of t from the earliest offset to the latest one of now.
func readAll(ctx context.Context, conn *fluss.Connection, t *fluss.Table) ([]history.Record, map[int32]int64, error) {
	ends, err := latest(ctx, conn, t)
	if err != nil {
		return nil, nil, err
	}
	sc, err := t.NewScan().CreateLogScanner()
	if err != nil {
		return nil, nil, err
	}
	defer sc.Close()
	next := map[int32]int64{}
	for b, end := range ends {
		if end > 0 {
			if err := sc.Subscribe(ctx, b, fluss.EarliestOffset); err != nil {
				return nil, nil, fmt.Errorf("subscribe %s bucket %d: %w", t.Path(), b, err)
			}
		}
	}
	done := func() bool {
		for b, end := range ends {
			if next[b] < end {
				return false
			}
		}
		return true
	}
	var out []history.Record
	for !done() {
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			return nil, nil, fmt.Errorf("poll %s (read up to %v of %v): %w", t.Path(), next, ends, err)
		}
		for _, r := range recs {
			b := r.Bucket.Bucket
			if r.Offset >= ends[b] {
				continue
			}
			next[b] = r.Offset + 1
			rec := history.Record{Bucket: b, Offset: r.Offset, Key: r.Row[0].(int64)}
			if v, ok := r.Row[1].(int64); ok {
				rec.Value, rec.ChangeType = v, r.ChangeType.ShortString()
			}
			out = append(out, rec)
		}
	}
	return out, ends, nil
}

// runMeta writes who leads each bucket, the active coordinator and the etcd leader, after
// moving the etcd leadership when asked.
func runMeta(ctx context.Context, cfg WorkerConfig) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := Meta{Leaders: map[string]map[int32]int32{}}
	if len(cfg.EtcdEndpoints) > 0 {
		leader, err := etcdLeader(ctx, cfg.EtcdEndpoints, cfg.MoveEtcdLeaderTo)
		if err != nil {
			return err
		}
		m.EtcdLeader = leader
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, name := range []string{cfg.LogTable, cfg.PKTable} {
		leaders, err := conn.Admin().BucketLeaders(ctx, fluss.TablePath{Database: cfg.Database, Table: name}, "")
		if err != nil {
			return fmt.Errorf("leaders of %s: %w", name, err)
		}
		m.Leaders[name] = map[int32]int32{}
		for b, n := range leaders {
			m.Leaders[name][b] = n.ID
		}
	}
	nodes, err := conn.Admin().GetServerNodes(ctx)
	if err != nil {
		return fmt.Errorf("server nodes: %w", err)
	}
	for _, n := range nodes {
		if n.Type == fluss.CoordinatorServer {
			m.Coordinator = n.Host
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(cfg.Out, b, 0o644)
}

// etcdLeader returns the etcd.name of the etcd leader, first handing the leadership to
// moveTo when it is set and another member leads.
func etcdLeader(ctx context.Context, endpoints []string, moveTo string) (string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", fmt.Errorf("etcd: %w", err)
	}
	defer cli.Close()
	members, err := cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("etcd members: %w", err)
	}
	names := map[uint64]string{}
	ids := map[string]uint64{}
	urls := map[uint64]string{}
	for _, mb := range members.Members {
		names[mb.ID], ids[mb.Name] = mb.Name, mb.ID
		if len(mb.ClientURLs) > 0 {
			urls[mb.ID] = mb.ClientURLs[0]
		}
	}
	st, err := cli.Status(ctx, endpoints[0])
	if err != nil {
		return "", fmt.Errorf("etcd status: %w", err)
	}
	leader := st.Leader
	if target, ok := ids[moveTo]; ok && moveTo != "" && target != leader {
		// MoveLeader must be sent to the leader itself.
		lc, err := clientv3.New(clientv3.Config{Endpoints: []string{urls[leader]}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return "", fmt.Errorf("etcd leader client: %w", err)
		}
		_, err = lc.MoveLeader(ctx, target)
		lc.Close()
		if err != nil {
			return "", fmt.Errorf("etcd move leader to %s: %w", moveTo, err)
		}
		if st, err = cli.Status(ctx, endpoints[0]); err != nil {
			return "", fmt.Errorf("etcd status: %w", err)
		}
		leader = st.Leader
	}
	return names[leader], nil
}
