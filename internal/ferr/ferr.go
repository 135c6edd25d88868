// Package ferr defines Fluss error codes and the error type that carries one. Every layer of
// Strom returns *Error (possibly wrapped) when the client must see a specific Fluss code; the
// wire layer maps anything else to UNKNOWN_SERVER_ERROR.
package ferr

import (
	"errors"
	"fmt"
)

// Code is a Fluss error code.
type Code int32

// String returns the Fluss name of the code, e.g. TABLE_NOT_EXIST.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("ERROR_%d", int32(c))
}

// Retriable reports whether clients are expected to retry an operation that failed with c.
func (c Code) Retriable() bool { return retriable[c] }

// Error is an error with a Fluss error code and a human-readable message.
type Error struct {
	Code    Code
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// New returns an *Error with code c and a formatted message.
func New(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Fluss code carried by err (searching wrapped errors), None for nil, and
// UnknownServerError for errors that carry no code.
func CodeOf(err error) Code {
	if err == nil {
		return None
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return UnknownServerError
}

// MessageOf returns the message to send to a client for err: the *Error's message when err
// carries a code, otherwise err's text.
func MessageOf(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}
