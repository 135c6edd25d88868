package remote

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stromdb/strom/server/config"
)

// Option names. The s3.* keys and remote.data.dir are Fluss's
// (website/docs/maintenance/filesystems/s3.md upstream); the remote.storage.* keys are Strom's.
const (
	OptDataDir         = "remote.data.dir"
	OptS3Endpoint      = "s3.endpoint"
	OptS3AccessKey     = "s3.access-key"
	OptS3SecretKey     = "s3.secret-key"
	OptS3Region        = "s3.region"
	OptS3PathStyle     = "s3.path-style-access"
	OptMaxInflight     = "remote.storage.max-inflight-operations"
	OptMaxRetries      = "remote.storage.max-retries"
	OptPartSize        = "remote.storage.multipart-part-size"
	OptClientCreds     = "remote.storage.client-credentials"
	defaultMaxInflight = 16
	defaultMaxRetries  = 10
	defaultPartSize    = 16 << 20
	// minPartSize is S3's smallest part of a multipart upload (all but the last).
	minPartSize = 5 << 20
)

// ClientCredentials says what GET_FILESYSTEM_SECURITY_TOKEN hands to clients for an S3 store.
type ClientCredentials string

const (
	// CredentialsStatic hands out the configured s3.access-key and s3.secret-key.
	CredentialsStatic ClientCredentials = "static"
	// CredentialsNone hands out no keys: clients bring their own.
	CredentialsNone ClientCredentials = "none"
)

// ConfigFrom reads remote storage's options from the server's raw option map. remote.data.dir
// defaults to <dataDir>/remote.
func ConfigFrom(raw map[string]string, dataDir string) (Config, error) {
	c := Config{DataDir: filepath.Join(dataDir, "remote")}
	if v := strings.TrimSpace(raw[OptDataDir]); v != "" {
		c.DataDir = v
	}
	c.S3 = S3Config{
		Endpoint:  strings.TrimSpace(raw[OptS3Endpoint]),
		AccessKey: strings.TrimSpace(raw[OptS3AccessKey]),
		SecretKey: strings.TrimSpace(raw[OptS3SecretKey]),
		Region:    strings.TrimSpace(raw[OptS3Region]),
	}
	if v, ok := raw[OptS3PathStyle]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return c, fmt.Errorf("%s: %q is not true or false", OptS3PathStyle, v)
		}
		c.S3.PathStyleAccess = b
	}
	if v, ok := raw[OptMaxInflight]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return c, fmt.Errorf("%s: %q is not a positive integer", OptMaxInflight, v)
		}
		c.MaxInflight = n
	}
	if v, ok := raw[OptMaxRetries]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return c, fmt.Errorf("%s: %q is not a non-negative integer", OptMaxRetries, v)
		}
		c.MaxRetries = n
		if n == 0 {
			c.MaxRetries = -1
		}
	}
	if v, ok := raw[OptPartSize]; ok {
		n, err := config.ParseBytes(v)
		if err != nil || n < minPartSize {
			return c, fmt.Errorf("%s: %q is not a size of at least 5mb", OptPartSize, v)
		}
		c.PartSize = n
	}
	if v, ok := raw[OptClientCreds]; ok {
		switch m := ClientCredentials(strings.ToLower(strings.TrimSpace(v))); m {
		case CredentialsStatic, CredentialsNone:
			c.ClientCredentials = m
		default:
			return c, fmt.Errorf("%s: %q is not static or none", OptClientCreds, v)
		}
	}
	return c, nil
}

// withDefaults fills unset limits.
func (c Config) withDefaults() Config {
	if c.MaxInflight <= 0 {
		c.MaxInflight = defaultMaxInflight
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = defaultMaxRetries
	}
	if c.PartSize <= 0 {
		c.PartSize = defaultPartSize
	}
	if c.PartSize < minPartSize {
		c.PartSize = minPartSize
	}
	if c.ClientCredentials == "" {
		c.ClientCredentials = CredentialsStatic
	}
	return c
}
