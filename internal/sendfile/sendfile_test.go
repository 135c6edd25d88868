package sendfile

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func testFile(t testing.TB, size int) (*os.File, []byte) {
	t.Helper()
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i ^ i>>8)
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, content
}

// Many goroutines send different ranges of one descriptor at once; each receiver gets its
// own range, also after the file was unlinked (an open descriptor keeps the data), and the
// descriptor's seek position is never moved.
func TestSendUsesExplicitOffsetsOnASharedDescriptor(t *testing.T) {
	f, content := testFile(t, 4<<20)
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		client, server := tcpPair(t)
		pos, n := int64(i)*300_001, int64(1<<20+i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer server.Close()
			sent, handled, err := Send(server, f, pos, n)
			if err != nil || sent != n || (runtime.GOOS == "linux" && !handled) {
				t.Errorf("send %d: %d bytes, handled %v, %v", i, sent, handled, err)
			}
		}()
		got, err := io.ReadAll(client)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, content[pos:pos+n]) {
			t.Fatalf("receiver %d got %d bytes, not its range", i, len(got))
		}
	}
	wg.Wait()
	if off, _ := f.Seek(0, io.SeekCurrent); off != 0 {
		t.Fatalf("seek position moved to %d", off)
	}
}

// Send refuses writers without a descriptor, so the caller copies; Copy copies a range
// through its bounded buffer and reports a range past the end of the file.
func TestCopyIsTheFallback(t *testing.T) {
	f, content := testFile(t, 1<<20)
	var buf bytes.Buffer
	if _, handled, _ := Send(&buf, f, 0, 10); handled || buf.Len() != 0 {
		t.Fatalf("Send to a bytes.Buffer: handled %v, %d bytes written", handled, buf.Len())
	}
	if Supported(&buf) {
		t.Fatal("a bytes.Buffer is not a sendfile destination")
	}
	if n, err := Copy(&buf, f, 1000, 300_000); err != nil || n != 300_000 || !bytes.Equal(buf.Bytes(), content[1000:301_000]) {
		t.Fatalf("Copy: %d bytes, %v", n, err)
	}
	buf.Reset()
	if _, err := Copy(&buf, f, 1<<20-10, 20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Copy past the end: %v", err)
	}
}

// Copy reuses its buffer across calls: a TLS connection copies every file range of every
// response, and a fresh 64 KiB buffer per range cost a leader CPU in allocation and GC.
func TestCopyReusesItsBuffer(t *testing.T) {
	f, _ := testFile(t, 1<<20)
	const calls = 100
	copyRanges := func() {
		for i := range calls {
			if _, err := Copy(io.Discard, f, int64(i)*4096, 200_000); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyRanges() // the pool's first buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	copyRanges()
	runtime.ReadMemStats(&after)
	// One buffer per call would be calls × 64 KiB; a collection emptying the pool meanwhile
	// costs a few.
	if got := after.TotalAlloc - before.TotalAlloc; got > 16*copyBufferSize {
		t.Fatalf("%d calls of Copy allocated %d bytes, want at most %d (a reused buffer)", calls, got, 16*copyBufferSize)
	}
}

func BenchmarkCopy(b *testing.B) {
	f, _ := testFile(b, 1<<20)
	b.ReportAllocs()
	b.SetBytes(200_000)
	for b.Loop() {
		if _, err := Copy(io.Discard, f, 4096, 200_000); err != nil {
			b.Fatal(err)
		}
	}
}
