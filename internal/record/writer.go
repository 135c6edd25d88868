package record

import "math"

// RecordSequencedWriter is the bit of a writer id that marks a writer whose batch sequences
// count records, as a Kafka producer's do: the sequence of a batch is its first record's
// number, so a batch follows the previous one when its sequence is the previous sequence plus
// the previous batch's record count. Writer ids without the bit (every Fluss writer, whose
// ids come from INIT_WRITER's counter) number their batches 0, 1, 2, ...
//
// The rule follows from the id alone, so every replica and every recovery of a log applies it
// to the same batches: the state it needs (each writer's latest batches with their offsets)
// is the writer state the log already replicates and snapshots.
const RecordSequencedWriter int64 = 1 << 62

// IsRecordSequenced reports whether writerID numbers its batches by record.
func IsRecordSequenced(writerID int64) bool {
	return writerID >= 0 && writerID&RecordSequencedWriter != 0
}

// NextRecordSequence is the sequence that follows a batch of count records starting at seq,
// wrapping from MaxInt32 to 0 as Kafka's sequences do.
func NextRecordSequence(seq int32, count int64) int32 {
	return int32((int64(seq) + count) % (math.MaxInt32 + 1))
}
