package options

// Remote storage options. The s3.* keys are Fluss's (its S3 file system plugin,
// fluss-filesystems/fluss-fs-s3 S3FileSystemPlugin, passes every s3.*, s3a.* and fs.s3a.*
// option to Hadoop's S3A); remote.storage.* are Strom's. They are parsed by server/remote
// (remote.ConfigFrom), which the remote-storage branch added: the five s3.* keys it reads and
// its remote.storage.* keys are declared Served with Parser "server/remote"; other keys under
// the S3 and file system prefixes have no effect.

const (
	whyNoS3      = "Strom's S3 store reads s3.endpoint, s3.access-key, s3.secret-key, s3.region and s3.path-style-access only"
	s3Source     = "fluss-fs-s3 S3FileSystemPlugin (s3.* passed to Hadoop S3A)"
	fsDesc       = "options of another file system plugin"
	whyNoFsPlug  = "remote.data.dir takes a local directory, file:// or s3:// only"
	remoteParser = "server/remote"
)

var _ = registerAll([]Option{
	{Key: "s3.endpoint", Type: String, Scope: Server, Versions: Both09And10, Parser: remoteParser, FlussSource: s3Source, See: "tiered-storage.md",
		Desc: "S3 endpoint of an s3:// remote.data.dir: http://host:port, https://host or a host (HTTPS); unset: AWS"},
	{Key: "s3.access-key", Type: Password, Scope: Server, Versions: Both09And10, Parser: remoteParser, FlussSource: s3Source,
		Desc: "static S3 access key id, with s3.secret-key (both or neither; neither: the environment, the shared credentials file, then the instance's role)"},
	{Key: "s3.secret-key", Type: Password, Scope: Server, Versions: Both09And10, Parser: remoteParser, FlussSource: s3Source,
		Desc: "static S3 secret key, with s3.access-key"},
	{Key: "s3.region", Type: String, Default: "us-east-1", Scope: Server, Versions: Both09And10, Parser: remoteParser, FlussSource: s3Source,
		Desc: "region S3 requests are signed for"},
	{Key: "s3.path-style-access", Type: Bool, Default: "false", Scope: Server, Versions: Both09And10, Parser: remoteParser, FlussSource: s3Source,
		Desc: "true addresses endpoint/bucket/key (MinIO and most self-hosted stores) instead of virtual hosts"},
	{Key: "remote.storage.max-inflight-operations", Type: Int, Default: "16", Scope: Server, Parser: remoteParser,
		Desc: "operations in flight on the remote store at once, per node"},
	{Key: "remote.storage.max-retries", Type: Int, Default: "10", Scope: Server, Parser: remoteParser,
		Desc: "retries of a transiently failed S3 request, with exponential backoff and jitter; 0 for none"},
	{Key: "remote.storage.multipart-part-size", Type: Memory, Default: "16mb", Scope: Server, Parser: remoteParser,
		Desc: "part size of multipart uploads (larger objects go in parts); at least 5mb"},
	{Key: "remote.storage.client-credentials", Type: Enum, Default: "static", Scope: Server, Parser: remoteParser,
		See:  "tiered-storage.md#credentials-for-clients-get_filesystem_security_token",
		Desc: "what GET_FILESYSTEM_SECURITY_TOKEN hands clients of an S3 store: static (the configured keys) or none (clients bring their own)"},
	{Key: "s3.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "other S3A options"},
	{Key: "s3a.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "S3A options, as s3.*"},
	{Key: "fs.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoFsPlug,
		FlussSource: "Fluss's file system plugins (fs.s3a.*, fs.oss.*, ...)", Desc: "Hadoop file system options"},
	{Key: "oss.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoFsPlug,
		FlussSource: "fluss-fs-oss OSSFileSystemPlugin", Desc: fsDesc},
	{Key: "obs.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoFsPlug,
		FlussSource: "fluss-fs-obs OBSFileSystemPlugin", Desc: fsDesc},
	{Key: "fs.azure.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoFsPlug,
		FlussSource: "fluss-fs-azure AzureFileSystemPlugin", Desc: fsDesc},
	{Key: "gs.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoFsPlug,
		FlussSource: "fluss-fs-gs GSFileSystemPlugin", Desc: fsDesc},
})
