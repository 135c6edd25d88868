package remote

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/thanos-io/objstore"
)

// ErrChecksumMismatch is returned by a read of a whole S3 object whose bytes do not match the
// checksum stored with it at upload.
var ErrChecksumMismatch = errors.New("remote: object checksum mismatch")

// checksumMeta is the user-metadata key (x-amz-meta-strom-crc32c) holding an object's CRC32C
// (Castagnoli), hex, computed by Upload over the whole object before it is sent.
const checksumMeta = "Strom-Crc32c"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// s3Bucket is an objstore.Bucket over an S3 bucket and key prefix, with minio-go.
//
// Upload sends Content-MD5 with every request body (each part of a multipart upload), which
// the store verifies before accepting it, and stores the object's CRC32C in its metadata; Get
// checks that CRC32C when the object is read to its end. minio-go retries transiently failed
// requests (network errors, 5xx, 429, SlowDown) with exponential backoff and jitter; every
// request body is seekable so a retry resends it whole.
type s3Bucket struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	partSize uint64
	log      *slog.Logger
}

// endpointHost splits s3.endpoint into the host minio-go dials and whether to use TLS. An
// endpoint without a scheme is HTTPS; none at all is AWS.
func endpointHost(ep string) (host string, secure bool, err error) {
	ep = strings.TrimSpace(ep)
	if ep == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(ep, "://") {
		return strings.TrimSuffix(ep, "/"), true, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("remote: s3.endpoint %q: %w", ep, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return u.Host, false, nil
	case "https":
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("remote: s3.endpoint %q: scheme must be http or https", ep)
}

// endpointURL is s3.endpoint with its scheme, as clients are handed it.
func (s *Storage) endpointURL() string {
	host, secure, err := endpointHost(s.cfg.S3.Endpoint)
	if err != nil {
		return s.cfg.S3.Endpoint
	}
	if secure {
		return "https://" + host
	}
	return "http://" + host
}

// region is s3.region, us-east-1 when unset (minio-go's and opendal's default).
func (s *Storage) region() string {
	if s.cfg.S3.Region != "" {
		return s.cfg.S3.Region
	}
	return "us-east-1"
}

func newS3Bucket(ctx context.Context, cfg Config, bucket, prefix string, log *slog.Logger) (*s3Bucket, error) {
	if bucket == "" {
		return nil, fmt.Errorf("remote: remote.data.dir %q names no bucket", cfg.DataDir)
	}
	host, secure, err := endpointHost(cfg.S3.Endpoint)
	if err != nil {
		return nil, err
	}
	if (cfg.S3.AccessKey == "") != (cfg.S3.SecretKey == "") {
		return nil, fmt.Errorf("remote: s3.access-key and s3.secret-key must both be set or both be unset")
	}
	var creds *credentials.Credentials
	if cfg.S3.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.S3.AccessKey, cfg.S3.SecretKey, "")
	} else {
		// The environment (AWS_ACCESS_KEY_ID…), the shared credentials file, then the
		// instance's role, as the AWS SDKs look them up.
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if cfg.S3.PathStyleAccess {
		lookup = minio.BucketLookupPath
	}
	retries := cfg.MaxRetries + 1 // minio-go counts attempts
	if cfg.MaxRetries < 0 {
		retries = 1
	}
	region := cfg.S3.Region
	if region == "" {
		region = "us-east-1"
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("remote: s3 transport: %w", err)
	}
	tr.MaxIdleConnsPerHost = cfg.MaxInflight
	client, err := minio.New(host, &minio.Options{
		Creds: creds, Secure: secure, Region: region, BucketLookup: lookup,
		MaxRetries: retries, Transport: tr,
	})
	if err != nil {
		return nil, fmt.Errorf("remote: s3 client for %s: %w", host, err)
	}
	if prefix != "" {
		prefix = strings.Trim(prefix, "/") + "/"
	}
	b := &s3Bucket{client: client, bucket: bucket, prefix: prefix, partSize: uint64(cfg.PartSize), log: log}
	// A definite answer that the bucket is missing or closed to these keys is a
	// configuration error; a store that does not answer is an outage the node must outlive
	// (a node serves log tables without it, and snapshot passes retry).
	ok, err := client.BucketExists(ctx, bucket)
	switch {
	case err != nil && (s3Error(err).Code == "AccessDenied" || s3Error(err).Code == "InvalidAccessKeyId" || s3Error(err).Code == "SignatureDoesNotMatch"):
		return nil, fmt.Errorf("remote: s3 bucket %s at %s: %w", bucket, host, err)
	case err != nil:
		log.Warn("remote storage does not answer; starting without it, operations on it retry", "bucket", bucket, "endpoint", host, "err", err)
	case !ok:
		return nil, fmt.Errorf("remote: s3 bucket %s does not exist at %s", bucket, host)
	}
	return b, nil
}

func (b *s3Bucket) key(name string) string { return b.prefix + strings.TrimPrefix(name, "/") }

func (b *s3Bucket) Provider() objstore.ObjProvider { return objstore.S3 }
func (b *s3Bucket) Name() string                   { return b.bucket }
func (b *s3Bucket) Close() error                   { return nil }

func (b *s3Bucket) SupportedIterOptions() []objstore.IterOptionType {
	return []objstore.IterOptionType{objstore.Recursive, objstore.UpdatedAt}
}

func (b *s3Bucket) Iter(ctx context.Context, dir string, f func(string) error, opts ...objstore.IterOption) error {
	return b.IterWithAttributes(ctx, dir, func(a objstore.IterObjectAttributes) error { return f(a.Name) }, opts...)
}

// IterWithAttributes lists dir as thanos' providers do: full names relative to the root;
// without objstore.WithRecursiveIter, a subdirectory appears once, as "dir/sub/".
func (b *s3Bucket) IterWithAttributes(ctx context.Context, dir string, f func(objstore.IterObjectAttributes) error, opts ...objstore.IterOption) error {
	if err := objstore.ValidateIterOptions(b.SupportedIterOptions(), opts...); err != nil {
		return err
	}
	params := objstore.ApplyIterOptions(opts...)
	if dir != "" {
		dir = strings.TrimSuffix(dir, "/") + "/"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops minio-go's listing goroutine when f fails
	for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{
		Prefix: b.key(dir), Recursive: params.Recursive,
	}) {
		if obj.Err != nil {
			return fmt.Errorf("remote: list %s: %w", dir, obj.Err)
		}
		name := strings.TrimPrefix(obj.Key, b.prefix)
		if name == dir {
			continue // a directory marker some tools create
		}
		a := objstore.IterObjectAttributes{Name: name}
		if params.LastModified && !strings.HasSuffix(name, "/") {
			a.SetLastModified(obj.LastModified)
		}
		if err := f(a); err != nil {
			return err
		}
	}
	return nil
}

// Upload stores r under name, whole or not at all (S3 makes a PUT or a completed multipart
// upload visible atomically). r is read twice, once for its CRC32C and once to send it: a
// reader that cannot seek is first spooled to a temporary file. minio-go reads each part (at
// most PartSize bytes) into memory to compute its Content-MD5, so an upload holds at most one
// part in memory whatever the object's size.
func (b *s3Bucket) Upload(ctx context.Context, name string, r io.Reader, _ ...objstore.ObjectUploadOption) error {
	src, size, sum, cleanup, err := seekableSource(r)
	if err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	defer cleanup()
	_, err = b.client.PutObject(ctx, b.bucket, b.key(name), src, size, minio.PutObjectOptions{
		UserMetadata:   map[string]string{checksumMeta: hex.EncodeToString(sum)},
		SendContentMd5: true,
		// Content-MD5 is the integrity check (the store recomputes it), so the body need not
		// also be signed; over plain HTTP minio-go would otherwise send aws-chunked bodies,
		// which some S3-compatible stores (gofakes3's part upload among them) do not decode.
		DisableContentSha256: true,
		PartSize:             b.partSize,
		// One request at a time per upload: MaxInflight then bounds requests, not just
		// operations.
		NumThreads: 1,
	})
	if err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	return nil
}

// seekableSource returns r as a reader positioned at its start, its size and its CRC32C.
func seekableSource(r io.Reader) (src io.ReadSeeker, size int64, sum []byte, cleanup func(), err error) {
	cleanup = func() {}
	h := crc32.New(castagnoli)
	if rs, ok := r.(io.ReadSeeker); ok {
		start, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, nil, cleanup, err
		}
		n, err := io.Copy(h, rs)
		if err != nil {
			return nil, 0, nil, cleanup, err
		}
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return nil, 0, nil, cleanup, err
		}
		return rs, n, h.Sum(nil), cleanup, nil
	}
	f, err := os.CreateTemp("", "strom-remote-upload-*")
	if err != nil {
		return nil, 0, nil, cleanup, err
	}
	cleanup = func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, 0, nil, func() {}, err
	}
	return f, n, h.Sum(nil), cleanup, nil
}

