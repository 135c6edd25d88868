package remotelog

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/stromdb/strom/server/cluster"
)

// remoteLogDirName is the directory of tiered logs under remote.data.dir (FlussPaths
// REMOTE_LOG_DIR_NAME).
const remoteLogDirName = "log"

// tabletDir is the key of a bucket's remote log directory (FlussPaths.remoteLogTabletDir):
// log/{db}/{table}-{id}/[{partition}-p{pid}/]{bucket}.
func tabletDir(t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket) string {
	parts := []string{remoteLogDirName, t.Path.Database, fmt.Sprintf("%s-%d", t.Path.Table, t.ID)}
	if b.PartitionID != cluster.NoPartition && p != nil {
		parts = append(parts, fmt.Sprintf("%s-p%d", p.Name, p.ID))
	}
	parts = append(parts, fmt.Sprint(b.Bucket))
	return path.Join(parts...)
}

func offsetName(off int64, suffix string) string { return fmt.Sprintf("%020d%s", off, suffix) }

// segmentKey is the key of one file of a remote segment.
func segmentKey(dir, id string, off int64, suffix string) string {
	return path.Join(dir, id, offsetName(off, suffix))
}

// manifestKey is the key of a manifest object (FlussPaths.remoteLogManifestFile).
func manifestKey(dir, id string) string { return path.Join(dir, "metadata", id+".manifest") }

// newID returns a UUID-formatted id whose first four bytes are epoch (big-endian), the rest
// random, with the RFC 9562 version 8 (custom) and variant bits set.
func newID(epoch int32) string {
	var b [16]byte
	_, _ = rand.Read(b[4:])
	binary.BigEndian.PutUint32(b[:4], uint32(epoch))
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// idEpoch returns the leader epoch encoded in an id newID made; false for anything else.
func idEpoch(id string) (int32, bool) {
	h := strings.ReplaceAll(id, "-", "")
	if len(id) != 36 || len(h) != 32 {
		return 0, false
	}
	b, err := hex.DecodeString(h)
	if err != nil || b[6]>>4 != 8 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[:4])), true
}
