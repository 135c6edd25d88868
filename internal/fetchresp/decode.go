// Package fetchresp decodes FETCH_LOG responses on the client side without copying their
// records: each bucket's records alias the response body (docs/benchmarks.md, "The FETCH_LOG
// client decoder").
//
// Decode accepts what proto.Unmarshal (with AllowPartial, as wire.ClientConn.Call decodes)
// accepts and yields an equal message, except that unknown fields are dropped rather than
// kept; a differential test and a fuzz target hold it to that.
package fetchresp

import (
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/protowalk"
	"github.com/stromdb/strom/proto/flusspb"
)

// Decode decodes a FETCH_LOG response body into resp, which it resets first. Every bucket's
// Records aliases body (capacity trimmed to its length, so appending never writes into
// body): body must stay unmodified while any of them is in use.
func Decode(body []byte, resp *flusspb.FetchLogResponse) error {
	proto.Reset(resp)
	for len(body) > 0 {
		f, n, err := protowalk.Next(body)
		if err != nil {
			return err
		}
		body = body[n:]
		if f.Is(1, protowire.BytesType) {
			t := &flusspb.PbFetchLogRespForTable{}
			if err := decodeTable(f.Bytes, t); err != nil {
				return err
			}
			resp.TablesResp = append(resp.TablesResp, t)
		}
	}
	return nil
}

func decodeTable(body []byte, t *flusspb.PbFetchLogRespForTable) error {
	for len(body) > 0 {
		f, n, err := protowalk.Next(body)
		if err != nil {
			return err
		}
		body = body[n:]
		switch {
		case f.Is(1, protowire.VarintType):
			t.TableId = proto.Int64(int64(f.Varint))
		case f.Is(2, protowire.BytesType):
			b := &flusspb.PbFetchLogRespForBucket{}
			if err := decodeBucket(f.Bytes, b); err != nil {
				return err
			}
			t.BucketsResp = append(t.BucketsResp, b)
		}
	}
	return nil
}

// mergeOptions decodes the rare nested remote-log message the way proto.Unmarshal does: a
// second occurrence merges into the first.
var mergeOptions = proto.UnmarshalOptions{Merge: true, AllowPartial: true}

func decodeBucket(body []byte, b *flusspb.PbFetchLogRespForBucket) error {
	for len(body) > 0 {
		f, n, err := protowalk.Next(body)
		if err != nil {
			return err
		}
		body = body[n:]
		switch f.Type {
		case protowire.VarintType:
			switch f.Num {
			case 1:
				b.PartitionId = proto.Int64(int64(f.Varint))
			case 2:
				b.BucketId = proto.Int32(int32(f.Varint))
			case 3:
				b.ErrorCode = proto.Int32(int32(f.Varint))
			case 5:
				b.HighWatermark = proto.Int64(int64(f.Varint))
			case 6:
				b.LogStartOffset = proto.Int64(int64(f.Varint))
			case 9:
				b.FilteredEndOffset = proto.Int64(int64(f.Varint))
			}
		case protowire.BytesType:
			switch f.Num {
			case 4:
				b.ErrorMessage = proto.String(string(f.Bytes))
			case 7:
				if b.RemoteLogFetchInfo == nil {
					b.RemoteLogFetchInfo = &flusspb.PbRemoteLogFetchInfo{}
				}
				if err := mergeOptions.Unmarshal(f.Bytes, b.RemoteLogFetchInfo); err != nil {
					return err
				}
			case 8:
				b.Records = f.Bytes[:len(f.Bytes):len(f.Bytes)] // aliased; never appended to
			}
		}
	}
	return nil
}

// Aligned is a FETCH_LOG response that wire.ClientConn.Call decodes with Decode (it
// implements wire.AliasingDecoder), then copies every bucket's records that do not start at an
// 8-byte-aligned address into an aligned buffer of their own. Aligned records stay in the
// frame; misaligned ones would make the Arrow decode copy each batch body anyway (typed views
// need aligned buffers), one allocation per batch instead of one per bucket. The frame is
// retained (never reused by the connection) only while some records still alias it.
type Aligned struct{ *flusspb.FetchLogResponse }

// DecodeAliasing decodes body into the response and reports whether any records alias it.
func (a Aligned) DecodeAliasing(body []byte) (retained bool, err error) {
	if err := Decode(body, a.FetchLogResponse); err != nil {
		return false, err
	}
	for _, t := range a.TablesResp {
		for _, b := range t.BucketsResp {
			if len(b.Records) == 0 {
				continue
			}
			if uintptr(unsafe.Pointer(&b.Records[0]))%8 == 0 {
				retained = true
				continue
			}
			// make's allocations of 8 bytes or more are 8-byte aligned.
			c := make([]byte, len(b.Records), max(len(b.Records), 8))
			copy(c, b.Records)
			b.Records = c[:len(c):len(c)]
		}
	}
	return retained, nil
}
