package rest

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/stromdb/strom/fluss"
)

// errorBody is the body of every error response: the Fluss error code, its name, and a
// message for people.
type errorBody struct {
	ErrorCode int32  `json:"error_code"`
	ErrorName string `json:"error_name"`
	Message   string `json:"message"`
}

// apiError is an error the gateway itself raises (bad input, unknown route), with the HTTP
// status to answer and the Fluss code to report.
type apiError struct {
	status int
	code   fluss.ErrorCode
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code fluss.ErrorCode, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: msg}
}

// statusOf maps a Fluss error code to the HTTP status that says the same thing.
func statusOf(code fluss.ErrorCode) int {
	switch code {
	case fluss.ErrDatabaseNotExist, fluss.ErrTableNotExist, fluss.ErrPartitionNotExists,
		fluss.ErrSchemaNotExist, fluss.ErrUnknownTableOrBucket, fluss.ErrKvSnapshotNotExist:
		return http.StatusNotFound
	case fluss.ErrDatabaseAlreadyExist, fluss.ErrTableAlreadyExist, fluss.ErrDatabaseNotEmpty,
		fluss.ErrPartitionAlreadyExists:
		return http.StatusConflict
	case fluss.ErrAuthenticate, fluss.ErrRetriableAuthenticate:
		return http.StatusUnauthorized
	case fluss.ErrAuthorization:
		return http.StatusForbidden
	case fluss.ErrRecordTooLarge:
		return http.StatusRequestEntityTooLarge
	case fluss.ErrInvalidTable, fluss.ErrInvalidDatabase, fluss.ErrNonPrimaryKeyTable,
		fluss.ErrInvalidColumnProjection, fluss.ErrInvalidTargetColumn, fluss.ErrInvalidConfig,
		fluss.ErrInvalidPartitionSpec, fluss.ErrTableNotPartitioned, fluss.ErrInvalidReplicationFactor,
		fluss.ErrLogOffsetOutOfRange, fluss.ErrInvalidScanRequest, fluss.ErrInvalidTimestamp,
		fluss.ErrCorruptMessage, fluss.ErrInvalidAlterTable, fluss.ErrSecurityDisabled:
		return http.StatusBadRequest
	case fluss.ErrNetworkException, fluss.ErrLeaderNotAvailable, fluss.ErrNotEnoughReplicas,
		fluss.ErrStorageBackpressure, fluss.ErrNotLeaderOrFollower:
		return http.StatusServiceUnavailable
	case fluss.ErrRequestTimeOut:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// writeError answers err as JSON: the gateway's own errors with their status, Fluss errors
// with the status of their code, anything else as a 500 UNKNOWN_SERVER_ERROR.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	var ae *apiError
	body := errorBody{Message: err.Error()}
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &ae):
		body.ErrorCode, status = int32(ae.code), ae.status
	default:
		code := fluss.CodeOf(err)
		body.ErrorCode, status = int32(code), statusOf(code)
		var fe *fluss.Error
		if errors.As(err, &fe) && fe.Message != "" {
			body.Message = fe.Message
		}
	}
	body.ErrorName = fluss.ErrorCode(body.ErrorCode).Name()
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="strom", charset="UTF-8"`)
	}
	if status >= 500 {
		log.Warn("REST request failed", "status", status, "code", body.ErrorName, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
