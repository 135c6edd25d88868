package fluss

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// metadataCache is the client's view of the cluster (servers, tables, partitions, bucket
// leaders), built from GET_METADATA answers. The merge rule follows the Rust client: each
// answer replaces the server lists and overwrites the entries of the tables and partitions it
// contains; invalidate drops bucket leaders after routing errors so the next use refreshes.
type metadataCache struct {
	conn *Connection

	mu          sync.RWMutex
	coordinator *ServerNode
	tablets     map[int32]ServerNode
	tables      map[TablePath]*TableInfo
	tablePaths  map[int64]TablePath
	partitions  map[int64]partitionRef // partition id -> table and name
	partIDs     map[partitionRef]int64
	leaders     map[TableBucket]int32 // bucket -> leader tablet server id

	creating map[partitionRef]chan struct{} // partitions being created by writers; closed when done
}

// partitionRef names a partition by table id and partition name.
type partitionRef struct {
	tableID int64
	name    string
}

func newMetadataCache(c *Connection) *metadataCache {
	return &metadataCache{
		conn: c, tablets: map[int32]ServerNode{}, tables: map[TablePath]*TableInfo{},
		tablePaths: map[int64]TablePath{}, partitions: map[int64]partitionRef{},
		partIDs: map[partitionRef]int64{}, leaders: map[TableBucket]int32{},
		creating: map[partitionRef]chan struct{}{},
	}
}

// bootstrap asks the bootstrap servers, in order, for the cluster's servers.
func (m *metadataCache) bootstrap(ctx context.Context) error {
	var lastErr error
	addrs := m.conn.bootstrapAddrs()
	for i, addr := range addrs {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			lastErr = fmt.Errorf("fluss: bad bootstrap address %q: %w", addr, err)
			continue
		}
		port, err := strconv.Atoi(portStr)
		if err != nil {
			lastErr = fmt.Errorf("fluss: bad bootstrap port in %q", addr)
			continue
		}
		node := ServerNode{ID: -1, Host: host, Port: int32(port)}
		for attempt := 0; attempt < 3; attempt++ {
			var resp flusspb.MetadataResponse
			err = m.conn.call(ctx, node, wire.GetMetadata, &flusspb.MetadataRequest{}, &resp)
			if err == nil {
				return m.merge(&resp)
			}
			lastErr = err
			// An unreachable server (not sent) is skipped for the next address at once; the
			// last address is retried.
			if !CodeOf(err).Retriable() || (errors.Is(err, errNotSent) && i < len(addrs)-1) || ctx.Err() != nil {
				break
			}
			if err := m.conn.backoff(ctx, attempt); err != nil {
				return err
			}
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("fluss: no bootstrap servers")
	}
	return fmt.Errorf("fluss: bootstrap: %w", lastErr)
}

