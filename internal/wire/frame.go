// Package wire implements the Fluss RPC transport: length-prefixed frames, request and
// response headers, API keys and versions, and the connection loops of both a server and a
// client. It knows nothing about what the APIs mean.
//
// Frame layout (all big-endian):
//
//	request:         int32 length | int16 api_key | int16 api_version | int32 request_id | protobuf
//	success/error:   int32 length | int8 type (0 ok, 1 error) | int32 request_id | protobuf
//
// length counts everything after itself. An error response carries an ErrorResponse message.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Header sizes, excluding the 4-byte length prefix.
const (
	RequestHeaderSize  = 8
	ResponseHeaderSize = 5
)

// Response types.
const (
	responseSuccess       = 0
	responseError         = 1
	responseServerFailure = 2
)

// DefaultMaxFrameSize is the largest request frame a server accepts (Fluss's
// netty.server.max-request-size default, 100 MiB).
const DefaultMaxFrameSize = 100 << 20

// ErrFrameTooLarge is returned for a frame whose length field exceeds the limit or is negative.
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// exactFrameBytes is the largest frame ReadFrame reads into a buffer of its announced size
// at once: the 16 MiB a FETCH_LOG answer is bounded to by default. ReadFrame reads the answers
// of a server that this side asked, whose size the request bounded (max_bytes); growing the
// buffer in steps cost a 1 MiB scan answer 3 MiB of allocations and 2 MiB of copies
// (docs/benchmarks.md, "Scan: what bounds it").
const exactFrameBytes = 16 << 20

// ReadFrame reads one frame from r into buf (growing it as needed) and returns the payload
// without the length prefix. A frame is rejected if its length is negative, above max, or
// below minSize. Up to exactFrameBytes the buffer is allocated at the announced length; beyond
// it, the buffer grows with the bytes received.
func ReadFrame(r io.Reader, buf []byte, minSize, max int) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if n < minSize || n > max {
		return nil, fmt.Errorf("%w: %d bytes (allowed %d..%d)", ErrFrameTooLarge, n, minSize, max)
	}
	if cap(buf) < n && n <= exactFrameBytes {
		buf = make([]byte, n)
	}
	buf, err := readBody(r, buf, n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// RequestHeader is the fixed header of a request frame.
type RequestHeader struct {
	APIKey     APIKey
	APIVersion int16
	RequestID  int32
}

// ParseRequestHeader splits a request payload into its header and protobuf body.
func ParseRequestHeader(payload []byte) (RequestHeader, []byte, error) {
	if len(payload) < RequestHeaderSize {
		return RequestHeader{}, nil, fmt.Errorf("wire: request of %d bytes is shorter than its header", len(payload))
	}
	h := RequestHeader{
		APIKey:     APIKey(binary.BigEndian.Uint16(payload[0:])),
		APIVersion: int16(binary.BigEndian.Uint16(payload[2:])),
		RequestID:  int32(binary.BigEndian.Uint32(payload[4:])),
	}
	return h, payload[RequestHeaderSize:], nil
}

// AppendRequestHeader appends a length placeholder and request header to dst. The caller
// appends the body and then calls FinishFrame.
func AppendRequestHeader(dst []byte, h RequestHeader) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIVersion))
	return binary.BigEndian.AppendUint32(dst, uint32(h.RequestID))
}

// appendResponseHeader appends a length placeholder and response header to dst.
func appendResponseHeader(dst []byte, typ byte, requestID int32) []byte {
	dst = append(dst, 0, 0, 0, 0, typ)
	return binary.BigEndian.AppendUint32(dst, uint32(requestID))
}

// FinishFrame writes the length prefix of the frame that starts at frame[0].
func FinishFrame(frame []byte) {
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
}

// ResponseHeader is the fixed header of a response frame.
type ResponseHeader struct {
	Type      byte
	RequestID int32
}

// ParseResponseHeader splits a response payload into its header and protobuf body. A
// SERVER_FAILURE response has no request id; RequestID is then -1.
func ParseResponseHeader(payload []byte) (ResponseHeader, []byte, error) {
	if len(payload) < 1 {
		return ResponseHeader{}, nil, errors.New("wire: empty response frame")
	}
	h := ResponseHeader{Type: payload[0], RequestID: -1}
	switch h.Type {
	case responseSuccess, responseError:
		if len(payload) < ResponseHeaderSize {
			return h, nil, fmt.Errorf("wire: response of %d bytes is shorter than its header", len(payload))
		}
		h.RequestID = int32(binary.BigEndian.Uint32(payload[1:]))
		return h, payload[ResponseHeaderSize:], nil
	case responseServerFailure:
		return h, payload[1:], nil
	default:
		return h, nil, fmt.Errorf("wire: unknown response type %d", h.Type)
	}
}
