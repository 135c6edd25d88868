package wire

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Response frames between minPooledFrame and exactFrameBytes are read into buffers from size
// classes of sync.Pools, so that a client reading large answers (FETCH_LOG: 1 MiB per
// bucket) does not allocate, zero and fault in a new buffer for each (docs/benchmarks.md,
// "The FETCH_LOG client decoder").
//
// Invariant: a pooled buffer is put back by the one goroutine that received its response,
// after the last read of the body, and only when nothing decoded from the body refers to it:
// proto.Unmarshal copies (ClientConn.Call), a CallDecode callback has returned, an
// AliasingDecoder reported it did not retain the body; a retaining AliasingDecoder's and a
// CallRaw caller's buffers are never put back.
const minPooledFrame = 64 << 10

// classesPerDoubling splits each power of two into size classes, so a buffer wastes at most
// a quarter of its size (a 1 MiB answer plus its header takes a 1.25 MiB buffer, not 2 MiB).
const classesPerDoubling = 4

// frameClasses is the number of size classes: the doublings from minPooledFrame (2^16) to
// exactFrameBytes (2^24), classesPerDoubling each (TestFrameClasses checks the bounds).
const frameClasses = (24 - 16) * classesPerDoubling

// framePools[i] holds *[]byte whose capacity is class i's size (frameClass).
var framePools [frameClasses]sync.Pool

// frameClass returns the size class of a frame of n bytes, minPooledFrame < n <=
// exactFrameBytes, and that class's buffer size.
func frameClass(n int) (int, int) {
	k := bits.Len(uint(n-1)) - 1 // 2^k < n <= 2^(k+1)
	base, step := 1<<k, 1<<k/classesPerDoubling
	q := (n - base + step - 1) / step // 1..classesPerDoubling
	return (k-bits.Len(minPooledFrame)+1)*classesPerDoubling + q - 1, base + q*step
}

// getFrame returns a pooled buffer of at least n bytes, sliced to n.
func getFrame(n int) *[]byte {
	i, size := frameClass(n)
	if p, ok := framePools[i].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, size)
	return &b
}

// putFrame returns a buffer from getFrame to its pool. poisonReleased, set by tests, first
// overwrites it, so that a reader of a released body sees garbage.
func putFrame(p *[]byte) {
	b := (*p)[:cap(*p)]
	if poisonReleased.Load() {
		for i := range b {
			b[i] = 0xdb
		}
	}
	if cap(b) <= minPooledFrame || cap(b) > exactFrameBytes {
		return // not a pooled buffer: left to the collector
	}
	i, size := frameClass(cap(b))
	if size != cap(b) {
		return
	}
	*p = b[:0]
	framePools[i].Put(p)
}

// poisonReleased makes putFrame overwrite released buffers; set only by tests.
var poisonReleased atomic.Bool

// readResponseFrame reads one response frame like ReadFrame, into a pooled buffer when its
// size is in the pooled range; pooled is then that buffer, for putFrame.
func readResponseFrame(r io.Reader, maxSize int) (payload []byte, pooled *[]byte, err error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, err
	}
	n := int(int32(uint32(lenBuf[0])<<24 | uint32(lenBuf[1])<<16 | uint32(lenBuf[2])<<8 | uint32(lenBuf[3])))
	if n < 1 || n > maxSize {
		return nil, nil, fmt.Errorf("%w: %d bytes (allowed %d..%d)", ErrFrameTooLarge, n, 1, maxSize)
	}
	var buf []byte
	if n > minPooledFrame && n <= exactFrameBytes {
		pooled = getFrame(n)
		buf = *pooled
	}
	buf, err = readBody(r, buf, n)
	if err != nil {
		if pooled != nil {
			putFrame(pooled)
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	return buf, pooled, nil
}
