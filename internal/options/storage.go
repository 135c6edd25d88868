package options

// Remote storage options Strom does not serve yet: declared so that a Fluss user's
// configuration is classified, and so that the remote-storage work only flips a status and
// adds an accessor. Fluss's S3 file system plugin (fluss-filesystems/fluss-fs-s3,
// S3FileSystemPlugin) passes every s3.*, s3a.* and fs.s3a.* option to Hadoop's S3A.

const (
	whyNoS3     = "remote.data.dir takes local directories and file:// only; S3 is not served yet"
	s3Source    = "fluss-fs-s3 S3FileSystemPlugin (s3.* passed to Hadoop S3A)"
	fsDesc      = "options of another file system plugin"
	whyNoFsPlug = "remote.data.dir takes local directories and file:// only"
)

var _ = registerAll([]Option{
	{Key: "s3.endpoint", Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "S3 endpoint URL"},
	{Key: "s3.access-key", Type: Password, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "S3 access key id"},
	{Key: "s3.secret-key", Type: Password, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "S3 secret access key"},
	{Key: "s3.region", Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "S3 region"},
	{Key: "s3.path-style-access", Type: Bool, Default: "false", Scope: Server, Versions: Both09And10, Status: NoEffect, Why: whyNoS3, FlussSource: s3Source,
		Desc: "address buckets by path instead of virtual host"},
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
