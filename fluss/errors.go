package fluss

import (
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
)

// Error is an error with a Fluss error code, as returned by the server (whole-request or
// per-bucket errors) or produced by the client for the same conditions. Retrieve it with
// errors.As:
//
//	var fe *fluss.Error
//	if errors.As(err, &fe) && fe.Code == fluss.ErrTableNotExist { ... }
//
// or test for one code with errors.Is(err, fluss.ErrTableNotExist).
type Error struct {
	// Code is the Fluss error code.
	Code ErrorCode
	// Message is the server's (or client's) explanation; it may be empty.
	Message string
}

// Error returns "NAME: message", e.g. "TABLE_NOT_EXIST: table fluss.t does not exist".
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.Name()
	}
	return e.Code.Name() + ": " + e.Message
}

// Name returns the Fluss name of the error code, e.g. "TABLE_NOT_EXIST".
func (e *Error) Name() string { return e.Code.Name() }

// Retriable reports whether the official clients retry an operation that failed this way.
func (e *Error) Retriable() bool { return e.Code.Retriable() }

// Is makes errors.Is(err, code) true when err carries an *Error with that code.
func (e *Error) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && c == e.Code
}

// newError returns an *Error with code c and a formatted message.
func newError(c ErrorCode, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is a Fluss error code (the protocol's Errors table). An ErrorCode is itself an
// error, so that the constants below serve as sentinels for errors.Is:
//
//	if errors.Is(err, fluss.ErrTableNotExist) { ... }
type ErrorCode int32

// Name returns the Fluss name of the code, e.g. "TABLE_NOT_EXIST", or "ERROR_<n>" for a
// code this client does not know.
func (c ErrorCode) Name() string { return ferr.Code(c).String() }

// String returns the code's Name.
func (c ErrorCode) String() string { return c.Name() }

// Error returns the code's Name, so that an ErrorCode can be compared with errors.Is.
func (c ErrorCode) Error() string { return c.Name() }

// Retriable reports whether clients are expected to retry an operation that failed with c
// (Fluss's RetriableException subclasses: network errors, leadership changes, storage and
// replication pressure, ...).
func (c ErrorCode) Retriable() bool { return ferr.Code(c).Retriable() }

// The Fluss error codes. NONE (0) means success and has no constant.
const (
	ErrUnknownServerError                  ErrorCode = -1
	ErrNetworkException                    ErrorCode = 1
	ErrUnsupportedVersion                  ErrorCode = 2
	ErrCorruptMessage                      ErrorCode = 3
	ErrDatabaseNotExist                    ErrorCode = 4
	ErrDatabaseNotEmpty                    ErrorCode = 5
	ErrDatabaseAlreadyExist                ErrorCode = 6
	ErrTableNotExist                       ErrorCode = 7
	ErrTableAlreadyExist                   ErrorCode = 8
	ErrSchemaNotExist                      ErrorCode = 9
	ErrLogStorage                          ErrorCode = 10
	ErrKvStorage                           ErrorCode = 11
	ErrNotLeaderOrFollower                 ErrorCode = 12
	ErrRecordTooLarge                      ErrorCode = 13
	ErrCorruptRecord                       ErrorCode = 14
	ErrInvalidTable                        ErrorCode = 15
	ErrInvalidDatabase                     ErrorCode = 16
	ErrInvalidReplicationFactor            ErrorCode = 17
	ErrInvalidRequiredAcks                 ErrorCode = 18
	ErrLogOffsetOutOfRange                 ErrorCode = 19
	ErrNonPrimaryKeyTable                  ErrorCode = 20
	ErrUnknownTableOrBucket                ErrorCode = 21
	ErrInvalidUpdateVersion                ErrorCode = 22
	ErrInvalidCoordinator                  ErrorCode = 23
	ErrFencedLeaderEpoch                   ErrorCode = 24
	ErrRequestTimeOut                      ErrorCode = 25
	ErrStorage                             ErrorCode = 26
	ErrOperationNotAttempted               ErrorCode = 27
	ErrNotEnoughReplicasAfterAppend        ErrorCode = 28
	ErrNotEnoughReplicas                   ErrorCode = 29
	ErrSecurityToken                       ErrorCode = 30
	ErrOutOfOrderSequence                  ErrorCode = 31
	ErrDuplicateSequence                   ErrorCode = 32
	ErrUnknownWriterId                     ErrorCode = 33
	ErrInvalidColumnProjection             ErrorCode = 34
	ErrInvalidTargetColumn                 ErrorCode = 35
	ErrPartitionNotExists                  ErrorCode = 36
	ErrTableNotPartitioned                 ErrorCode = 37
	ErrInvalidTimestamp                    ErrorCode = 38
	ErrInvalidConfig                       ErrorCode = 39
	ErrLakeStorageNotConfigured            ErrorCode = 40
	ErrKvSnapshotNotExist                  ErrorCode = 41
	ErrPartitionAlreadyExists              ErrorCode = 42
	ErrInvalidPartitionSpec                ErrorCode = 43
	ErrLeaderNotAvailable                  ErrorCode = 44
	ErrPartitionMaxNum                     ErrorCode = 45
	ErrAuthenticate                        ErrorCode = 46
	ErrSecurityDisabled                    ErrorCode = 47
	ErrAuthorization                       ErrorCode = 48
	ErrBucketMaxNum                        ErrorCode = 49
	ErrFencedTieringEpoch                  ErrorCode = 50
	ErrRetriableAuthenticate               ErrorCode = 51
	ErrInvalidServerRackInfo               ErrorCode = 52
	ErrLakeSnapshotNotExist                ErrorCode = 53
	ErrLakeTableAlreadyExist               ErrorCode = 54
	ErrIneligibleReplica                   ErrorCode = 55
	ErrInvalidAlterTable                   ErrorCode = 56
	ErrDeletionDisabled                    ErrorCode = 57
	ErrServerNotExist                      ErrorCode = 58
	ErrSeverTagAlreadyExist                ErrorCode = 59
	ErrSeverTagNotExist                    ErrorCode = 60
	ErrRebalanceFailure                    ErrorCode = 61
	ErrNoRebalanceInProgress               ErrorCode = 62
	ErrInvalidProducerId                   ErrorCode = 63
	ErrConfig                              ErrorCode = 64
	ErrNotCoordinatorLeader                ErrorCode = 65
	ErrScannerExpired                      ErrorCode = 66
	ErrUnknownScannerId                    ErrorCode = 67
	ErrInvalidScanRequest                  ErrorCode = 68
	ErrTooManyScanners                     ErrorCode = 69
	ErrDiskWriteLocked                     ErrorCode = 70
	ErrInsufficientKvLeaderReplicaCapacity ErrorCode = 71
	ErrStorageBackpressure                 ErrorCode = 72
	ErrHistoricalPartitionThrottled        ErrorCode = 73
)

// codeClosing marks a batch whose request failed because its writer or connection was
// closing; it never leaves the package and is not a Fluss code.
const codeClosing ErrorCode = -100

// ErrClosed is returned by operations on a closed Connection, writer or scanner.
var ErrClosed = errors.New("fluss: closed")

// CodeOf returns the Fluss error code carried by err: 0 for nil, the code of a wrapped *Error,
// and ErrUnknownServerError for errors without a code (transport failures are reported as
// ErrNetworkException by the client itself).
func CodeOf(err error) ErrorCode {
	if err == nil {
		return 0
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	var ie *ferr.Error
	if errors.As(err, &ie) {
		return ErrorCode(ie.Code)
	}
	return ErrUnknownServerError
}

// IsRetriable reports whether err carries a Fluss error code that the official clients retry.
func IsRetriable(err error) bool { return CodeOf(err).Retriable() }

// publicError makes an error that carries an internal code (from the client's codecs, e.g.
// CORRUPT_RECORD_EXCEPTION) answer errors.As(err, **Error), keeping its text and chain.
// Errors without an internal code are returned unchanged.
func publicError(err error) error {
	var fe *Error
	var ie *ferr.Error
	if err == nil || errors.As(err, &fe) || !errors.As(err, &ie) {
		return err
	}
	return &codedError{pub: &Error{Code: ErrorCode(ie.Code), Message: ie.Message}, cause: err}
}

// codedError is an error whose chain holds both the public *Error and the original cause.
type codedError struct {
	pub   *Error
	cause error
}

func (e *codedError) Error() string   { return e.cause.Error() }
func (e *codedError) Unwrap() []error { return []error{e.pub, e.cause} }
