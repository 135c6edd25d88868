package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stromdb/strom/internal/ferr"
)

const (
	apiVersionsKey      = 18
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36

	errUnsupportedVersion = 35
)

// errCode maps a Strom error (ferr codes) onto the Kafka error code a client acts on.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	switch {
	case errors.Is(err, errCorrupt) || errors.Is(err, errUnsupportedMag):
		return kerr.CorruptMessage.Code
	case errors.Is(err, errProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, errOneBatch):
		return kerr.InvalidRecord.Code
	}
	switch ferr.CodeOf(err) {
	case ferr.None:
		return kerr.UnknownServerError.Code
	case ferr.NotLeaderOrFollower, ferr.FencedLeaderEpochException:
		return kerr.NotLeaderForPartition.Code
	case ferr.LeaderNotAvailableException:
		return kerr.LeaderNotAvailable.Code
	case ferr.UnknownTableOrBucketException, ferr.TableNotExist, ferr.DatabaseNotExist:
		return kerr.UnknownTopicOrPartition.Code
	case ferr.TableAlreadyExist:
		return kerr.TopicAlreadyExists.Code
	case ferr.InvalidTableException, ferr.InvalidDatabaseException:
		return kerr.InvalidTopicException.Code
	case ferr.InvalidReplicationFactor:
		return kerr.InvalidReplicationFactor.Code
	case ferr.BucketMaxNumException:
		return kerr.InvalidPartitions.Code
	case ferr.InvalidConfigException, ferr.ConfigException:
		return kerr.InvalidConfig.Code
	case ferr.CorruptRecordException, ferr.CorruptMessage, ferr.SchemaNotExist:
		return kerr.CorruptMessage.Code
	case ferr.RecordTooLargeException:
		return kerr.MessageTooLarge.Code
	case ferr.InvalidRequiredAcks:
		return kerr.InvalidRequiredAcks.Code
	case ferr.LogOffsetOutOfRangeException:
		return kerr.OffsetOutOfRange.Code
	case ferr.RequestTimeOut:
		return kerr.RequestTimedOut.Code
	case ferr.NotEnoughReplicasException:
		return kerr.NotEnoughReplicas.Code
	case ferr.NotEnoughReplicasAfterAppendException:
		return kerr.NotEnoughReplicasAfterAppend.Code
	case ferr.OutOfOrderSequenceException:
		return kerr.OutOfOrderSequenceNumber.Code
	case ferr.DuplicateSequenceException:
		return kerr.DuplicateSequenceNumber.Code
	case ferr.UnknownWriterIdException, ferr.InvalidProducerIdException:
		return kerr.UnknownProducerID.Code
	case ferr.InvalidTimestampException:
		return kerr.InvalidTimestamp.Code
	case ferr.AuthorizationException:
		return kerr.TopicAuthorizationFailed.Code
	case ferr.NotCoordinatorLeaderException:
		return kerr.NotController.Code
	case ferr.LogStorageException, ferr.StorageException, ferr.KvStorageException, ferr.DiskWriteLocked:
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}

// errMessage is the message sent with a code, where the API has one.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	return &m
}

var errOffsetOutOfRange = ferr.New(ferr.LogOffsetOutOfRangeException, "fetch offset is out of range")
