// Fluss error codes and their retriability (docs/protocol.md, "Error codes").

package ferr

// Fluss error codes, as sent in ErrorResponse.error_code and per-bucket error_code fields.
const (
	UnknownServerError                    Code = -1
	None                                  Code = 0
	NetworkException                      Code = 1
	UnsupportedVersion                    Code = 2
	CorruptMessage                        Code = 3
	DatabaseNotExist                      Code = 4
	DatabaseNotEmpty                      Code = 5
	DatabaseAlreadyExist                  Code = 6
	TableNotExist                         Code = 7
	TableAlreadyExist                     Code = 8
	SchemaNotExist                        Code = 9
	LogStorageException                   Code = 10
	KvStorageException                    Code = 11
	NotLeaderOrFollower                   Code = 12
	RecordTooLargeException               Code = 13
	CorruptRecordException                Code = 14
	InvalidTableException                 Code = 15
	InvalidDatabaseException              Code = 16
	InvalidReplicationFactor              Code = 17
	InvalidRequiredAcks                   Code = 18
	LogOffsetOutOfRangeException          Code = 19
	NonPrimaryKeyTableException           Code = 20
	UnknownTableOrBucketException         Code = 21
	InvalidUpdateVersionException         Code = 22
	InvalidCoordinatorException           Code = 23
	FencedLeaderEpochException            Code = 24
	RequestTimeOut                        Code = 25
	StorageException                      Code = 26
	OperationNotAttemptedException        Code = 27
	NotEnoughReplicasAfterAppendException Code = 28
	NotEnoughReplicasException            Code = 29
	SecurityTokenException                Code = 30
	OutOfOrderSequenceException           Code = 31
	DuplicateSequenceException            Code = 32
	UnknownWriterIdException              Code = 33
	InvalidColumnProjection               Code = 34
	InvalidTargetColumn                   Code = 35
	PartitionNotExists                    Code = 36
	TableNotPartitionedException          Code = 37
	InvalidTimestampException             Code = 38
	InvalidConfigException                Code = 39
	LakeStorageNotConfiguredException     Code = 40
	KvSnapshotNotExist                    Code = 41
	PartitionAlreadyExists                Code = 42
	PartitionSpecInvalidException         Code = 43
	LeaderNotAvailableException           Code = 44
	PartitionMaxNumException              Code = 45
	AuthenticateException                 Code = 46
	SecurityDisabledException             Code = 47
	AuthorizationException                Code = 48
	BucketMaxNumException                 Code = 49
	FencedTieringEpochException           Code = 50
	RetriableAuthenticateException        Code = 51
	InvalidServerRackInfoException        Code = 52
	LakeSnapshotNotExist                  Code = 53
	LakeTableAlreadyExist                 Code = 54
	IneligibleReplicaException            Code = 55
	InvalidAlterTableException            Code = 56
	DeletionDisabledException             Code = 57
	ServerNotExistException               Code = 58
	SeverTagAlreadyExistException         Code = 59
	SeverTagNotExistException             Code = 60
	RebalanceFailureException             Code = 61
	NoRebalanceInProgressException        Code = 62
	InvalidProducerIdException            Code = 63
	ConfigException                       Code = 64
	NotCoordinatorLeaderException         Code = 65
	ScannerExpired                        Code = 66
	UnknownScannerId                      Code = 67
	InvalidScanRequest                    Code = 68
	TooManyScanners                       Code = 69
	DiskWriteLocked                       Code = 70
	InsufficientKvLeaderReplicaCapacity   Code = 71
	StorageBackpressureException          Code = 72
	HistoricalPartitionThrottled          Code = 73
)

