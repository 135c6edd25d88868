package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

// fakeClientServer accepts one connection, answers API_VERSIONS (advertising GET_METADATA), and
// then hands the connection to after, before reading anything more.
func fakeClientServer(t *testing.T, after func(nc net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		h, ok := readRequest(r)
		if !ok || h.APIKey != APIVersions {
			return
		}
		resp := &flusspb.ApiVersionsResponse{ServerType: proto.Int32(ServerTablet), ApiVersions: []*flusspb.PbApiVersion{
			{ApiKey: proto.Int32(int32(GetMetadata)), MinVersion: proto.Int32(0), MaxVersion: proto.Int32(0)},
		}}
		writeResponse(t, nc, responseSuccess, h.RequestID, resp)
		after(nc, r)
	}()
	return ln.Addr().String()
}

// readRequest reads one request frame and returns its header.
func readRequest(r *bufio.Reader) (RequestHeader, bool) {
	payload, err := ReadFrame(r, nil, RequestHeaderSize, 1<<30)
	if err != nil {
		return RequestHeader{}, false
	}
	h, _, err := ParseRequestHeader(payload)
	return h, err == nil
}

func writeResponse(t *testing.T, nc net.Conn, typ byte, id int32, m proto.Message) {
	body, err := proto.Marshal(m)
	if err != nil {
		t.Error(err)
		return
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(1+4+len(body)))
	frame = append(frame, typ)
	frame = binary.BigEndian.AppendUint32(frame, uint32(id))
	_, _ = nc.Write(append(frame, body...))
}

// A request the server does not read must not block past its context: the write gives up
// at the deadline and the connection is marked broken (a partial frame is on the wire).
func TestClientWriteHonoursContext(t *testing.T) {
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	addr := fakeClientServer(t, func(net.Conn, *bufio.Reader) { <-stall })
	c, err := Dial(context.Background(), addr, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Far larger than the loopback socket buffers, so the write blocks.
	big := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(string(make([]byte, 64<<20))), TableName: proto.String("t")}}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Call(ctx, GetMetadata, big, &flusspb.MetadataResponse{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("call returned after %v", d)
	}
	if c.Err() == nil {
		t.Fatal("connection still usable after an interrupted write")
	}
}

// Cancelling the context (no deadline) interrupts a blocked write too.
func TestClientWriteHonoursCancel(t *testing.T) {
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	addr := fakeClientServer(t, func(net.Conn, *bufio.Reader) { <-stall })
	c, err := Dial(context.Background(), addr, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(string(make([]byte, 64<<20))), TableName: proto.String("t")}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if err := c.Call(ctx, GetMetadata, big, &flusspb.MetadataResponse{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// A response frame above MaxResponseSize breaks the connection instead of being allocated.
func TestClientMaxResponseSize(t *testing.T) {
	addr := fakeClientServer(t, func(nc net.Conn, r *bufio.Reader) {
		h, ok := readRequest(r)
		if !ok {
			return
		}
		// Announce a 1 GiB frame; send only its header.
		frame := binary.BigEndian.AppendUint32(nil, 1<<30)
		frame = append(frame, responseSuccess)
		frame = binary.BigEndian.AppendUint32(frame, uint32(h.RequestID))
		_, _ = nc.Write(frame)
		time.Sleep(time.Second)
	})
	c, err := Dial(context.Background(), addr, ClientConfig{MaxResponseSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Call(ctx, GetMetadata, &flusspb.MetadataRequest{}, &flusspb.MetadataResponse{})
	if !errors.Is(err, ErrConnClosed) || !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want a closed connection because of the frame size", err)
	}
}

// An error response comes back as the server's code and message.
func TestClientErrorResponse(t *testing.T) {
	addr := fakeClientServer(t, func(nc net.Conn, r *bufio.Reader) {
		h, ok := readRequest(r)
		if !ok {
			return
		}
		writeResponse(t, nc, responseError, h.RequestID, &flusspb.ErrorResponse{ErrorCode: proto.Int32(int32(ferr.TableNotExist)), ErrorMessage: proto.String("no such table")})
		time.Sleep(time.Second)
	})
	c, err := Dial(context.Background(), addr, ClientConfig{ExpectServerType: ServerTablet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Call(context.Background(), GetMetadata, &flusspb.MetadataRequest{}, &flusspb.MetadataResponse{})
	var fe *ferr.Error
	if !errors.As(err, &fe) || fe.Code != ferr.TableNotExist || fe.Message != "no such table" {
		t.Fatalf("err = %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("an error response broke the connection: %v", c.Err())
	}
}

// The handshake refuses a server of the wrong role.
func TestClientExpectServerType(t *testing.T) {
	addr := fakeClientServer(t, func(net.Conn, *bufio.Reader) {})
	if _, err := Dial(context.Background(), addr, ClientConfig{ExpectServerType: ServerCoordinator}); err == nil {
		t.Fatal("dialed a tablet server as a coordinator")
	}
}
