package fluss

import (
	"math/big"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// The client's bucket for INT primary keys must match the Java client (docs/encodings.md §10.3,
// including keys whose last byte is >= 0x80, where the Rust client differs).
func TestBucketMatchesJava(t *testing.T) {
	info := newTableInfo(TablePath{"d", "t"}, 1, 1, TableDescriptor{
		Schema:      NewSchema([]Column{NewColumn("id", Int()), NewColumn("v", String())}, "id"),
		BucketKeys:  []string{"id"},
		BucketCount: 3,
	}.internal(), 0, 0)
	for _, tc := range []struct {
		id      int32
		n3, n16 int32
	}{{0, 2, 8}, {1, 0, 12}, {2, 0, 10}, {42, 2, 10}, {128, 1, 2}, {1000, 2, 3}} {
		for _, n := range []int32{3, 16} {
			info.desc.BucketCount = n
			tbl, err := newTable(nil, info)
			if err != nil {
				t.Fatal(err)
			}
			if err := tbl.checkKeyEncoding(); err != nil {
				t.Fatal(err)
			}
			vals := []row.Datum{{I: int64(tc.id)}, row.NullDatum}
			key, err := tbl.encodeKey(nil, tbl.physPK, vals)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tbl.bucketOfKey(key)
			want := tc.n3
			if n == 16 {
				want = tc.n16
			}
			if err != nil || got != want {
				t.Errorf("id %d n=%d: bucket %d, want %d (%v)", tc.id, n, got, want, err)
			}
		}
	}
}

func TestPartitionValueString(t *testing.T) {
	for _, tc := range []struct {
		ty   DataType
		d    row.Datum
		want string
	}{
		{String(), row.Datum{B: []byte("2024")}, "2024"},
		{Boolean(), row.Datum{I: 1}, "true"},
		{BigInt(), row.Datum{I: -5}, "-5"},
		{Bytes(), row.Datum{B: []byte{0xab, 0x01}}, "ab01"},
		{Date(), row.Datum{I: 20235}, "2025-05-27"},
		{Time(), row.Datum{I: 5402199}, "01-30-02_199"},
		{Double(), row.Datum{F: 5.73}, "5_73"},
		{Double(), row.Datum{F: 1}, "1_0"},
		{Timestamp(9), row.Datum{I: 1748662955428, Nanos: 99988}, "2025-05-31-03-42-35_428099988"},
		{Timestamp(3), row.Datum{I: 1748662955000}, "2025-05-31-03-42-35_"},
	} {
		got, err := partitionValueString(tc.ty.internal(), &tc.d)
		if err != nil || got != tc.want {
			t.Errorf("%s %+v: %q, %v; want %q", tc.ty, tc.d, got, err, tc.want)
		}
	}
}

func TestRowConversionRoundTrip(t *testing.T) {
	cols := NewSchema([]Column{
		NewColumn("b", Boolean()), NewColumn("i8", TinyInt()), NewColumn("i16", SmallInt()),
		NewColumn("i32", Int()), NewColumn("i64", BigInt()), NewColumn("f", Float()),
		NewColumn("d", Double()), NewColumn("s", String()), NewColumn("bin", Bytes()),
		NewColumn("dec", DecimalType(10, 2)), NewColumn("bigdec", DecimalType(30, 3)),
		NewColumn("date", Date()), NewColumn("time", Time()), NewColumn("ts", Timestamp(6)),
		NewColumn("arr", ArrayOf(Int())), NewColumn("m", MapOf(String(), BigInt())),
		NewColumn("n", String()),
	}).internal().Columns
	ts := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	in := Row{true, int8(-1), int16(300), int32(-70000), int64(1) << 40, float32(1.5), 2.25, "héllo", []byte{0, 1},
		"-123.45", Decimal{Unscaled: big.NewInt(-98765432109876543), Scale: 3},
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), 3*time.Hour + 7*time.Millisecond, ts,
		[]any{int32(1), nil, int32(3)}, map[string]int64{"k": 9}, nil}
	ds, err := toDatums(cols, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	types := make([]metadata.DataType, len(cols))
	for i, c := range cols {
		types[i] = c.Type
	}
	enc, err := row.AppendCompactedRow(nil, types, ds)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := row.DecodeCompactedRow(types, enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := fromDatums(cols, dec)
	if out[9].(Decimal).String() != "-123.45" || out[10].(Decimal).String() != "-98765432109876.543" {
		t.Fatalf("decimals %v %v", out[9], out[10])
	}
	if !out[13].(time.Time).Equal(ts) || out[12] != 3*time.Hour+7*time.Millisecond || out[11] != time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("times %v %v %v", out[11], out[12], out[13])
	}
	if out[0] != true || out[1] != int8(-1) || out[2] != int16(300) || out[3] != int32(-70000) || out[4] != int64(1)<<40 ||
		out[5] != float32(1.5) || out[6] != 2.25 || out[7] != "héllo" || string(out[8].([]byte)) != "\x00\x01" || out[16] != nil {
		t.Fatalf("scalars %v", out)
	}
	if a := out[14].([]any); len(a) != 3 || a[1] != nil || a[2] != int32(3) {
		t.Fatalf("array %v", a)
	}
	if m := out[15].(map[any]any); m["k"] != int64(9) {
		t.Fatalf("map %v", m)
	}

	for _, bad := range []struct {
		ty DataType
		v  any
	}{{TinyInt(), 200}, {Int(), "x"}, {DecimalType(4, 2), "123.45"}, {DecimalType(5, 1), "1.25"}, {Int().Nullable(false), nil}, {Boolean(), 1}} {
		if _, err := toDatum(bad.ty.internal(), bad.v); err == nil {
			t.Errorf("toDatum(%s, %v) accepted", bad.ty, bad.v)
		}
	}
}

func TestTwosComplement(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{{0, "00"}, {127, "7f"}, {128, "0080"}, {-1, "ff"}, {-128, "80"}, {-129, "ff7f"}, {255, "00ff"}, {-256, "ff00"}} {
		got := twosComplement(big.NewInt(tc.v))
		if hex := bytesHex(got); hex != tc.want {
			t.Errorf("%d: %s, want %s", tc.v, hex, tc.want)
		}
		if back := fromTwosComplement(got); back.Int64() != tc.v {
			t.Errorf("%d: round trip %v", tc.v, back)
		}
	}
}

func bytesHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestConfig(t *testing.T) {
	c, err := FromProperties(map[string]string{
		"bootstrap.servers": "h1:1, h2:2", "writer.batch-size": "1mb", "writer.acks": "1",
		"writer.batch-timeout-ms": "5", "writer.enable-idempotence": "false", "writer.retries": "3",
		"security.protocol": "sasl", "security.sasl.username": "u", "security.sasl.password": "p",
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err = c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	acks, _ := c.acks()
	if c.WriterBatchSize != 1<<20 || acks != 1 || c.WriterBatchTimeout != 5*time.Millisecond || !c.WriterDisableIdempotence ||
		c.WriterRetries != 3 || !c.sasl() || c.WriterBufferMemorySize != 64<<20 {
		t.Fatalf("config %+v", c)
	}
	for _, bad := range []map[string]string{
		{"no.such.key": "1"}, {"writer.batch-size": "lots"}, {"writer.enable-idempotence": "maybe"},
	} {
		if _, err := FromProperties(bad); err == nil {
			t.Errorf("FromProperties(%v) accepted", bad)
		}
	}
	for _, bad := range []Config{{WriterAcks: "2"}, {SecurityProtocol: "ssl"}, {SecurityProtocol: "sasl", SASLUsername: "u"}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("withDefaults(%+v) accepted", bad)
		}
	}
}

// Struct mappings are cached per Table handle, not in a package-level map that would keep
// every Table ever used alive.
func TestStructMapCachedOnTable(t *testing.T) {
	info := newTableInfo(TablePath{"d", "t"}, 1, 1, TableDescriptor{
		Schema:      NewSchema([]Column{NewColumn("id", Int()), NewColumn("name", String())}, "id"),
		BucketCount: 1,
	}.internal(), 0, 0)
	type rec struct {
		ID   int32
		Name string
	}
	a, _ := newTable(nil, info)
	b, _ := newTable(nil, info)
	m1, err := mapStruct[rec](a)
	if err != nil {
		t.Fatal(err)
	}
	if m2, _ := mapStruct[rec](a); m2 != m1 {
		t.Fatal("mapping not cached on the table")
	}
	if m3, _ := mapStruct[rec](b); m3 == m1 {
		t.Fatal("mapping shared between tables")
	}
	n := 0
	a.structMaps.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d cached mappings, want 1", n)
	}
}

// The public constants are the protocol's values, as the internal packages know them.
func TestPublicConstantsMatchProtocol(t *testing.T) {
	for _, c := range []struct {
		pub ChangeType
		in  record.ChangeType
	}{{AppendOnly, record.AppendOnly}, {Insert, record.Insert}, {UpdateBefore, record.UpdateBefore}, {UpdateAfter, record.UpdateAfter}, {Delete, record.Delete}} {
		if byte(c.pub) != byte(c.in) || c.pub.ShortString() != c.in.ShortString() {
			t.Errorf("change type %v = %d, protocol %d", c.pub, c.pub, c.in)
		}
	}
	for _, c := range []struct {
		pub ErrorCode
		in  ferr.Code
	}{
		{ErrUnknownServerError, ferr.UnknownServerError},
		{ErrNetworkException, ferr.NetworkException},
		{ErrUnsupportedVersion, ferr.UnsupportedVersion},
		{ErrCorruptMessage, ferr.CorruptMessage},
		{ErrDatabaseNotExist, ferr.DatabaseNotExist},
		{ErrDatabaseNotEmpty, ferr.DatabaseNotEmpty},
		{ErrDatabaseAlreadyExist, ferr.DatabaseAlreadyExist},
		{ErrTableNotExist, ferr.TableNotExist},
		{ErrTableAlreadyExist, ferr.TableAlreadyExist},
		{ErrSchemaNotExist, ferr.SchemaNotExist},
		{ErrLogStorage, ferr.LogStorageException},
		{ErrKvStorage, ferr.KvStorageException},
		{ErrNotLeaderOrFollower, ferr.NotLeaderOrFollower},
		{ErrRecordTooLarge, ferr.RecordTooLargeException},
		{ErrCorruptRecord, ferr.CorruptRecordException},
		{ErrInvalidTable, ferr.InvalidTableException},
		{ErrInvalidDatabase, ferr.InvalidDatabaseException},
		{ErrInvalidReplicationFactor, ferr.InvalidReplicationFactor},
		{ErrInvalidRequiredAcks, ferr.InvalidRequiredAcks},
		{ErrLogOffsetOutOfRange, ferr.LogOffsetOutOfRangeException},
		{ErrNonPrimaryKeyTable, ferr.NonPrimaryKeyTableException},
		{ErrUnknownTableOrBucket, ferr.UnknownTableOrBucketException},
		{ErrInvalidUpdateVersion, ferr.InvalidUpdateVersionException},
		{ErrInvalidCoordinator, ferr.InvalidCoordinatorException},
		{ErrFencedLeaderEpoch, ferr.FencedLeaderEpochException},
		{ErrRequestTimeOut, ferr.RequestTimeOut},
		{ErrStorage, ferr.StorageException},
		{ErrOperationNotAttempted, ferr.OperationNotAttemptedException},
		{ErrNotEnoughReplicasAfterAppend, ferr.NotEnoughReplicasAfterAppendException},
		{ErrNotEnoughReplicas, ferr.NotEnoughReplicasException},
		{ErrSecurityToken, ferr.SecurityTokenException},
		{ErrOutOfOrderSequence, ferr.OutOfOrderSequenceException},
		{ErrDuplicateSequence, ferr.DuplicateSequenceException},
		{ErrUnknownWriterId, ferr.UnknownWriterIdException},
		{ErrInvalidColumnProjection, ferr.InvalidColumnProjection},
		{ErrInvalidTargetColumn, ferr.InvalidTargetColumn},
		{ErrPartitionNotExists, ferr.PartitionNotExists},
		{ErrTableNotPartitioned, ferr.TableNotPartitionedException},
		{ErrInvalidTimestamp, ferr.InvalidTimestampException},
		{ErrInvalidConfig, ferr.InvalidConfigException},
		{ErrLakeStorageNotConfigured, ferr.LakeStorageNotConfiguredException},
		{ErrKvSnapshotNotExist, ferr.KvSnapshotNotExist},
		{ErrPartitionAlreadyExists, ferr.PartitionAlreadyExists},
		{ErrInvalidPartitionSpec, ferr.PartitionSpecInvalidException},
		{ErrLeaderNotAvailable, ferr.LeaderNotAvailableException},
		{ErrPartitionMaxNum, ferr.PartitionMaxNumException},
		{ErrAuthenticate, ferr.AuthenticateException},
		{ErrSecurityDisabled, ferr.SecurityDisabledException},
		{ErrAuthorization, ferr.AuthorizationException},
		{ErrBucketMaxNum, ferr.BucketMaxNumException},
		{ErrFencedTieringEpoch, ferr.FencedTieringEpochException},
		{ErrRetriableAuthenticate, ferr.RetriableAuthenticateException},
		{ErrInvalidServerRackInfo, ferr.InvalidServerRackInfoException},
		{ErrLakeSnapshotNotExist, ferr.LakeSnapshotNotExist},
		{ErrLakeTableAlreadyExist, ferr.LakeTableAlreadyExist},
		{ErrIneligibleReplica, ferr.IneligibleReplicaException},
		{ErrInvalidAlterTable, ferr.InvalidAlterTableException},
		{ErrDeletionDisabled, ferr.DeletionDisabledException},
		{ErrServerNotExist, ferr.ServerNotExistException},
		{ErrSeverTagAlreadyExist, ferr.SeverTagAlreadyExistException},
		{ErrSeverTagNotExist, ferr.SeverTagNotExistException},
		{ErrRebalanceFailure, ferr.RebalanceFailureException},
		{ErrNoRebalanceInProgress, ferr.NoRebalanceInProgressException},
		{ErrInvalidProducerId, ferr.InvalidProducerIdException},
		{ErrConfig, ferr.ConfigException},
		{ErrNotCoordinatorLeader, ferr.NotCoordinatorLeaderException},
		{ErrScannerExpired, ferr.ScannerExpired},
		{ErrUnknownScannerId, ferr.UnknownScannerId},
		{ErrInvalidScanRequest, ferr.InvalidScanRequest},
		{ErrTooManyScanners, ferr.TooManyScanners},
		{ErrDiskWriteLocked, ferr.DiskWriteLocked},
		{ErrInsufficientKvLeaderReplicaCapacity, ferr.InsufficientKvLeaderReplicaCapacity},
		{ErrStorageBackpressure, ferr.StorageBackpressureException},
		{ErrHistoricalPartitionThrottled, ferr.HistoricalPartitionThrottled},
	} {
		if int32(c.pub) != int32(c.in) || c.pub.Name() != c.in.String() || c.pub.Retriable() != c.in.Retriable() {
			t.Errorf("error code %v = %d, protocol %v = %d", c.pub, c.pub, c.in, c.in)
		}
	}
	for r := metadata.Boolean; r <= metadata.LastTypeRoot; r++ {
		if got := publicType(metadata.DataType{Root: r}).Root; TypeRoot(r) != got || got.String() != r.String() {
			t.Errorf("type root %v -> %v", r, got)
		}
	}
}

// Public and internal types convert both ways without loss.
func TestTypeConversionRoundTrip(t *testing.T) {
	s := NewSchema([]Column{
		NewColumn("id", BigInt().Nullable(false)),
		{Name: "m", Type: MapOf(String(), ArrayOf(DecimalType(12, 3))), Comment: "nested"},
		NewColumn("r", RowOf(Field{Name: "a", Type: TimestampLTZ(3)}, Field{Name: "b", Type: Binary(4), Description: "d"})),
		{Name: "total", Type: Double(), AggFunction: &AggFunction{Type: "sum"}},
		NewColumn("c", Char(2)),
		NewColumn("t", Time()),
	}, "id")
	back := publicSchema(s.internal())
	if len(back.Columns) != len(s.Columns) {
		t.Fatalf("columns %v", back.Columns)
	}
	for i := range s.Columns {
		a, b := s.Columns[i], back.Columns[i]
		if a.Name != b.Name || !a.Type.Equal(b.Type) || a.Comment != b.Comment || (a.AggFunction == nil) != (b.AggFunction == nil) {
			t.Errorf("column %d: %+v became %+v", i, a, b)
		}
	}
	if got := s.Columns[1].Type.String(); got != "MAP<STRING, ARRAY<DECIMAL(12, 3)>>" {
		t.Errorf("map type renders as %q", got)
	}
	if got := s.Columns[2].Type.String(); got != "ROW<`a` TIMESTAMP_LTZ(3), `b` BINARY(4)>" {
		t.Errorf("row type renders as %q", got)
	}
	if f := back.Columns[2].Type.Fields[1]; f.Description != "d" || f.Name != "b" {
		t.Errorf("row field %+v", f)
	}
}