var codeNames = map[Code]string{
	UnknownServerError:                    "UNKNOWN_SERVER_ERROR",
	None:                                  "NONE",
	NetworkException:                      "NETWORK_EXCEPTION",
	UnsupportedVersion:                    "UNSUPPORTED_VERSION",
	CorruptMessage:                        "CORRUPT_MESSAGE",
	DatabaseNotExist:                      "DATABASE_NOT_EXIST",
	DatabaseNotEmpty:                      "DATABASE_NOT_EMPTY",
	DatabaseAlreadyExist:                  "DATABASE_ALREADY_EXIST",
	TableNotExist:                         "TABLE_NOT_EXIST",
	TableAlreadyExist:                     "TABLE_ALREADY_EXIST",
	SchemaNotExist:                        "SCHEMA_NOT_EXIST",
	LogStorageException:                   "LOG_STORAGE_EXCEPTION",
	KvStorageException:                    "KV_STORAGE_EXCEPTION",
	NotLeaderOrFollower:                   "NOT_LEADER_OR_FOLLOWER",
	RecordTooLargeException:               "RECORD_TOO_LARGE_EXCEPTION",
	CorruptRecordException:                "CORRUPT_RECORD_EXCEPTION",
	InvalidTableException:                 "INVALID_TABLE_EXCEPTION",
	InvalidDatabaseException:              "INVALID_DATABASE_EXCEPTION",
	InvalidReplicationFactor:              "INVALID_REPLICATION_FACTOR",
	InvalidRequiredAcks:                   "INVALID_REQUIRED_ACKS",
	LogOffsetOutOfRangeException:          "LOG_OFFSET_OUT_OF_RANGE_EXCEPTION",
	NonPrimaryKeyTableException:           "NON_PRIMARY_KEY_TABLE_EXCEPTION",
	UnknownTableOrBucketException:         "UNKNOWN_TABLE_OR_BUCKET_EXCEPTION",
	InvalidUpdateVersionException:         "INVALID_UPDATE_VERSION_EXCEPTION",
	InvalidCoordinatorException:           "INVALID_COORDINATOR_EXCEPTION",
	FencedLeaderEpochException:            "FENCED_LEADER_EPOCH_EXCEPTION",
	RequestTimeOut:                        "REQUEST_TIME_OUT",
	StorageException:                      "STORAGE_EXCEPTION",
	OperationNotAttemptedException:        "OPERATION_NOT_ATTEMPTED_EXCEPTION",
	NotEnoughReplicasAfterAppendException: "NOT_ENOUGH_REPLICAS_AFTER_APPEND_EXCEPTION",
	NotEnoughReplicasException:            "NOT_ENOUGH_REPLICAS_EXCEPTION",
	SecurityTokenException:                "SECURITY_TOKEN_EXCEPTION",
	OutOfOrderSequenceException:           "OUT_OF_ORDER_SEQUENCE_EXCEPTION",
	DuplicateSequenceException:            "DUPLICATE_SEQUENCE_EXCEPTION",
	UnknownWriterIdException:              "UNKNOWN_WRITER_ID_EXCEPTION",
	InvalidColumnProjection:               "INVALID_COLUMN_PROJECTION",
	InvalidTargetColumn:                   "INVALID_TARGET_COLUMN",
	PartitionNotExists:                    "PARTITION_NOT_EXISTS",
	TableNotPartitionedException:          "TABLE_NOT_PARTITIONED_EXCEPTION",
	InvalidTimestampException:             "INVALID_TIMESTAMP_EXCEPTION",
	InvalidConfigException:                "INVALID_CONFIG_EXCEPTION",
	LakeStorageNotConfiguredException:     "LAKE_STORAGE_NOT_CONFIGURED_EXCEPTION",
	KvSnapshotNotExist:                    "KV_SNAPSHOT_NOT_EXIST",
	PartitionAlreadyExists:                "PARTITION_ALREADY_EXISTS",
	PartitionSpecInvalidException:         "PARTITION_SPEC_INVALID_EXCEPTION",
	LeaderNotAvailableException:           "LEADER_NOT_AVAILABLE_EXCEPTION",
	PartitionMaxNumException:              "PARTITION_MAX_NUM_EXCEPTION",
	AuthenticateException:                 "AUTHENTICATE_EXCEPTION",
	SecurityDisabledException:             "SECURITY_DISABLED_EXCEPTION",
	AuthorizationException:                "AUTHORIZATION_EXCEPTION",
	BucketMaxNumException:                 "BUCKET_MAX_NUM_EXCEPTION",
	FencedTieringEpochException:           "FENCED_TIERING_EPOCH_EXCEPTION",
	RetriableAuthenticateException:        "RETRIABLE_AUTHENTICATE_EXCEPTION",
	InvalidServerRackInfoException:        "INVALID_SERVER_RACK_INFO_EXCEPTION",
	LakeSnapshotNotExist:                  "LAKE_SNAPSHOT_NOT_EXIST",
	LakeTableAlreadyExist:                 "LAKE_TABLE_ALREADY_EXIST",
	IneligibleReplicaException:            "INELIGIBLE_REPLICA_EXCEPTION",
	InvalidAlterTableException:            "INVALID_ALTER_TABLE_EXCEPTION",
	DeletionDisabledException:             "DELETION_DISABLED_EXCEPTION",
	ServerNotExistException:               "SERVER_NOT_EXIST_EXCEPTION",
	SeverTagAlreadyExistException:         "SEVER_TAG_ALREADY_EXIST_EXCEPTION",
	SeverTagNotExistException:             "SEVER_TAG_NOT_EXIST_EXCEPTION",
	RebalanceFailureException:             "REBALANCE_FAILURE_EXCEPTION",
	NoRebalanceInProgressException:        "NO_REBALANCE_IN_PROGRESS_EXCEPTION",
	InvalidProducerIdException:            "INVALID_PRODUCER_ID_EXCEPTION",
	ConfigException:                       "CONFIG_EXCEPTION",
	NotCoordinatorLeaderException:         "NOT_COORDINATOR_LEADER_EXCEPTION",
	ScannerExpired:                        "SCANNER_EXPIRED",
	UnknownScannerId:                      "UNKNOWN_SCANNER_ID",
	InvalidScanRequest:                    "INVALID_SCAN_REQUEST",
	TooManyScanners:                       "TOO_MANY_SCANNERS",
	DiskWriteLocked:                       "DISK_WRITE_LOCKED",
	InsufficientKvLeaderReplicaCapacity:   "INSUFFICIENT_KV_LEADER_REPLICA_CAPACITY",
	StorageBackpressureException:          "STORAGE_BACKPRESSURE_EXCEPTION",
	HistoricalPartitionThrottled:          "HISTORICAL_PARTITION_THROTTLED",
}

// retriable holds the codes whose Java exception extends RetriableException.
var retriable = map[Code]bool{
	NetworkException:                      true,
	CorruptMessage:                        true,
	SchemaNotExist:                        true,
	LogStorageException:                   true,
	KvStorageException:                    true,
	NotLeaderOrFollower:                   true,
	CorruptRecordException:                true,
	UnknownTableOrBucketException:         true,
	RequestTimeOut:                        true,
	StorageException:                      true,
	NotEnoughReplicasAfterAppendException: true,
	NotEnoughReplicasException:            true,
	LeaderNotAvailableException:           true,
	DiskWriteLocked:                       true,
	StorageBackpressureException:          true,
	HistoricalPartitionThrottled:          true,
}
