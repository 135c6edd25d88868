package fluss

import (
	"errors"

	"github.com/stromdb/strom/internal/ferr"
)

// Error is an error with a Fluss error code, as returned by the server (whole-request or
// per-bucket errors) or produced by the client for the same conditions. Retrieve it with
// errors.As.
type Error = ferr.Error

// ErrorCode is a Fluss error code (see the Fluss protocol's Errors table).
type ErrorCode = ferr.Code

// Fluss error codes that callers commonly test for. Every other code is available as
// ErrorCode(n).
const (
	ErrUnknownServerError     = ferr.UnknownServerError
	ErrNetworkException       = ferr.NetworkException
	ErrUnsupportedVersion     = ferr.UnsupportedVersion
	ErrDatabaseNotExist       = ferr.DatabaseNotExist
	ErrDatabaseNotEmpty       = ferr.DatabaseNotEmpty
	ErrDatabaseAlreadyExist   = ferr.DatabaseAlreadyExist
	ErrTableNotExist          = ferr.TableNotExist
	ErrTableAlreadyExist      = ferr.TableAlreadyExist
	ErrSchemaNotExist         = ferr.SchemaNotExist
	ErrNotLeaderOrFollower    = ferr.NotLeaderOrFollower
	ErrInvalidTable           = ferr.InvalidTableException
	ErrInvalidDatabase        = ferr.InvalidDatabaseException
	ErrLogOffsetOutOfRange    = ferr.LogOffsetOutOfRangeException
	ErrNonPrimaryKeyTable     = ferr.NonPrimaryKeyTableException
	ErrUnknownTableOrBucket   = ferr.UnknownTableOrBucketException
	ErrPartitionNotExists     = ferr.PartitionNotExists
	ErrTableNotPartitioned    = ferr.TableNotPartitionedException
	ErrPartitionAlreadyExists = ferr.PartitionAlreadyExists
	ErrInvalidPartitionSpec   = ferr.PartitionSpecInvalidException
	ErrLeaderNotAvailable     = ferr.LeaderNotAvailableException
	ErrAuthenticate           = ferr.AuthenticateException
	ErrLakeSnapshotNotExist   = ferr.LakeSnapshotNotExist
)

// ErrClosed is returned by operations on a closed Connection, writer or scanner.
var ErrClosed = errors.New("fluss: closed")

// CodeOf returns the Fluss error code carried by err: 0 for nil, the code of a wrapped *Error,
// and ErrUnknownServerError for errors without a code (transport failures are reported as
// ErrNetworkException by the client itself).
func CodeOf(err error) ErrorCode { return ferr.CodeOf(err) }

// IsRetriable reports whether err carries a Fluss error code that the official clients retry.
func IsRetriable(err error) bool { return ferr.CodeOf(err).Retriable() }
