package fluss

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// Reading remote log segments from S3-compatible object storage, with what
// GET_FILESYSTEM_SECURITY_TOKEN hands out, as the official clients do (fluss-rust
// client/credentials.rs, the Java client's S3DelegationTokenReceiver upstream): the token is
// {"access_key_id", "access_key_secret", "security_token"} JSON (empty: no keys, the
// environment's are used), addition_info carries fs.s3a.endpoint, fs.s3a.endpoint.region (or
// fs.s3a.region) and fs.s3a.path.style.access.

// s3Remote is a scanner's S3 client, made from the latest security token.
type s3Remote struct {
	mu      sync.Mutex
	client  *minio.Client
	expires time.Time // zero: the credentials do not expire
}

// s3TokenRefresh bounds how long a token without an expiration time is used.
const s3TokenRefresh = time.Hour

func (r *s3Remote) get(ctx context.Context, c *Connection) (*minio.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil && (r.expires.IsZero() || time.Until(r.expires) > time.Minute) {
		return r.client, nil
	}
	var resp flusspb.GetFileSystemSecurityTokenResponse
	if err := c.callCoordinator(ctx, wire.GetFilesystemSecurityToken, &flusspb.GetFileSystemSecurityTokenRequest{}, &resp); err != nil {
		return nil, fmt.Errorf("fluss: remote storage credentials: %w", err)
	}
	if s := resp.GetSchema(); s != "s3" && s != "s3a" {
		return nil, fmt.Errorf("%w: the server's remote storage is %q", ErrRemoteLogNotSupported, s)
	}
	info := map[string]string{}
	for _, kv := range resp.GetAdditionInfo() {
		info[kv.GetKey()] = kv.GetValue()
	}
	creds := credentials.NewEnvAWS()
	if tok := resp.GetToken(); len(tok) > 0 {
		var t struct {
			AccessKeyID     string  `json:"access_key_id"`
			AccessKeySecret string  `json:"access_key_secret"`
			SecurityToken   *string `json:"security_token"`
		}
		if err := json.Unmarshal(tok, &t); err != nil {
			return nil, fmt.Errorf("fluss: remote storage credentials: %w", err)
		}
		st := ""
		if t.SecurityToken != nil {
			st = *t.SecurityToken
		}
		creds = credentials.NewStaticV4(t.AccessKeyID, t.AccessKeySecret, st)
	}
	endpoint, secure := "s3.amazonaws.com", true
	if ep := info["fs.s3a.endpoint"]; ep != "" {
		if !strings.Contains(ep, "://") {
			ep = "https://" + ep
		}
		u, err := url.Parse(ep)
		if err != nil {
			return nil, fmt.Errorf("fluss: remote storage endpoint %q: %w", ep, err)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	region := info["fs.s3a.endpoint.region"]
	if region == "" {
		region = info["fs.s3a.region"]
	}
	lookup := minio.BucketLookupAuto
	if ps, _ := strconv.ParseBool(info["fs.s3a.path.style.access"]); ps {
		lookup = minio.BucketLookupPath
	}
	cl, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("fluss: remote storage client: %w", err)
	}
	r.client, r.expires = cl, time.Time{}
	if e := resp.ExpirationTime; e != nil {
		r.expires = time.UnixMilli(*e)
	} else {
		r.expires = time.Now().Add(s3TokenRefresh)
	}
	return cl, nil
}

// s3Location splits s3://bucket/key (or s3a://) into bucket and key.
func s3Location(uri string) (bucket, key string, ok bool) {
	rest, found := strings.CutPrefix(uri, "s3://")
	if !found {
		if rest, found = strings.CutPrefix(uri, "s3a://"); !found {
			return "", "", false
		}
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != ""
}

// readRemoteS3 reads, like readRemote, the batches at the start position of the first
// remote segment of ri from S3: a ranged GET of about maxBytes, at least one whole batch.
func (r *s3Remote) readRemoteS3(ctx context.Context, c *Connection, ri *flusspb.PbRemoteLogFetchInfo, maxBytes int) ([]byte, error) {
	segs := ri.GetRemoteLogSegments()
	if len(segs) == 0 {
		return nil, errors.New("fluss: remote log fetch info without segments")
	}
	seg := segs[0]
	id := seg.GetRemoteLogSegmentId()
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return nil, fmt.Errorf("fluss: invalid remote log segment id %q", id)
	}
	bucket, dir, ok := s3Location(ri.GetRemoteLogTabletDir())
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrRemoteLogNotSupported, ri.GetRemoteLogTabletDir())
	}
	key := strings.TrimSuffix(dir, "/") + "/" + id + "/" + fmt.Sprintf("%020d.log", seg.GetRemoteLogStartOffset())
	cl, err := r.get(ctx, c)
	if err != nil {
		return nil, err
	}
	pos, size := int64(ri.GetFirstStartPos()), int64(seg.GetSegmentSizeInBytes())
	if pos < 0 || pos >= size {
		return nil, fmt.Errorf("fluss: remote log segment %s: start position %d outside its %d bytes", key, pos, size)
	}
	read := func(n int64) ([]byte, error) {
		var opts minio.GetObjectOptions
		if err := opts.SetRange(pos, pos+n-1); err != nil {
			return nil, err
		}
		obj, err := cl.GetObject(ctx, bucket, key, opts)
		if err != nil {
			return nil, fmt.Errorf("fluss: remote log segment s3://%s/%s: %w", bucket, key, err)
		}
		defer obj.Close()
		data, err := io.ReadAll(io.LimitReader(obj, n))
		if err != nil {
			return nil, fmt.Errorf("fluss: remote log segment s3://%s/%s: %w", bucket, key, err)
		}
		return data, nil
	}
	buf, err := read(min(max(int64(maxBytes), record.LogOverhead), size-pos))
	if err != nil {
		return nil, err
	}
	if len(buf) < record.LogOverhead {
		return nil, fmt.Errorf("fluss: remote log segment s3://%s/%s: %d bytes at position %d, less than a batch header", bucket, key, len(buf), pos)
	}
	// A first batch larger than maxBytes is read whole.
	if first := int64(record.NextBatchSize(buf)); first > int64(len(buf)) && first <= size-pos {
		return read(first)
	}
	return buf, nil
}