// Get reads the whole object; the reader returns ErrChecksumMismatch instead of io.EOF when
// the bytes read do not match the CRC32C stored at upload. Objects without a stored checksum
// (written by another tool) are read unchecked.
func (b *s3Bucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	obj, err := b.client.GetObject(ctx, b.bucket, b.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("remote: get %s: %w", name, err)
	}
	info, err := obj.Stat() // issues the GET: a missing object fails here
	if err != nil {
		obj.Close()
		return nil, fmt.Errorf("remote: get %s: %w", name, err)
	}
	want := metaValue(info.UserMetadata, checksumMeta)
	if want == "" {
		return obj, nil
	}
	return &verifyingReader{rc: obj, h: crc32.New(castagnoli), want: want, size: info.Size, name: name}, nil
}

func metaValue(m map[string]string, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// verifyingReader checks size and CRC32C at EOF.
type verifyingReader struct {
	rc   io.ReadCloser
	h    hash.Hash32
	want string
	size int64
	n    int64
	name string
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if errors.Is(err, io.EOF) {
		if got := hex.EncodeToString(v.h.Sum(nil)); v.n != v.size || got != v.want {
			return n, fmt.Errorf("%w: %s: read %d bytes with crc32c %s, stored %d bytes with %s",
				ErrChecksumMismatch, v.name, v.n, got, v.size, v.want)
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.rc.Close() }

// GetRange reads part of an object; a part cannot be checked against the whole object's
// checksum (callers that need it read whole objects).
func (b *s3Bucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, fmt.Errorf("remote: get %s: negative offset %d", name, off)
	}
	opts := minio.GetObjectOptions{}
	var err error
	switch {
	case length > 0:
		err = opts.SetRange(off, off+length-1)
	case length == 0:
		return io.NopCloser(strings.NewReader("")), nil
	case off > 0:
		err = opts.SetRange(off, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("remote: get %s: %w", name, err)
	}
	obj, err := b.client.GetObject(ctx, b.bucket, b.key(name), opts)
	if err != nil {
		return nil, fmt.Errorf("remote: get %s: %w", name, err)
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, fmt.Errorf("remote: get %s: %w", name, err)
	}
	return obj, nil
}

func (b *s3Bucket) Exists(ctx context.Context, name string) (bool, error) {
	_, err := b.client.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
	if err != nil {
		if b.IsObjNotFoundErr(err) {
			return false, nil
		}
		return false, fmt.Errorf("remote: stat %s: %w", name, err)
	}
	return true, nil
}

func (b *s3Bucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	info, err := b.client.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
	if err != nil {
		return objstore.ObjectAttributes{}, fmt.Errorf("remote: stat %s: %w", name, err)
	}
	return objstore.ObjectAttributes{Size: info.Size, LastModified: info.LastModified}, nil
}

// Delete removes name; S3 answers a delete of a missing object with success, and so does this.
func (b *s3Bucket) Delete(ctx context.Context, name string) error {
	if err := b.client.RemoveObject(ctx, b.bucket, b.key(name), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("remote: delete %s: %w", name, err)
	}
	return nil
}

// s3Error is the S3 error response err wraps, if any.
func s3Error(err error) minio.ErrorResponse {
	var r minio.ErrorResponse
	errors.As(err, &r)
	return r
}

func (b *s3Bucket) IsObjNotFoundErr(err error) bool {
	r := s3Error(err)
	return r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket"
}

func (b *s3Bucket) IsAccessDeniedErr(err error) bool { return s3Error(err).Code == "AccessDenied" }
