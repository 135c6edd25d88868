package tablet

import (
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// checkKeyEncodingVersion refuses a version-0 PUT_KV, LOOKUP or PREFIX_LOOKUP on a table whose
// keys a version-0 client encodes differently from the server (upstream ReplicaManager
// validateClientVersionForPkTable): a lake table of kv format version 2 whose bucket key is not
// the primary key keeps its keys in the compacted encoding, while a version-0 client encodes
// them with the lake's encoder, so its keys would never match. Java answers the bucket with
// UNSUPPORTED_VERSION, and so does Strom.
func (s *kvService) checkKeyEncodingVersion(b cluster.Bucket, version int16) error {
	if version > 0 {
		return nil
	}
	rep, err := s.replica(b)
	if err != nil {
		return nil // the request's own path answers a bucket that is not here
	}
	return keyEncodingVersionError(rep.Table, version)
}

// keyEncodingVersionError is checkKeyEncodingVersion for a table already resolved.
func keyEncodingVersionError(t *cluster.TableInfo, version int16) error {
	if version > 0 {
		return nil
	}
	d := &t.Descriptor
	if d.Properties.DataLakeFormat() == "" || d.Properties.KvFormatVersion() != 2 || d.IsDefaultBucketKey() {
		return nil
	}
	return ferr.New(ferr.UnsupportedVersion, "Client API version %d is not supported for table '%s': the table encodes its keys the kv format version 2 way, which needs version 1 or later. Upgrade the Fluss client.", version, t.Path)
}