// merge folds a GET_METADATA answer into the cache.
func (m *metadataCache) merge(resp *flusspb.MetadataResponse) error {
	tablets := make(map[int32]ServerNode, len(resp.TabletServers))
	for _, n := range resp.TabletServers {
		tablets[n.GetNodeId()] = ServerNode{ID: n.GetNodeId(), Host: n.GetHost(), Port: n.GetPort(), Type: TabletServer}
	}
	var infos []*TableInfo
	for _, tm := range resp.TableMetadata {
		desc, err := metadata.ParseTableDescriptor(tm.GetTableJson())
		if err != nil {
			return fmt.Errorf("fluss: table %s.%s: %w", tm.GetTablePath().GetDatabaseName(), tm.GetTablePath().GetTableName(), err)
		}
		path := TablePath{tm.GetTablePath().GetDatabaseName(), tm.GetTablePath().GetTableName()}
		infos = append(infos, newTableInfo(path, tm.GetTableId(), tm.GetSchemaId(), desc, tm.GetCreatedTime(), tm.GetModifiedTime()))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cs := resp.GetCoordinatorServer(); cs != nil {
		m.coordinator = &ServerNode{ID: cs.GetNodeId(), Host: cs.GetHost(), Port: cs.GetPort(), Type: CoordinatorServer}
	}
	m.tablets = tablets
	for i, info := range infos {
		if old, ok := m.tables[info.Path]; ok && old.TableID != info.TableID {
			delete(m.tablePaths, old.TableID)
		}
		m.tables[info.Path] = info
		m.tablePaths[info.TableID] = info.Path
		for _, b := range resp.TableMetadata[i].BucketMetadata {
			m.setLeader(TableBucket{info.TableID, NoPartition, b.GetBucketId()}, b, tablets)
		}
	}
	for _, pm := range resp.PartitionMetadata {
		ref := partitionRef{pm.GetTableId(), pm.GetPartitionName()}
		if old, ok := m.partIDs[ref]; ok && old != pm.GetPartitionId() {
			delete(m.partitions, old)
		}
		m.partitions[pm.GetPartitionId()] = ref
		m.partIDs[ref] = pm.GetPartitionId()
		for _, b := range pm.BucketMetadata {
			m.setLeader(TableBucket{pm.GetTableId(), pm.GetPartitionId(), b.GetBucketId()}, b, tablets)
		}
	}
	return nil
}

// setLeader records b's leader when it names a known tablet server, else forgets it.
func (m *metadataCache) setLeader(tb TableBucket, b *flusspb.PbBucketMetadata, tablets map[int32]ServerNode) {
	if b.LeaderId != nil {
		if _, ok := tablets[b.GetLeaderId()]; ok {
			m.leaders[tb] = b.GetLeaderId()
			return
		}
	}
	delete(m.leaders, tb)
}

func (m *metadataCache) coordinatorNode(ctx context.Context) (ServerNode, error) {
	m.mu.RLock()
	cs := m.coordinator
	m.mu.RUnlock()
	if cs == nil {
		if err := m.bootstrap(ctx); err != nil {
			return ServerNode{}, err
		}
		m.mu.RLock()
		cs = m.coordinator
		m.mu.RUnlock()
		if cs == nil {
			return ServerNode{}, fmt.Errorf("fluss: the cluster reports no coordinator")
		}
	}
	return *cs, nil
}

// anyTablet returns a random known tablet server, re-bootstrapping if none is known.
func (m *metadataCache) anyTablet(ctx context.Context) (ServerNode, error) {
	for range 2 {
		m.mu.RLock()
		n := len(m.tablets)
		var pick ServerNode
		if n > 0 {
			i := rand.IntN(n)
			for _, t := range m.tablets {
				if i == 0 {
					pick = t
					break
				}
				i--
			}
		}
		m.mu.RUnlock()
		if n > 0 {
			return pick, nil
		}
		if err := m.bootstrap(ctx); err != nil {
			return ServerNode{}, err
		}
	}
	return ServerNode{}, newError(ErrLeaderNotAvailable, "the cluster reports no tablet server")
}

// refresh sends GET_METADATA for the given tables and partitions to a known tablet server and
// merges the answer. A server that cannot be reached (it died, say) is skipped for the next
// one, in random order, and when none answers the bootstrap servers are asked for the
// cluster's servers again.
func (m *metadataCache) refresh(ctx context.Context, req *flusspb.MetadataRequest) error {
	var resp flusspb.MetadataResponse
	var lastErr error
	for _, node := range m.tabletsShuffled() {
		err := m.conn.call(ctx, node, wire.GetMetadata, req, &resp)
		if err == nil {
			return m.merge(&resp)
		}
		if !errors.Is(err, errNotSent) || ctx.Err() != nil {
			return err
		}
		lastErr = err
	}
	if err := m.bootstrap(ctx); err != nil {
		if lastErr != nil {
			return errors.Join(lastErr, err)
		}
		return err
	}
	if err := m.conn.callAnyTablet(ctx, wire.GetMetadata, req, &resp); err != nil {
		return err
	}
	return m.merge(&resp)
}

// tabletsShuffled returns the known tablet servers in random order.
func (m *metadataCache) tabletsShuffled() []ServerNode {
	m.mu.RLock()
	out := make([]ServerNode, 0, len(m.tablets))
	for _, t := range m.tablets {
		out = append(out, t)
	}
	m.mu.RUnlock()
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// forgetCoordinator drops node as the known coordinator (if it still is), so that the next
// admin call looks the active one up again.
func (m *metadataCache) forgetCoordinator(node ServerNode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.coordinator != nil && m.coordinator.Addr() == node.Addr() {
		m.coordinator = nil
	}
}

// refreshTables reloads the metadata of the given tables.
func (m *metadataCache) refreshTables(ctx context.Context, paths []TablePath) error {
	req := &flusspb.MetadataRequest{}
	for _, p := range paths {
		req.TablePath = append(req.TablePath, pbPath(p))
	}
	return m.refresh(ctx, req)
}

// refreshPartition reloads a partition's metadata by name. PARTITION_NOT_EXISTS is returned
// as is.
func (m *metadataCache) refreshPartition(ctx context.Context, path TablePath, name string) error {
	return m.refresh(ctx, &flusspb.MetadataRequest{
		TablePath: []*flusspb.PbTablePath{pbPath(path)},
		PartitionsPath: []*flusspb.PbPhysicalTablePath{{
			DatabaseName: proto.String(path.Database), TableName: proto.String(path.Table), PartitionName: proto.String(name),
		}},
	})
}

// refreshPartitionIDs reloads partitions by id.
func (m *metadataCache) refreshPartitionIDs(ctx context.Context, path TablePath, ids []int64) error {
	return m.refresh(ctx, &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{pbPath(path)}, PartitionsId: ids})
}

func (m *metadataCache) tableInfo(path TablePath) (*TableInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.tables[path]
	return t, ok
}

// partitionID returns the cached id of a partition of table.
func (m *metadataCache) partitionID(tableID int64, name string) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.partIDs[partitionRef{tableID, name}]
	return id, ok
}

