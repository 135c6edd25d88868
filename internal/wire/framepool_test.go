package wire

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/proto/flusspb"
)

// TestFrameClasses: every pooled frame size maps to a class whose buffer holds it, wastes at
// most a quarter, and whose own size maps back to it; the classes cover the pooled range.
func TestFrameClasses(t *testing.T) {
	last := -1
	for n := minPooledFrame + 1; n <= exactFrameBytes; n += 1 + n/97 {
		i, size := frameClass(n)
		if i < 0 || i >= frameClasses {
			t.Fatalf("frame of %d bytes: class %d out of [0, %d)", n, i, frameClasses)
		}
		if size < n || size-n > size/classesPerDoubling {
			t.Fatalf("frame of %d bytes: class size %d", n, size)
		}
		if j, s := frameClass(size); j != i || s != size {
			t.Fatalf("class size %d maps to class %d (%d), not %d", size, j, s, i)
		}
		if i < last {
			t.Fatalf("frame of %d bytes: class %d below the previous size's %d", n, i, last)
		}
		last = i
	}
	if i, size := frameClass(exactFrameBytes); i != frameClasses-1 || size != exactFrameBytes {
		t.Fatalf("largest pooled frame: class %d size %d, want %d %d", i, size, frameClasses-1, exactFrameBytes)
	}
	if i, _ := frameClass(minPooledFrame + 1); i != 0 {
		t.Fatalf("smallest pooled frame: class %d, want 0", i)
	}
}

// keepingResponse keeps its body, as fetchresp.Aliasing keeps FETCH_LOG records.
type keepingResponse struct {
	*flusspb.MetadataResponse
	kept []byte
}

func (k *keepingResponse) DecodeAliasing(body []byte) (bool, error) {
	k.kept = body
	return true, proto.Unmarshal(body, k.MetadataResponse)
}

// copyingResponse decodes its body itself and keeps nothing of it.
type copyingResponse struct{ *flusspb.MetadataResponse }

func (c copyingResponse) DecodeAliasing(body []byte) (bool, error) {
	return false, proto.Unmarshal(body, c.MetadataResponse)
}

// TestPooledFramesNotReusedWhileReferenced: with released buffers overwritten, answers of
// pooled size decoded by Call (proto.Unmarshal, or an AliasingDecoder that copies), kept by an
// AliasingDecoder that retains its body or returned by CallRaw stay intact while later answers reuse the pool, and CallDecode's body is reused
// once its callback returned — so the pool is in use and the check can fail.
func TestPooledFramesNotReusedWhileReferenced(t *testing.T) {
	poisonReleased.Store(true)
	t.Cleanup(func() { poisonReleased.Store(false) })
	name := func(i int) string { return string(bytes.Repeat([]byte{byte('a' + i%26)}, 300<<10)) }
	addr := fakeClientServer(t, func(nc net.Conn, r *bufio.Reader) {
		for i := 0; ; i++ {
			h, ok := readRequest(r)
			if !ok {
				return
			}
			writeResponse(t, nc, responseSuccess, h.RequestID, &flusspb.MetadataResponse{TabletServers: []*flusspb.PbServerNode{{NodeId: proto.Int32(int32(i)), Host: proto.String(name(i)), Port: proto.Int32(1)}}})
		}
	})
	c, err := Dial(context.Background(), addr, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var decoded []*flusspb.MetadataResponse
	var kept []*keepingResponse
	var raw [][]byte
	var callbackBodies [][]byte
	for i := 0; i < 40; i++ {
		switch i % 4 {
		case 0:
			m := &flusspb.MetadataResponse{}
			var into proto.Message = m
			if i%8 == 4 {
				into = copyingResponse{m} // not retained: its buffer goes back to the pool
			}
			if err := c.Call(ctx, GetMetadata, &flusspb.MetadataRequest{}, into); err != nil {
				t.Fatal(err)
			}
			decoded = append(decoded, m)
		case 1:
			k := &keepingResponse{MetadataResponse: &flusspb.MetadataResponse{}}
			if err := c.Call(ctx, GetMetadata, &flusspb.MetadataRequest{}, k); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, k)
		case 2:
			body, err := proto.Marshal(&flusspb.MetadataRequest{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.CallRaw(ctx, GetMetadata, 0, body)
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, b)
		case 3:
			err := c.CallDecode(ctx, GetMetadata, &flusspb.MetadataRequest{}, func(body []byte) error {
				var m flusspb.MetadataResponse
				if err := proto.Unmarshal(body, &m); err != nil {
					return err
				}
				if got := m.TabletServers[0].GetHost(); got != name(i) {
					t.Errorf("answer %d read in its callback: wrong host", i)
				}
				callbackBodies = append(callbackBodies, body)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for j, m := range decoded {
		if m.TabletServers[0].GetHost() != name(int(m.TabletServers[0].GetNodeId())) {
			t.Fatalf("decoded answer %d changed after its buffer was released", j)
		}
	}
	for j, k := range kept {
		var m flusspb.MetadataResponse
		if err := proto.Unmarshal(k.kept, &m); err != nil || m.TabletServers[0].GetHost() != name(int(m.TabletServers[0].GetNodeId())) {
			t.Fatalf("kept answer %d was overwritten: its buffer was reused", j)
		}
	}
	for j, b := range raw {
		var m flusspb.MetadataResponse
		if err := proto.Unmarshal(b, &m); err != nil || m.TabletServers[0].GetHost() != name(int(m.TabletServers[0].GetNodeId())) {
			t.Fatalf("raw answer %d was overwritten: its buffer was reused", j)
		}
	}
	poisoned := 0
	for _, b := range callbackBodies {
		if bytes.Count(b, []byte{0xdb}) > len(b)/2 {
			poisoned++
		}
	}
	if poisoned == 0 {
		t.Fatal("no CallDecode body was released to the pool")
	}
}
