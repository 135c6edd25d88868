package cli

import (
	"encoding/binary"
	"regexp"
	"strconv"
)

// frameLength finds the length a Fluss client read where it expected a frame, in the
// client's "frame length out of range: N bytes" error (package fluss does not type it).
var frameLength = regexp.MustCompile(`frame length out of range: (-?\d+) bytes`)

// wrongPort recognises an answer from something that is not a Fluss RPC listener: its first
// four bytes, read as a frame length, spell what it is. "HTTP" (1213486160) is the start of
// every HTTP response, e.g. from Strom's own metrics listener (9249).
func wrongPort(err error) (what string, ok bool) {
	m := frameLength.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	n, perr := strconv.ParseInt(m[1], 10, 32)
	if perr != nil {
		return "", false
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(int32(n)))
	if string(b[:]) == "HTTP" {
		return "an HTTP port", true
	}
	return "", false
}
