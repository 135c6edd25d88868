package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stromdb/strom/internal/record"
)

// High-watermark checkpoint (replicated mode only; Kafka's replication-offset-checkpoint,
// one file per bucket here). Little-endian:
//
//	magic "SHW1" | crc32c uint32 over the offset | high watermark int64
//
// It is written lazily — at every roll, at Close, after TruncateTo, and whenever the
// replica manager calls CheckpointHighWatermark (periodically) — so it may lag the HW. A
// lagging HW is safe: the HW restored at Open is only a lower bound of what was committed,
// and the replica learns the real one from the leader.
const (
	hwFileName = "high_watermark_checkpoint"
	hwMagic    = "SHW1"
	hwFileSize = 16
)

var errBadHWFile = errors.New("logstore: malformed high-watermark checkpoint")

func encodeHW(hw int64) []byte {
	b := make([]byte, hwFileSize)
	copy(b, hwMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(hw))
	binary.LittleEndian.PutUint32(b[4:], record.Checksum(b[8:]))
	return b
}

func decodeHW(b []byte) (int64, error) {
	if len(b) != hwFileSize || string(b[:4]) != hwMagic {
		return 0, errBadHWFile
	}
	if binary.LittleEndian.Uint32(b[4:]) != record.Checksum(b[8:]) {
		return 0, fmt.Errorf("%w: checksum mismatch", errBadHWFile)
	}
	hw := int64(binary.LittleEndian.Uint64(b[8:]))
	if hw < 0 {
		return 0, errBadHWFile
	}
	return hw, nil
}

// loadHW returns the checkpointed high watermark, 0 when there is none or it is unreadable.
func (r *Replica) loadHW() int64 {
	l := r.log
	b, err := os.ReadFile(filepath.Join(l.dir, hwFileName))
	if err != nil {
		if !os.IsNotExist(err) {
			l.opts.Logger.Warn("logstore: high-watermark checkpoint unreadable", "dir", l.dir, "err", err)
		}
		return 0
	}
	hw, err := decodeHW(b)
	if err != nil {
		l.opts.Logger.Warn("logstore: high-watermark checkpoint ignored", "dir", l.dir, "err", err)
		return 0
	}
	return hw
}

// checkpointHWLocked writes the current HW (replicated mode only; a failure is logged, the
// checkpoint is an optimisation). Caller holds mu.
func (r *Replica) checkpointHWLocked() {
	l := r.log
	if !l.opts.ExternalHighWatermark {
		return
	}
	if err := r.writeHW(l.v.Load().hw); err != nil {
		l.opts.Logger.Warn("logstore: high-watermark checkpoint failed", "dir", l.dir, "err", err)
	}
}

func (r *Replica) writeHW(hw int64) error {
	l := r.log
	if err := writeFileAtomic(filepath.Join(l.dir, hwFileName), encodeHW(hw)); err != nil {
		return err
	}
	return syncDir(l.dir)
}

// CheckpointHighWatermark persists the current high watermark (replicated mode), atomically.
// Call it periodically (Kafka: replica.high.watermark.checkpoint.interval.ms, 5 s); rolls,
// Close and TruncateTo also write it.
func (r *Replica) CheckpointHighWatermark() error {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if !l.opts.ExternalHighWatermark {
		return nil
	}
	return r.writeHW(l.v.Load().hw)
}
