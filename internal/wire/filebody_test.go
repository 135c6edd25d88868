package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/proto/flusspb"
)

// partsResponse is a FileBody made of heap pieces and ranges of one file, laid out from a
// seed. Its bytes need not be protobuf: the wire layer only frames them.
type partsResponse struct {
	*flusspb.DatabaseExistsResponse
	file     *os.File
	heap     [][]byte // heap[i] comes before ranges[i]; one more heap piece than ranges
	ranges   [][2]int64
	released *atomic.Int64
}

func (p *partsResponse) AppendBodyParts(dst []byte, ranges []FileRange) ([]byte, []FileRange, error) {
	for i, r := range p.ranges {
		dst = append(dst, p.heap[i]...)
		ranges = append(ranges, FileRange{At: len(dst), File: p.file, Pos: r[0], Size: r[1]})
	}
	return append(dst, p.heap[len(p.heap)-1]...), ranges, nil
}

func (p *partsResponse) Release() { p.released.Add(1) }

// want is the body a copying server sends.
func (p *partsResponse) want(content []byte) []byte {
	var out []byte
	for i, r := range p.ranges {
		out = append(out, p.heap[i]...)
		out = append(out, content[r[0]:r[0]+r[1]]...)
	}
	return append(out, p.heap[len(p.heap)-1]...)
}

func (p *partsResponse) fileBytes() int64 {
	var n int64
	for _, r := range p.ranges {
		n += r[1]
	}
	return n
}

// layout builds the response of seed: up to 4 ranges, large (streamed) for odd seeds.
func layout(seed uint64, f *os.File, size int64, released *atomic.Int64) *partsResponse {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := &partsResponse{DatabaseExistsResponse: &flusspb.DatabaseExistsResponse{}, file: f, released: released}
	n := rng.IntN(5)
	maxRange := int64(4 << 10)
	if seed%2 == 1 {
		maxRange = size / 2
	}
	for i := 0; i <= n; i++ {
		h := make([]byte, rng.IntN(40))
		for j := range h {
			h[j] = byte(rng.Uint32())
		}
		p.heap = append(p.heap, h)
		if i < n {
			l := rng.Int64N(maxRange) + 1
			p.ranges = append(p.ranges, [2]int64{rng.Int64N(size - l + 1), l})
		}
	}
	return p
}

// wrappedListener hands out connections that hide their socket (as a TLS connection does).
type wrappedListener struct{ net.Listener }

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return struct{ net.Conn }{c}, err
}

// Responses with file ranges arrive byte for byte as a copying server would send them, in
// order, whether the ranges go by sendfile, by a bounded copy over a wrapped connection, or
// read into the frame; the file-byte counters say which path carried them.
func TestFileBodiesAreFramedExactlyOnEveryPath(t *testing.T) {
	const size = 1 << 20
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i*7 + i>>9)
	}
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var released atomic.Int64
	svc := NewService(2)
	svc.Handle(DatabaseExists, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		var r flusspb.DatabaseExistsRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		seed := uint64(req.Header.RequestID)
		p := layout(seed, f, size, &released)
		if seed%5 == 0 { // some answers are produced off the request loop, concurrently
			return req.Defer(func() (proto.Message, error) { return p, nil })
		}
		return p, nil
	})
	for _, tc := range []struct {
		name     string
		zeroCopy bool
		wrap     bool
		sendfile bool // large responses go by sendfile
	}{
		{"sendfile", true, false, true},
		{"wrapped connection", true, true, false},
		{"zero-copy off", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ln net.Listener = loopback(t)
			if tc.wrap {
				ln = wrappedListener{ln}
			}
			addr := serveOn(t, ln, svc, ListenerConfig{Name: "FLUSS", ZeroCopy: tc.zeroCopy}, nil)
			const n = 40
			keys := make([]APIKey, n)
			bodies := make([]proto.Message, n)
			var wantSent, wantCopied int64
			for i := range keys {
				keys[i], bodies[i] = DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}
				p := layout(uint64(i), f, size, &released)
				if tc.sendfile && p.fileBytes() >= minStreamedFileBytes {
					wantSent += p.fileBytes()
				} else {
					wantCopied += p.fileBytes()
				}
			}
			released.Store(0)
			sent0, copied0 := FileBytesStats()
			nc, r := pipelined(t, addr, keys, bodies)
			nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			seen := make(map[int32]bool)
			last := int32(-1)
			for range n {
				id, body := readResponse(t, r)
				if seen[id] || id < 0 || id >= n {
					t.Fatalf("response with request id %d (seen before: %v)", id, seen[id])
				}
				seen[id] = true
				if id%5 != 0 { // answered on the request loop: in request order
					if id < last {
						t.Fatalf("response %d after response %d", id, last)
					}
					last = id
				}
				if want := layout(uint64(id), f, size, &released).want(content); !bytes.Equal(body, want) {
					t.Fatalf("response %d: %d body bytes differ from the %d expected", id, len(body), len(want))
				}
			}
			// Release runs after the response is written and counted.
			waitFor(t, func() bool { return released.Load() == n })
			sent, copied := FileBytesStats()
			if sent-sent0 != wantSent || copied-copied0 != wantCopied {
				t.Errorf("file bytes sent by sendfile %d, copied %d; want %d and %d", sent-sent0, copied-copied0, wantSent, wantCopied)
			}
			if tc.sendfile && wantSent == 0 {
				t.Fatal("no response was large enough to be streamed")
			}
		})
	}
}

// readResponse reads one success frame and returns its request id and body.
func readResponse(t *testing.T, r *bufio.Reader) (int32, []byte) {
	t.Helper()
	payload, err := ReadFrame(r, nil, ResponseHeaderSize, DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	if payload[0] != responseSuccess {
		t.Fatalf("response type %d", payload[0])
	}
	return int32(binary.BigEndian.Uint32(payload[1:])), payload[ResponseHeaderSize:]
}
