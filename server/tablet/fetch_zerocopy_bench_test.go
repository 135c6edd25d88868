package tablet_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/config"
)

// benchLogBytes is the log one iteration of BenchmarkFetchLog reads back, benchInFlight
// the FETCH_LOGs it keeps in flight on its connection.
const (
	benchLogBytes = 64 << 20
	benchInFlight = 4
)

// benchFetchBytes is max_fetch_bytes of each FETCH_LOG (STROM_BENCH_FETCH_BYTES overrides).
var benchFetchBytes = int32(envInt("STROM_BENCH_FETCH_BYTES", 1<<20))

// benchTables is the number of one-bucket tables the log is spread over, each FETCH_LOG
// asking all of them (STROM_BENCH_TABLES overrides; 8 gives answers of 8 file ranges).
var benchTables = envInt("STROM_BENCH_TABLES", 1)

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkFetchLog reads a 64 MiB log table of 1 MiB batches back over one loopback
// connection in FETCH_LOGs of max_fetch_bytes 1 MiB (one batch each; the Rust client's
// default; STROM_BENCH_FETCH_BYTES sets another), 4 in flight, the records sent from the segment files (zero-copy) or read into each frame (copy,
// log.fetch.zero-copy=false); the client discards the bytes. "loopback" moves as many bytes
// over one plain TCP connection in 1 MiB writes: the yardstick of the other two (the issue's
// "share of one loopback stream"). B/op is what the server allocates per 64 MiB read.
func BenchmarkFetchLog(b *testing.B) {
	for _, zeroCopy := range []bool{true, false} {
		name := "zero-copy"
		if !zeroCopy {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) { benchFetchLog(b, zeroCopy) })
	}
	b.Run("loopback", benchLoopback)
}

func benchFetchLog(b *testing.B, zeroCopy bool) {
	coord, tablet, addr, stop := startNodeAt(b, b.TempDir(), func(c *config.Config) { c.FetchZeroCopy = zeroCopy })
	defer stop()
	// The log is spread over benchTables tables of one bucket each; every FETCH_LOG asks
	// all of them, as a client asks a tablet server for all the buckets it leads.
	batch := bigBatch(1<<20 - 100)
	var ids []int64
	for i := range benchTables {
		id := createLogTable(b, coord, fmt.Sprintf("bench_fetch_%d", i))
		for range benchLogBytes / len(batch) / benchTables {
			produce(b, tablet, id, batch)
		}
		ids = append(ids, id)
	}
	leo := latest(b, tablet, ids[0])
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 64<<10)
	buf := make([]byte, 1<<20)
	send := func(offset int64) {
		req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(64 << 20)}
		for _, id := range ids {
			req.TablesReq = append(req.TablesReq, &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(id), ProjectionPushdownEnabled: proto.Bool(false),
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(offset), MaxFetchBytes: proto.Int32(benchFetchBytes)}}})
		}
		frame := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.FetchLog, RequestID: int32(offset)})
		frame, err := proto.MarshalOptions{}.MarshalAppend(frame, req)
		if err != nil {
			b.Fatal(err)
		}
		wire.FinishFrame(frame)
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	receive := func() int64 {
		var prefix [4]byte
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			b.Fatal(err)
		}
		n := int64(binary.BigEndian.Uint32(prefix[:]))
		if _, err := io.CopyBuffer(io.Discard, io.LimitReader(r, n), buf); err != nil {
			b.Fatal(err)
		}
		return n
	}
	// readLog fetches the whole log, step batches per fetch (max_fetch_bytes holds that many
	// whole batches), benchInFlight requests in flight, as a client pipelining on one
	// connection does.
	step := max(int64(benchFetchBytes)/int64(len(batch)), 1)
	fetches := (leo + step - 1) / step
	readLog := func() (total int64) {
		sent := int64(0)
		for ; sent < min(benchInFlight, fetches); sent++ {
			send(sent * step)
		}
		for range fetches {
			total += receive()
			if sent < fetches {
				send(sent * step)
				sent++
			}
		}
		return total
	}
	b.SetBytes(readLog())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		readLog()
	}
}

func benchLoopback(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.CopyBuffer(io.Discard, c, make([]byte, 1<<20))
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	b.SetBytes(benchLogBytes)
	for b.Loop() {
		for range benchLogBytes / len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
	}
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
