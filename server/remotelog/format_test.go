package remotelog

import (
	"errors"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/formatver"
)

func TestDecodeManifestRefusesAnUnknownVersion(t *testing.T) {
	const key = "log/db/t-1/0/metadata/m.manifest"
	if _, err := decodeManifest(key, []byte(`{"version":1,"remote_log_segments":[]}`)); err != nil {
		t.Fatalf("version 1 manifest: %v", err)
	}
	_, err := decodeManifest(key, []byte(`{"version":2,"remote_log_segments":[]}`))
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "versions 1") {
		t.Fatalf("version 2 manifest = %v", err)
	}
}
