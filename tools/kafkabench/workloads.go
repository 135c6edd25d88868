package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workload names, in the order a round runs them.
const (
	wlProduce     = "kafka-produce" // franz-go, idempotent, acks=all
	wlConsume     = "kafka-consume" // franz-go, every partition from its start offset
	wlFlussAppend = "fluss-append"  // the Go Fluss client, the same rows into another topic-shaped table
)

// sample is one workload's measurement in one round.
type sample struct {
	System        string  `json:"system"`
	Round         int     `json:"round"`
	Workload      string  `json:"workload"`
	Records       int     `json:"records"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // value bytes, 1e6 bytes per MB
	// ServerCPUus is the server process's user+system CPU time per record, in µs; -1 when
	// the process is not known.
	ServerCPUus float64 `json:"server_cpu_us_per_record"`
}

// runWorkloads creates a topic on the broker at kafkaAddr, produces w.records records to it,
// consumes them back, and, with a Fluss bootstrap (Strom), appends the same rows to a second
// topic-shaped table with the Go client. pid is the server's process id (0: unknown).
func runWorkloads(ctx context.Context, w workload, system, kafkaAddr, flussBootstrap string, pid int, topic string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*w.timeout)
	defer cancel()
	value := make([]byte, w.valueBytes)
	// Random bytes: neither side gets to compress them (compression is off anyway).
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(value)

	var out []sample
	measure := func(name string, f func(context.Context) error) error {
		wctx, cancel := context.WithTimeout(ctx, w.timeout)
		defer cancel()
		cpu0 := processCPU(pid)
		start := time.Now()
		if err := f(wctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		secs := time.Since(start).Seconds()
		s := sample{System: system, Workload: name, Records: w.records, Seconds: secs,
			RecordsPerSec: float64(w.records) / secs, MBPerSec: float64(w.records*w.valueBytes) / secs / 1e6, ServerCPUus: -1}
		if cpu1 := processCPU(pid); cpu0 >= 0 && cpu1 >= 0 {
			s.ServerCPUus = (cpu1 - cpu0) * 1e6 / float64(w.records)
		}
		out = append(out, s)
		return nil
	}

	if err := createTopic(ctx, kafkaAddr, topic, w.partitions); err != nil {
		return nil, err
	}
	if err := measure(wlProduce, func(ctx context.Context) error { return produce(ctx, kafkaAddr, topic, w.records, value) }); err != nil {
		return out, err
	}
	if err := measure(wlConsume, func(ctx context.Context) error {
		return consume(ctx, kafkaAddr, topic, w.partitions, w.records, value)
	}); err != nil {
		return out, err
	}
	if flussBootstrap != "" {
		table := topic + "_fluss"
		if err := createTopic(ctx, kafkaAddr, table, w.partitions); err != nil {
			return out, err
		}
		if err := measure(wlFlussAppend, func(ctx context.Context) error {
			return flussAppend(ctx, flussBootstrap, table, w.records, value)
		}); err != nil {
			return out, err
		}
	}
	return out, deleteTopics(ctx, kafkaAddr, topic, topic+"_fluss")
}

// createTopic creates topic with the given partitions and replication factor 1 (both servers
// are single nodes).
func createTopic(ctx context.Context, addr, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, int32(partitions), 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	return nil
}

// deleteTopics drops the round's topics, so that rounds do not fill the disk.
func deleteTopics(ctx context.Context, addr string, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = topics
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("delete topics: %w", err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %v: %w", rt.Topic, err)
		}
	}
	return nil
}

// produce sends n records with franz-go's defaults for durability — an idempotent producer,
// acks=all — and no compression, and returns when every record is acknowledged.
func produce(ctx context.Context, addr, topic string, n int, value []byte) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return *e
	}
	return nil
}

// consume reads every partition from its start until n records arrived, checking each
// record's value.
func consume(ctx context.Context, addr, topic string, partitions, n int, value []byte) error {
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return err
	}
	defer cl.Close()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d records read: %w", got, n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad == nil && !bytes.Equal(r.Value, value) {
				bad = fmt.Errorf("record %s[%d]@%d: value of %d bytes differs from the one produced", r.Topic, r.Partition, r.Offset, len(r.Value))
			}
			got++
		})
		if bad != nil {
			return bad
		}
	}
	if got != n {
		return fmt.Errorf("read %d records, produced %d", got, n)
	}
	return nil
}

// flussAppend appends n rows shaped like Kafka records without key and headers (key NULL,
// the value, no headers, a timestamp) to the topic-shaped table kafka.<table>, one Append
// per row as an application would, and waits for every acknowledgement.
func flussAppend(ctx context.Context, bootstrap, table string, n int, value []byte) error {
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		return err
	}
	defer conn.Close()
	t, err := conn.Table(ctx, fluss.NewTablePath("kafka", table))
	if err != nil {
		return err
	}
	wr, err := t.NewAppend().CreateWriter()
	if err != nil {
		return err
	}
	defer wr.Close()
	now := time.Now()
	headers := []any{}
	for range n {
		if _, err := wr.Append(ctx, fluss.Row{nil, value, headers, now}); err != nil {
			return err
		}
	}
	return wr.Flush(ctx)
}

// processCPU is the user+system CPU time of process pid in seconds, from /proc; -1 when
// pid is 0 or unreadable.
func processCPU(pid int) float64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis
	// start with field 3 (state), so utime and stime (fields 14, 15) are at 11 and 12.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100
