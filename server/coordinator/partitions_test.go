package coordinator

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// fakeReplicas records which partitions the coordinator opened and dropped.
type fakeReplicas struct {
	mu      sync.Mutex
	opened  []int64
	stopped []int64
}

func (f *fakeReplicas) BecomeLeader(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p != nil {
		f.opened = append(f.opened, p.ID)
	}
	return nil
}

func (f *fakeReplicas) StopReplicas(ctx context.Context, tableID, partitionID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, partitionID)
	return nil
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func openTestCoordinator(t *testing.T, clk *clock) (*Coordinator, *fakeReplicas) {
	t.Helper()
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c, err := Open(ctx, store, cluster.NewTopology(), Options{Now: clk.Now, AutoPartitionInterval: time.Hour}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	reps := &fakeReplicas{}
	if err := c.Start(ctx, reps); err != nil {
		t.Fatal(err)
	}
	return c, reps
}

func partitionNames(c *Coordinator, tableID int64) []string {
	var names []string
	for _, p := range c.Partitions(tableID) {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func autoPartitionedTable(retention string) []byte {
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.Int}},
			{Name: "day", Type: metadata.DataType{Root: metadata.String}},
		}},
		PartitionKeys: []string{"day"},
		BucketCount:   1,
		Properties: map[string]string{
			"table.auto-partition.enabled":       "true",
			"table.auto-partition.time-unit":     "DAY",
			"table.auto-partition.num-precreate": "2",
			"table.auto-partition.num-retention": retention,
			"table.auto-partition.time-zone":     "UTC",
		},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	return d.JSON()
}

func TestAutoPartitionPrecreatesAndExpires(t *testing.T) {
	clk := &clock{now: time.Date(2026, 3, 30, 22, 0, 0, 0, time.UTC)}
	c, reps := openTestCoordinator(t, clk)
	ctx := context.Background()
	path := cluster.TablePath{Database: "fluss", Table: "events"}
	if err := c.catalog.CreateTable(ctx, path, autoPartitionedTable("1"), false); err != nil {
		t.Fatal(err)
	}
	tbl, _ := c.TableByPath(path)
	if got, want := partitionNames(c, tbl.ID), []string{"20260330", "20260331"}; !slices.Equal(got, want) {
		t.Fatalf("after create: partitions %v, want %v", got, want)
	}
	if len(reps.opened) != 2 {
		t.Fatalf("opened %d partitions' buckets, want 2", len(reps.opened))
	}

	// Three days later (April 2nd): today and tomorrow are created, and the partitions
	// older than one day before today (March 30th and 31st) are dropped.
	clk.Add(72 * time.Hour)
	c.partitions.RunAutoPartition(ctx)
	if got, want := partitionNames(c, tbl.ID), []string{"20260402", "20260403"}; !slices.Equal(got, want) {
		t.Fatalf("after three days: partitions %v, want %v", got, want)
	}
	if len(reps.stopped) != 2 {
		t.Fatalf("stopped %d partitions, want 2 (%v)", len(reps.stopped), reps.stopped)
	}

	// A manual partition older than the retention window is refused.
	err := c.partitions.CreatePartition(ctx, path, map[string]string{"day": "20260101"}, false)
	if ferr.CodeOf(err) != ferr.PartitionSpecInvalidException {
		t.Fatalf("out-of-date partition: got %v, want PARTITION_SPEC_INVALID_EXCEPTION", err)
	}
}

func TestAutoPartitionNegativeRetentionKeepsEverything(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c, _ := openTestCoordinator(t, clk)
	ctx := context.Background()
	path := cluster.TablePath{Database: "fluss", Table: "forever"}
	if err := c.catalog.CreateTable(ctx, path, autoPartitionedTable("-1"), false); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * 24 * time.Hour)
	c.partitions.RunAutoPartition(ctx)
	tbl, _ := c.TableByPath(path)
	if got := partitionNames(c, tbl.ID); len(got) != 4 || got[0] != "20260101" {
		t.Fatalf("partitions %v, want the first two days kept plus two new ones", got)
	}
}
