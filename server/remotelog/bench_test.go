package remotelog

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
	"github.com/stromdb/strom/server/remote"
)

// BenchmarkTiering measures one pass copying 16 MiB of closed 1 MiB segments to a file store
// and committing them (MB/s is the tiering throughput of one bucket).
func BenchmarkTiering(b *testing.B) {
	const segBytes, total = 1 << 20, 16 << 20
	body := bytes.Repeat([]byte{7}, 16<<10)
	batch := record.Batch(record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: record.NoWriterID,
		BatchSequence: -1, RecordCount: 1}, body))
	table := &cluster.TableInfo{Path: cluster.TablePath{Database: "bench", Table: "t"}, ID: 1,
		Descriptor: metadata.TableDescriptor{BucketCount: 1, Properties: map[string]string{"table.log.tiered.local-segments": "1"}}}
	b.SetBytes(total)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		l, err := logstore.Open(context.Background(), filepath.Join(dir, "log"), logstore.Options{SegmentBytes: segBytes,
			FlushPolicy: logstore.FlushInterval(time.Hour), Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		for range total / len(batch) {
			if _, err := l.Append([]record.Batch{slicesClone(batch)}, time.Now().UnixMilli()); err != nil {
				b.Fatal(err)
			}
		}
		st, err := remote.Open(context.Background(), remote.Config{DataDir: filepath.Join(dir, "remote")}, quiet())
		if err != nil {
			b.Fatal(err)
		}
		m := New(Options{Config: Config{Interval: time.Minute, Threads: 1}, Storage: st, Meta: newMemStore(), Logger: quiet(),
			Buckets: func() []Bucket {
				return []Bucket{{Bucket: cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}, Table: table, Log: l, Leading: true}}
			}})
		b.StartTimer()
		m.RunOnce(context.Background())
		b.StopTimer()
		if m.Failures() != 0 {
			b.Fatal("a pass failed")
		}
		_ = l.Close()
		b.StartTimer()
	}
}

func slicesClone(b record.Batch) record.Batch { return append(record.Batch(nil), b...) }

// BenchmarkAppend measures appends of 16 KiB batches to a log with 1 MiB segments, alone and
// while tiering passes copy its closed segments to a file store and delete them locally (the
// effect of tiering on append throughput: appends never wait for remote storage, they share
// the disk and the CPU with it).
func BenchmarkAppend(b *testing.B) {
	for _, tiering := range []bool{false, true} {
		name := "alone"
		if tiering {
			name = "while-tiering"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			l, err := logstore.Open(context.Background(), filepath.Join(dir, "log"), logstore.Options{SegmentBytes: 1 << 20,
				FlushPolicy: logstore.FlushInterval(time.Hour), Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			batch := record.Batch(record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: record.NoWriterID,
				BatchSequence: -1, RecordCount: 1}, bytes.Repeat([]byte{7}, 16<<10)))
			stop := make(chan struct{})
			done := make(chan struct{})
			if tiering {
				st, err := remote.Open(context.Background(), remote.Config{DataDir: filepath.Join(dir, "remote")}, quiet())
				if err != nil {
					b.Fatal(err)
				}
				table := &cluster.TableInfo{Path: cluster.TablePath{Database: "bench", Table: "t"}, ID: 1,
					Descriptor: metadata.TableDescriptor{BucketCount: 1, Properties: map[string]string{"table.log.tiered.local-segments": "1"}}}
				m := New(Options{Config: Config{Interval: time.Millisecond, Threads: 1}, Storage: st, Meta: newMemStore(), Logger: quiet(),
					Buckets: func() []Bucket {
						return []Bucket{{Bucket: cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}, Table: table, Log: l, Leading: true}}
					}})
				go func() {
					defer close(done)
					for {
						select {
						case <-stop:
							return
						default:
						}
						m.RunOnce(context.Background())
						time.Sleep(time.Millisecond)
					}
				}()
			} else {
				close(done)
			}
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := l.Append([]record.Batch{slicesClone(batch)}, time.Now().UnixMilli()); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			<-done
		})
	}
}