// resolvePartition returns the id of the named partition of t, refreshing metadata when it
// is not cached.
func (m *metadataCache) resolvePartition(ctx context.Context, t *TableInfo, name string) (int64, error) {
	if id, ok := m.partitionID(t.TableID, name); ok {
		return id, nil
	}
	if err := m.refreshPartition(ctx, t.Path, name); err != nil {
		return 0, err
	}
	if id, ok := m.partitionID(t.TableID, name); ok {
		return id, nil
	}
	return 0, newError(ErrPartitionNotExists, "partition %s of table %s does not exist", name, t.Path)
}

// createPartition creates the named partition of t (spec: partition key -> value), as a
// write to a missing partition does, and returns its id once metadata shows it. Concurrent
// callers for the same partition share one CREATE_PARTITION request.
func (m *metadataCache) createPartition(ctx context.Context, t *TableInfo, name string, spec map[string]string) (int64, error) {
	ref := partitionRef{t.TableID, name}
	m.mu.Lock()
	ch, inFlight := m.creating[ref]
	if !inFlight {
		ch = make(chan struct{})
		m.creating[ref] = ch
	}
	m.mu.Unlock()
	if inFlight {
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	} else {
		err := m.conn.Admin().CreatePartition(ctx, t.Path, spec, true)
		m.mu.Lock()
		delete(m.creating, ref)
		m.mu.Unlock()
		close(ch)
		if err != nil {
			return 0, fmt.Errorf("fluss: create partition %s of %s: %w", name, t.Path, err)
		}
	}
	// A Fluss coordinator registers the partition asynchronously: wait until metadata has it.
	for attempt := 0; ; attempt++ {
		id, err := m.resolvePartition(ctx, t, name)
		if CodeOf(err) != ErrPartitionNotExists || attempt >= 10 {
			return id, err
		}
		if err := m.conn.backoff(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// cachedLeader returns the cached leader of tb.
func (m *metadataCache) cachedLeader(tb TableBucket) (ServerNode, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.leaders[tb]
	if !ok {
		return ServerNode{}, false
	}
	n, ok := m.tablets[id]
	return n, ok
}

// leader returns the leader of tb, refreshing the table's (or partition's) metadata up to
// three times while it is unknown.
func (m *metadataCache) leader(ctx context.Context, path TablePath, tb TableBucket) (ServerNode, error) {
	for attempt := 0; ; attempt++ {
		if n, ok := m.cachedLeader(tb); ok {
			return n, nil
		}
		if attempt == 3 {
			return ServerNode{}, newError(ErrLeaderNotAvailable, "no leader for %s", tb)
		}
		if attempt > 0 {
			if err := m.conn.backoff(ctx, attempt-1); err != nil {
				return ServerNode{}, err
			}
		}
		var err error
		if tb.IsPartitioned() {
			err = m.refreshPartitionIDs(ctx, path, []int64{tb.PartitionID})
		} else {
			err = m.refreshTables(ctx, []TablePath{path})
		}
		if err != nil && !CodeOf(err).Retriable() {
			return ServerNode{}, err
		}
	}
}

// forgetPartition drops a partition the cluster reported as missing (dropped, e.g. by
// auto-partition retention), with its leaders, so that the cache holds only partitions
// that exist and a later write re-resolves (and, if allowed, re-creates) it.
func (m *metadataCache) forgetPartition(tableID, partitionID int64) {
	if partitionID < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ref, ok := m.partitions[partitionID]; ok && ref.tableID == tableID {
		delete(m.partitions, partitionID)
		if m.partIDs[ref] == partitionID {
			delete(m.partIDs, ref)
		}
	}
	for tb := range m.leaders {
		if tb.TableID == tableID && tb.PartitionID == partitionID {
			delete(m.leaders, tb)
		}
	}
}

// invalidate forgets the bucket leaders of a table (partitionID < 0) or of one partition, so
// that the next use refreshes them. Used after NOT_LEADER and similar routing errors.
func (m *metadataCache) invalidate(tableID, partitionID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for tb := range m.leaders {
		if tb.TableID == tableID && (partitionID < 0 || tb.PartitionID == partitionID) {
			delete(m.leaders, tb)
		}
	}
}

// servers returns the coordinator and the tablet servers.
func (m *metadataCache) servers() []ServerNode {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []ServerNode
	if m.coordinator != nil {
		out = append(out, *m.coordinator)
	}
	for _, t := range m.tablets {
		out = append(out, t)
	}
	return out
}

// isRoutingError reports codes after which cached leaders must be dropped.
func isRoutingError(c ErrorCode) bool {
	switch c {
	case ErrNotLeaderOrFollower, ErrLeaderNotAvailable, ErrUnknownTableOrBucket,
		ErrFencedLeaderEpoch, ErrNetworkException, ErrInvalidCoordinator,
		// A leader that does not answer in time may have been replaced meanwhile.
		ErrRequestTimeOut:
		return true
	}
	return false
}

func pbPath(p TablePath) *flusspb.PbTablePath {
	return &flusspb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}
}
