package tablet

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/logstore"
)

// fetchResponse is a FETCH_LOG response whose record bytes may still be in segment files.
// It encodes itself as a wire.FileBody: the protobuf fields in memory, each bucket's
// records as the file ranges they occupy, which the wire layer sends with sendfile(2) or
// copies (internal/wire/filebody.go); the segments stay open until Release.
//
// Invariant: every fileRecords entry's bucket is in FetchLogResponse with Records set to a
// non-nil empty slice, and its ReadResults are held until Release.
type fetchResponse struct {
	*flusspb.FetchLogResponse
	fileRecords []fileRecords
	heapBytes   int // record bytes held in memory (projected), not in segment files
	// remote counts buckets answered with remote_log_fetch_info: such an answer is
	// complete at once (the client reads the records from remote storage), so a fetch
	// holding one does not wait for min_bytes.
	remote int
}

// fileRecords are the records of one bucket: the concatenation of ranges, in order (one
// range for a plain read; the runs of batches a scan filter kept otherwise).
type fileRecords struct {
	bucket *flusspb.PbFetchLogRespForBucket
	ranges []logstore.ReadResult
}

// size is the length of the bucket's records field.
func (f *fileRecords) size() int64 {
	var n int64
	for i := range f.ranges {
		n += f.ranges[i].Size
	}
	return n
}

// addFileRecords answers bo's records with ranges (taking over their references).
func (f *fetchResponse) addFileRecords(bo *flusspb.PbFetchLogRespForBucket, ranges ...logstore.ReadResult) {
	bo.Records = []byte{}
	f.fileRecords = append(f.fileRecords, fileRecords{bucket: bo, ranges: ranges})
}

// Release returns the segment references; the wire layer calls it once the response is
// written, and the handler for responses it discards.
func (f *fetchResponse) Release() {
	for i := range f.fileRecords {
		for j := range f.fileRecords[i].ranges {
			f.fileRecords[i].ranges[j].Release()
		}
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

// AppendBodyParts implements wire.FileBody. A bucket answered from files is encoded as its
// other fields followed by the records field, whose length prefix is the sum of its ranges;
// message lengths are computed before anything is appended, so the encoding is exact
// without the record bytes in memory. Fields are in field-number order except records,
// which comes after filtered_end_offset when both are set (protobuf parsers accept fields in
// any order).
func (f *fetchResponse) AppendBodyParts(dst []byte, ranges []wire.FileRange) ([]byte, []wire.FileRange, error) {
	if len(f.fileRecords) == 0 {
		out, err := proto.MarshalOptions{}.MarshalAppend(dst, f.FetchLogResponse)
		return out, ranges, err
	}
	fromFile := make(map[*flusspb.PbFetchLogRespForBucket]*fileRecords, len(f.fileRecords))
	for i := range f.fileRecords {
		fromFile[f.fileRecords[i].bucket] = &f.fileRecords[i]
	}
	bucketSize := func(b *flusspb.PbFetchLogRespForBucket) int {
		n := proto.Size(b)
		if r, ok := fromFile[b]; ok {
			// proto.Size counted the empty records field (tag + zero length); replace it.
			size := r.size()
			n += protowire.SizeVarint(uint64(size)) - 1 + int(size)
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
					return dst, ranges, err
				}
				continue
			}
			records := b.Records
			b.Records = nil // encoded below from the files
			var err error
			dst, err = proto.MarshalOptions{}.MarshalAppend(dst, b)
			b.Records = records
			if err != nil {
				return dst, ranges, err
			}
			dst = protowire.AppendTag(dst, fieldRecords, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(r.size()))
			for i := range r.ranges {
				rr := &r.ranges[i]
				if rr.Size > 0 {
					ranges = append(ranges, wire.FileRange{At: len(dst), File: rr.File, Pos: rr.Position, Size: rr.Size})
				}
			}
		}
	}
	return dst, ranges, nil
}
