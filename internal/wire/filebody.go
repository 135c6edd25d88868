package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/sendfile"
)

// Zero-copy responses.
//
// A response that implements FileBody encodes itself as heap bytes with byte ranges of open
// files spliced in at given positions (FETCH_LOG: the protobuf fields around each bucket's
// records, and the records as a range of a segment file). respond writes such a frame in
// pieces, under the connection's write lock so that pipelined responses keep their order:
// heap bytes through the write buffer, each file range with sendfile(2) straight from the
// page cache to the socket when the connection is a plain socket and the listener allows it
// (ListenerConfig.ZeroCopy), else through a bounded buffer (TLS or any other wrapped
// connection). Either way the frame's length prefix is computed first, from the heap bytes
// and the range sizes, so the client receives exactly the frame a copying server would send.
//
// Small responses (file bytes below minStreamedFileBytes) and listeners without ZeroCopy
// read the ranges into the frame buffer instead: one write system call for the whole
// frame, and small answers to a pipelining client still leave together.
//
// The design: docs/architecture.md, "Zero-copy fetches". What it saves and costs, measured:
// docs/benchmarks.md, "Zero-copy FETCH_LOG: what sendfile saves and costs (branch zerocopy, issue 26 item 2)".

// FileRange is a byte range of an open file that a response body carries verbatim.
type FileRange struct {
	// At is the position in the body's heap bytes (the slice AppendBodyParts returns) where
	// the range goes; ranges are ordered by At.
	At   int
	File *os.File
	Pos  int64
	Size int64
}

// FileBody is implemented by responses whose body carries byte ranges of files. The files
// must stay open and the ranges unchanged until the response's Release (see Releaser).
type FileBody interface {
	// AppendBodyParts appends the heap part of the protobuf encoding to dst and the file
	// ranges to ranges. Writing the heap bytes with each range inserted at its At gives a
	// valid protobuf encoding of the response.
	AppendBodyParts(dst []byte, ranges []FileRange) ([]byte, []FileRange, error)
}

// minStreamedFileBytes is the smallest sum of file bytes a response streams from its files;
// below it the ranges are read into the frame buffer (a sendfile call and a flush cost more
// than copying a few kilobytes, and the frame can share a write with the next responses).
const minStreamedFileBytes = 32 << 10

// File bytes of responses sent by this process: by sendfile(2), and copied through user
// space (read into a frame or a bounded buffer). For tests and operators: a listener with
// ZeroCopy on plain TCP sends everything but small responses by sendfile.
var fileBytesSent, fileBytesCopied atomic.Int64

// FileBytesStats returns the file bytes of responses this process has sent with sendfile(2)
// and those it copied through user space.
func FileBytesStats() (sent, copied int64) { return fileBytesSent.Load(), fileBytesCopied.Load() }

