package remote

import (
	"encoding/json"
	"strconv"
)

// Token is a GET_FILESYSTEM_SECURITY_TOKEN answer, in the shape the official clients parse:
// Fluss's S3DelegationTokenProvider (fluss-filesystems/fluss-fs-s3) sends, and the Java
// client's S3DelegationTokenReceiver and fluss-rust's client/credentials.rs read,
//   - token: CredentialsJsonSerde's JSON, {"version":1,"access_key_id":…,
//     "access_key_secret":…,"security_token":…|null} (the Java reader requires the
//     security_token key to be present, null for static keys);
//   - addition_info: Hadoop s3a keys. The Java client copies them into its Hadoop
//     configuration; fluss-rust maps fs.s3a.endpoint, fs.s3a.endpoint.region and
//     fs.s3a.path.style.access onto its opendal S3 operator (the last inverted into
//     enable_virtual_host_style) and ignores the rest. So the region goes out under both
//     fs.s3a.region (what the Java server sends) and fs.s3a.endpoint.region.
//
// An empty token means "no credentials": fluss-rust then opens the store with its own
// configuration; the Java client's S3 file system needs one to have been received.
type Token struct {
	Scheme string
	Token  []byte
	// ExpirationTime is when the credentials expire, in epoch milliseconds; nil for keys
	// that do not expire (the clients then refresh rarely).
	ExpirationTime *int64
	AdditionInfo   map[string]string
}

// Addition-info keys (Hadoop s3a's names, as Fluss sends them).
const (
	InfoEndpoint       = "fs.s3a.endpoint"
	InfoRegion         = "fs.s3a.region"
	InfoEndpointRegion = "fs.s3a.endpoint.region"
	InfoPathStyle      = "fs.s3a.path.style.access"
)

// tokenCredentials is CredentialsJsonSerde's format (fluss-common fs/token upstream).
type tokenCredentials struct {
	Version         int     `json:"version"`
	AccessKeyID     string  `json:"access_key_id"`
	AccessKeySecret string  `json:"access_key_secret"`
	SecurityToken   *string `json:"security_token"`
}

// Token is what GET_FILESYSTEM_SECURITY_TOKEN answers for this store. A file store answers
// scheme file and nothing else. An S3 store always answers its endpoint, region and
// addressing style; it answers the configured static keys only with
// remote.storage.client-credentials: static (the default) and keys configured.
func (s *Storage) Token() Token {
	if s.Scheme != "s3" {
		return Token{Scheme: s.Scheme, Token: []byte{}}
	}
	ep := s.endpointURL()
	region := s.region()
	t := Token{Scheme: "s3", Token: []byte{}, AdditionInfo: map[string]string{
		InfoEndpoint:       ep,
		InfoRegion:         region,
		InfoEndpointRegion: region,
		InfoPathStyle:      strconv.FormatBool(s.cfg.S3.PathStyleAccess),
	}}
	if s.cfg.ClientCredentials == CredentialsStatic && s.cfg.S3.AccessKey != "" {
		b, err := json.Marshal(tokenCredentials{Version: 1, AccessKeyID: s.cfg.S3.AccessKey, AccessKeySecret: s.cfg.S3.SecretKey})
		if err == nil {
			t.Token = b
		}
	}
	return t
}
