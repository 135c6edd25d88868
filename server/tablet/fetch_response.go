package tablet

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/logstore"
)

// fetchResponse is a FETCH_LOG response whose record bytes may still be in segment files.
// It encodes itself (wire.BodyAppender) so that those bytes are read straight into the
// response frame, once, instead of into a buffer that protobuf marshalling copies again.
//
// Invariant: every fileRecords entry's bucket is in FetchLogResponse with Records set to a
// non-nil empty slice, and its ReadResult is held until Release.
type fetchResponse struct {
	*flusspb.FetchLogResponse
	fileRecords []fileRecords
	heapBytes   int // record bytes held in memory (projected), not in segment files
	// remote counts buckets answered with remote_log_fetch_info: such an answer is
	// complete at once (the client reads the records from remote storage), so a fetch
	// holding one does not wait for min_bytes.
	remote int
}

type fileRecords struct {
	bucket *flusspb.PbFetchLogRespForBucket
	res    logstore.ReadResult
}

// Release returns the segment references; the wire layer calls it once the response is
// written, and the handler for responses it discards.
func (f *fetchResponse) Release() {
	for i := range f.fileRecords {
		f.fileRecords[i].res.Release()
	}
	f.fileRecords = nil
}

// PbFetchLogRespForTable field numbers, and the records field of PbFetchLogRespForBucket.
const (
	fieldTablesResp  = 1 // FetchLogResponse.tables_resp
	fieldTableID     = 1 // PbFetchLogRespForTable.table_id
	fieldBucketsResp = 2 // PbFetchLogRespForTable.buckets_resp
	fieldRecords     = 8 // PbFetchLogRespForBucket.records
	bytesTagSize     = 1 // every field number here is < 16
)

// AppendBody appends the protobuf encoding of the response to dst.
func (f *fetchResponse) AppendBody(dst []byte) ([]byte, error) {
	if len(f.fileRecords) == 0 {
		return proto.MarshalOptions{}.MarshalAppend(dst, f.FetchLogResponse)
	}
	fromFile := make(map[*flusspb.PbFetchLogRespForBucket]*logstore.ReadResult, len(f.fileRecords))
	for i := range f.fileRecords {
		fromFile[f.fileRecords[i].bucket] = &f.fileRecords[i].res
	}
	bucketSize := func(b *flusspb.PbFetchLogRespForBucket) int {
		n := proto.Size(b)
		if r, ok := fromFile[b]; ok {
			// proto.Size counted the empty records field (tag + zero length); replace it.
			n += protowire.SizeVarint(uint64(r.Size)) - 1 + int(r.Size)
		}
		return n
	}
	for _, t := range f.TablesResp {
		size := bytesTagSize + protowire.SizeVarint(uint64(t.GetTableId()))
		for _, b := range t.BucketsResp {
			size += bytesTagSize + protowire.SizeBytes(bucketSize(b))
		}
		dst = protowire.AppendTag(dst, fieldTablesResp, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(size))
		dst = protowire.AppendTag(dst, fieldTableID, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(t.GetTableId()))
		for _, b := range t.BucketsResp {
			dst = protowire.AppendTag(dst, fieldBucketsResp, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(bucketSize(b)))
			r, ok := fromFile[b]
			if !ok {
				var err error
				if dst, err = (proto.MarshalOptions{}).MarshalAppend(dst, b); err != nil {
					return dst, err
				}
				continue
			}
			records := b.Records
			b.Records = nil // encoded below from the file
			var err error
			dst, err = proto.MarshalOptions{}.MarshalAppend(dst, b)
			b.Records = records
			if err != nil {
				return dst, err
			}
			dst = protowire.AppendTag(dst, fieldRecords, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(r.Size))
			start := len(dst)
			dst = append(dst, make([]byte, r.Size)...)
			if _, err := r.File.ReadAt(dst[start:], r.Position); err != nil {
				return dst[:start], fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "read fetched records"), err)
			}
		}
	}
	return dst, nil
}