// encodeFileBody encodes a successful response of a FileBody into c.wbuf from start (the
// frame's length prefix): the response header, then the body. When the file ranges are to
// be streamed it returns them, their At made absolute in c.wbuf, with the length prefix
// already set; otherwise they were read into c.wbuf and it returns none.
func (c *serverConn) encodeFileBody(fb FileBody, start int, requestID int32) ([]FileRange, error) {
	c.wbuf = appendResponseHeader(c.wbuf, responseSuccess, requestID)
	var err error
	c.wbuf, c.ranges, err = fb.AppendBodyParts(c.wbuf, c.ranges[:0])
	if err != nil {
		return nil, err
	}
	ranges := c.ranges
	var fileBytes int64
	for _, r := range ranges {
		if r.At < start || r.At > len(c.wbuf) || r.Size < 0 {
			return nil, fmt.Errorf("wire: file range at %d of a %d-byte frame", r.At, len(c.wbuf))
		}
		fileBytes += r.Size
	}
	frameLen := int64(len(c.wbuf)-start-4) + fileBytes
	if frameLen > math.MaxInt32 {
		return nil, fmt.Errorf("wire: response of %d bytes does not fit a frame", frameLen)
	}
	if len(ranges) == 0 {
		return nil, nil
	}
	if c.cfg.ZeroCopy && fileBytes >= minStreamedFileBytes {
		binary.BigEndian.PutUint32(c.wbuf[start:], uint32(frameLen))
		return ranges, nil
	}
	// Read the ranges into the frame: move the heap bytes after each range up, back to front.
	heapEnd := len(c.wbuf)
	c.wbuf = append(c.wbuf, make([]byte, fileBytes)...)
	dst := len(c.wbuf)
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		next := heapEnd
		if i+1 < len(ranges) {
			next = ranges[i+1].At
		}
		dst -= next - r.At
		copy(c.wbuf[dst:], c.wbuf[r.At:next])
		dst -= int(r.Size)
		if _, err := r.File.ReadAt(c.wbuf[dst:dst+int(r.Size)], r.Pos); err != nil {
			return nil, fmt.Errorf("%w: %w", ferr.New(ferr.UnknownServerError, "read response bytes from %s", r.File.Name()), err)
		}
		heapEnd = r.At
	}
	clear(c.ranges) // drop the file references
	fileBytesCopied.Add(fileBytes)
	return nil, nil
}

// writeStreamed writes c.wbuf[start:] with ranges spliced in; c.wmu is held. Any error
// leaves a partial frame on the connection, which the caller must then close.
func (c *serverConn) writeStreamed(start int, ranges []FileRange) error {
	if c.cfg.IdleTimeout > 0 {
		// Bound every blocking write of the frame as flushLocked does.
		c.nc.SetWriteDeadline(time.Now().Add(c.cfg.IdleTimeout))
	}
	prev := start
	for _, r := range ranges {
		if _, err := c.w.Write(c.wbuf[prev:r.At]); err != nil {
			return err
		}
		prev = r.At
		if err := c.writeFileRange(r); err != nil {
			return err
		}
	}
	_, err := c.w.Write(c.wbuf[prev:])
	return err
}

// writeFileRange sends one range: the write buffer first, then sendfile(2) from the file to
// the socket when the connection allows it, else a copy through the write buffer.
func (c *serverConn) writeFileRange(r FileRange) error {
	if r.Size == 0 {
		return nil
	}
	if c.sendfile {
		if err := c.w.Flush(); err != nil {
			return err
		}
		n, handled, err := sendfile.Send(c.nc, r.File, r.Pos, r.Size)
		if handled {
			fileBytesSent.Add(n)
			if err != nil {
				return fmt.Errorf("sendfile %d bytes of %s: %w", r.Size, r.File.Name(), err)
			}
			return nil
		}
		c.sendfile = false // the kernel refused this socket; copy from now on
	}
	n, err := sendfile.Copy(c.w, r.File, r.Pos, r.Size)
	fileBytesCopied.Add(n)
	return err
}

// respondStreamed finishes respond for a frame whose file ranges are streamed: c.wmu is
// held and c.wbuf[start:] holds the heap bytes, length prefix set. The responses held back
// in the write buffer go out first, in order, and this one is flushed at once.
func (c *serverConn) respondStreamed(req *Request, start int, ranges []FileRange) {
	size := len(c.wbuf) - start
	for _, r := range ranges {
		size += int(r.Size)
	}
	werr := c.writeStreamed(start, ranges)
	c.wbuf = c.wbuf[:0]
	clear(c.ranges) // drop the file references
	if o := c.cfg.Observer; o != nil {
		o.RequestDone(req.Header.APIKey, req.size, size, time.Since(req.received), 0)
	}
	if werr == nil {
		c.unflushed = true
		c.flushLocked()
		return
	}
	// A partial frame is on the wire: the connection cannot carry another one.
	c.log.Info("closing connection: response write failed mid-frame", "api", req.Header.APIKey, "err", werr)
	c.lastWrite.Store(time.Now().UnixNano())
	c.nc.Close()
}
