package coordinator

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// memStore is an in-memory catalogStore for the services' unit tests. failNext makes the
// next Txn fail without applying anything, as a fenced or unreachable store does.
type memStore struct {
	mu       sync.Mutex
	kv       map[string][]byte
	ids      map[string]int64
	failNext error
	txns     int
}

func newMemStore() *memStore { return &memStore{kv: map[string][]byte{}, ids: map[string]int64{}} }

func (m *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kv[key]
	if !ok {
		return nil, meta.ErrNotFound
	}
	return slices.Clone(v), nil
}

func (m *memStore) List(ctx context.Context, prefix string) ([]meta.KV, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []meta.KV
	for _, k := range slices.Sorted(maps.Keys(m.kv)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, meta.KV{Key: k, Value: slices.Clone(m.kv[k])})
		}
	}
	return out, nil
}

func (m *memStore) Txn(ctx context.Context, conds []meta.Cond, ops []meta.Op) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failNext; err != nil {
		m.failNext = nil
		return false, err
	}
	for _, c := range conds {
		if _, ok := m.kv[c.Key]; ok != c.Exists {
			return false, nil
		}
	}
	m.txns++
	for _, op := range ops {
		switch {
		case op.Delete && op.Prefix:
			for k := range m.kv {
				if strings.HasPrefix(k, op.Key) {
					delete(m.kv, k)
				}
			}
		case op.Delete:
			delete(m.kv, op.Key)
		default:
			m.kv[op.Key] = slices.Clone(op.Value)
		}
	}
	return true, nil
}

func (m *memStore) NextID(ctx context.Context, name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.ids[name]
	m.ids[name]++
	return id, nil
}

func (m *memStore) keys(prefix string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.kv {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

var errFenced = ferr.New(ferr.NotCoordinatorLeaderException, "fenced")

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestCatalog opens a single-node catalog on store with the default database.
func newTestCatalog(t *testing.T, store catalogStore) *Catalog {
	t.Helper()
	return newTestCatalogWith(t, store, metadata.ClusterDefaults{})
}

// newTestCatalogWith is newTestCatalog with cluster defaults.
func newTestCatalogWith(t *testing.T, store catalogStore, defaults metadata.ClusterDefaults) *Catalog {
	t.Helper()
	c, err := openCatalog(context.Background(), store, catalogOptions{defaults: defaults, now: time.Now, bgCtx: context.Background()}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(context.Background(), DefaultDatabase, nil, true); err != nil {
		t.Fatal(err)
	}
	return c
}

// tableJSON is the descriptor of a table (id INT, name STRING) with the given buckets,
// primary key and partition keys.
func tableJSON(buckets int32, primaryKey []string, partitionKeys ...string) []byte {
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.Int}},
			{Name: "name", Type: metadata.DataType{Root: metadata.String}},
		}, PrimaryKey: primaryKey},
		PartitionKeys: partitionKeys, BucketCount: buckets,
		Properties: map[string]string{}, CustomProperties: map[string]string{},
	}
	if len(primaryKey) > 0 {
		d.Schema.Columns[0].Type.NotNull = true
	}
	d.Schema.AssignFieldIDs()
	return d.JSON()
}

// request is a wire request carrying msg, as a handler receives it on listener "FLUSS".
func request(t *testing.T, msg proto.Message) *wire.Request {
	t.Helper()
	body, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return &wire.Request{Body: body, Listener: "FLUSS"}
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code ferr.Code, what string) {
	t.Helper()
	if ferr.CodeOf(err) != code {
		t.Fatalf("%s: got %v (code %d), want code %d", what, err, ferr.CodeOf(err), code)
	}
}

// mustTable returns the table at fluss.name.
func mustTable(t *testing.T, c *Catalog, name string) *cluster.TableInfo {
	t.Helper()
	tbl, ok := c.TableByPath(cluster.TablePath{Database: DefaultDatabase, Table: name})
	if !ok {
		t.Fatalf("table %s not found", name)
	}
	return tbl
}
