package fluss

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/proto/flusspb"
)

// Reading log segments tiered to remote storage. A Fluss tablet server that no longer holds
// the records at a fetch offset answers with the remote segments that do (their directory,
// ids and offsets, and the byte position of the offset in the first one) instead of records.
// Like the Java client, the scanner then reads the segment file itself:
//
//	{remote_log_tablet_dir}/{remote_log_segment_id}/{start offset, 20 digits}.log
//
// holding the same record batches as a fetch answer, unprojected. This client reads segments
// on file systems mounted on the client's machine (remote.data.dir as a path or file: URI)
// and in S3-compatible object storage (s3:, s3a:), with the credentials and endpoint
// GET_FILESYSTEM_SECURITY_TOKEN hands out (remote_s3.go); other schemes (oss:, hdfs:, ...)
// fail with ErrRemoteLogNotSupported.

// ErrRemoteLogNotSupported is returned by Poll when a bucket's records at the scanner's
// position are only in remote storage the client cannot read (not a local file system).
var ErrRemoteLogNotSupported = errors.New("fluss: log segments in this remote storage cannot be read by this client")

// remoteSegmentPath returns the local path of the first segment of ri.
func remoteSegmentPath(ri *flusspb.PbRemoteLogFetchInfo) (string, error) {
	segs := ri.GetRemoteLogSegments()
	if len(segs) == 0 {
		return "", fmt.Errorf("fluss: remote log fetch info without segments")
	}
	dir := ri.GetRemoteLogTabletDir()
	switch {
	case strings.HasPrefix(dir, "file://"):
		dir = strings.TrimPrefix(dir, "file://")
	case strings.HasPrefix(dir, "file:"):
		dir = strings.TrimPrefix(dir, "file:")
	case strings.Contains(dir, "://") || !filepath.IsAbs(dir):
		return "", fmt.Errorf("%w: %s", ErrRemoteLogNotSupported, dir)
	}
	seg := segs[0]
	id := seg.GetRemoteLogSegmentId()
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return "", fmt.Errorf("fluss: invalid remote log segment id %q", id)
	}
	return filepath.Join(dir, id, fmt.Sprintf("%020d.log", seg.GetRemoteLogStartOffset())), nil
}

// readRemoteSegment reads from the first remote segment of ri (readRemote), from S3 when the
// remote directory is there.
func (f *logFetcher) readRemoteSegment(ctx context.Context, ri *flusspb.PbRemoteLogFetchInfo, maxBytes int) ([]byte, error) {
	if _, _, ok := s3Location(ri.GetRemoteLogTabletDir()); ok {
		return f.s3.readRemoteS3(ctx, f.conn, ri, maxBytes)
	}
	return readRemote(ri, maxBytes)
}

// readRemote reads the record batches at the start position of the first remote segment of
// ri: about maxBytes of them, but always at least one whole batch. The last batch may be
// torn; decoding stops before it, and the next fetch resumes from the offset after the last
// whole one.
func readRemote(ri *flusspb.PbRemoteLogFetchInfo, maxBytes int) ([]byte, error) {
	path, err := remoteSegmentPath(ri)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fluss: remote log segment: %w", err)
	}
	defer f.Close()
	pos := int64(ri.GetFirstStartPos())
	size := int64(ri.GetRemoteLogSegments()[0].GetSegmentSizeInBytes())
	if st, err := f.Stat(); err == nil && st.Size() > size {
		size = st.Size()
	}
	if pos < 0 || pos >= size {
		return nil, fmt.Errorf("fluss: remote log segment %s: start position %d outside its %d bytes", path, pos, size)
	}
	n := min(int64(maxBytes), size-pos)
	buf := make([]byte, max(n, record.LogOverhead))
	k, err := f.ReadAt(buf, pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("fluss: remote log segment %s: %w", path, err)
	}
	buf = buf[:k]
	if k < record.LogOverhead {
		return nil, fmt.Errorf("fluss: remote log segment %s: %d bytes at position %d, less than a batch header", path, k, pos)
	}
	// A first batch larger than maxBytes is read whole.
	if first := int64(record.NextBatchSize(buf)); first > int64(len(buf)) && first <= size-pos {
		whole := make([]byte, first)
		if _, err := f.ReadAt(whole, pos); err != nil {
			return nil, fmt.Errorf("fluss: remote log segment %s: %w", path, err)
		}
		buf = whole
	}
	return buf, nil
}
