package coordinator_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/config"
)

const testJAAS = `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required ` +
	`user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`

// secureNode starts a server whose only listener (CLIENT, per role) is SASL, with the
// authorizer on and admin as super user, and returns it with its data directory.
func secureNode(t *testing.T, dir string, extra ...string) *server.Node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "CLIENT", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "CLIENT", Host: "127.0.0.1", Port: 0}}
	for k, v := range map[string]string{
		"security.protocol.map":           "CLIENT:sasl",
		"security.sasl.plain.jaas.config": testJAAS,
		"authorizer.enabled":              "true",
		"super.users":                     "User:admin",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if err := cfg.Set(extra[i], extra[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

type user struct{ coord, tablet *wire.ClientConn }

func login(t *testing.T, n *server.Node, name string) user {
	return user{
		coord:  dial(t, n.Addr("coordinator"), 1, name, name+"-secret"),
		tablet: dial(t, n.Addr("tablet-server"), 2, name, name+"-secret"),
	}
}

func aclInfo(resType auth.ResourceType, resName, principal string, op auth.Operation) *flusspb.PbAclInfo {
	return &flusspb.PbAclInfo{ResourceType: proto.Int32(int32(resType)), ResourceName: proto.String(resName),
		PrincipalName: proto.String(principal), PrincipalType: proto.String("User"), Host: proto.String("*"),
		OperationType: proto.Int32(int32(op)), PermissionType: proto.Int32(int32(auth.PermissionAllow))}
}

func anyFilter() *flusspb.PbAclFilter {
	return &flusspb.PbAclFilter{ResourceType: proto.Int32(int32(auth.ResourceAny)), OperationType: proto.Int32(int32(auth.OpAny)),
		PermissionType: proto.Int32(int32(auth.PermissionAny))}
}

func listACLs(t *testing.T, c *wire.ClientConn) []*flusspb.PbAclInfo {
	t.Helper()
	var resp flusspb.ListAclsResponse
	mustCall(t, c, wire.ListAcls, &flusspb.ListAclsRequest{AclFilter: anyFilter()}, &resp)
	return resp.Acl
}

func listTables(t *testing.T, c *wire.ClientConn, db string) []string {
	t.Helper()
	var resp flusspb.ListTablesResponse
	mustCall(t, c, wire.ListTables, &flusspb.ListTablesRequest{DatabaseName: proto.String(db)}, &resp)
	return resp.TableName
}

func fetchBucket0(t *testing.T, c *wire.ClientConn, tableID int64) *flusspb.PbFetchLogRespForBucket {
	t.Helper()
	var resp flusspb.FetchLogResponse
	mustCall(t, c, wire.FetchLog, &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(1 << 20),
		TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false),
			BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1 << 20)}}}}}, &resp)
	return resp.TablesResp[0].BucketsResp[0]
}

func TestACLAuthorization(t *testing.T) {
	dir := t.TempDir()
	n := secureNode(t, dir)
	admin, alice := login(t, n, "admin"), login(t, n, "alice")

	t1 := createLogTable(t, admin.coord, "t1", 1)
	t2 := createLogTable(t, admin.coord, "t2", 1)
	if err := produce(t, admin.tablet, t1, 0, 2); err != nil {
		t.Fatal(err)
	}

	// Without ACLs alice can do nothing and sees nothing.
	err := call(t, alice.coord, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String("x"), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateDatabaseResponse{})
	wantCode(t, err, ferr.AuthorizationException, "CREATE_DATABASE without ACL")
	var dbs flusspb.ListDatabasesResponse
	mustCall(t, alice.coord, wire.ListDatabases, &flusspb.ListDatabasesRequest{}, &dbs)
	if len(dbs.DatabaseName) != 0 {
		t.Fatalf("alice lists databases %v", dbs.DatabaseName)
	}
	var exists flusspb.DatabaseExistsResponse
	mustCall(t, alice.coord, wire.DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("fluss")}, &exists)
	if !exists.GetExists() {
		t.Fatal("the default database must stay visible to DATABASE_EXISTS")
	}
	if got := listTables(t, alice.coord, "fluss"); len(got) != 0 {
		t.Fatalf("denied LIST_TABLES leaks %v", got)
	}
	var te flusspb.TableExistsResponse
	mustCall(t, alice.coord, wire.TableExists, &flusspb.TableExistsRequest{TablePath: tablePath("t1")}, &te)
	if te.GetExists() {
		t.Fatal("TABLE_EXISTS leaks t1")
	}
	wantCode(t, call(t, alice.coord, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: tablePath("t1")}, &flusspb.GetTableInfoResponse{}),
		ferr.AuthorizationException, "GET_TABLE_INFO")
	var md flusspb.MetadataResponse
	mustCall(t, alice.coord, wire.GetMetadata, &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{tablePath("t1")}}, &md)
	if len(md.TableMetadata) != 0 {
		t.Fatal("GET_METADATA leaks t1")
	}
	if b := fetchBucket0(t, alice.tablet, t1); ferr.Code(b.GetErrorCode()) != ferr.AuthorizationException || len(b.Records) != 0 {
		t.Fatalf("denied fetch: code %d, %d bytes", b.GetErrorCode(), len(b.Records))
	}
	wantCode(t, produce(t, alice.tablet, t1, 0, 1), ferr.AuthorizationException, "denied produce")
	if len(listACLs(t, alice.coord)) != 0 {
		t.Fatal("alice lists ACLs")
	}
	wantCode(t, call(t, alice.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{Acl: []*flusspb.PbAclInfo{aclInfo(auth.ResourceCluster, auth.ClusterName, "alice", auth.OpAll)}}, &flusspb.CreateAclsResponse{}),
		ferr.AuthorizationException, "alice grants herself ALL")
	if got := listACLs(t, admin.coord); len(got) != 0 {
		t.Fatalf("a denied CREATE_ACLS wrote %v", got)
	}

	// admin grants READ on t1.
	grant := func(acls ...*flusspb.PbAclInfo) {
		t.Helper()
		var cr flusspb.CreateAclsResponse
		mustCall(t, admin.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{Acl: acls}, &cr)
		for _, r := range cr.AclRes {
			if r.GetErrorCode() != 0 {
				t.Fatalf("create ACL: %v", r)
			}
		}
	}
	grant(aclInfo(auth.ResourceTable, "fluss.t1", "alice", auth.OpRead))
	if got := listTables(t, alice.coord, "fluss"); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("alice lists %v, want [t1] (READ implies DESCRIBE)", got)
	}
	if b := fetchBucket0(t, alice.tablet, t1); b.GetErrorCode() != 0 || len(b.Records) == 0 {
		t.Fatalf("allowed fetch: code %d %s", b.GetErrorCode(), b.GetErrorMessage())
	}
	if b := fetchBucket0(t, alice.tablet, t2); ferr.Code(b.GetErrorCode()) != ferr.AuthorizationException {
		t.Fatalf("fetch of t2: code %d", b.GetErrorCode())
	}
	wantCode(t, produce(t, alice.tablet, t1, 0, 1), ferr.AuthorizationException, "READ does not allow WRITE")
	wantCode(t, call(t, alice.coord, wire.DropTable, &flusspb.DropTableRequest{TablePath: tablePath("t1"), IgnoreIfNotExists: proto.Bool(false)}, &flusspb.DropTableResponse{}),
		ferr.AuthorizationException, "DROP_TABLE")
	if got := len(listACLs(t, alice.coord)); got != 1 {
		t.Fatalf("alice lists %d ACLs, want the one on t1 she may describe", got)
	}

	// CREATE on the database lets alice create tables, and (as in Fluss, where a database ACL
	// covers its tables and CREATE implies DESCRIBE) see every table of it.
	grant(aclInfo(auth.ResourceDatabase, "fluss", "alice", auth.OpCreate))
	createLogTable(t, alice.coord, "t3", 1)
	if got := listTables(t, alice.coord, "fluss"); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
		t.Fatalf("alice lists %v with CREATE on the database", got)
	}
	if got := len(listACLs(t, admin.coord)); got != 2 {
		t.Fatalf("admin lists %d ACLs, want 2", got)
	}

	// Drop alice's READ on t1.
	var dr flusspb.DropAclsResponse
	mustCall(t, admin.coord, wire.DropAcls, &flusspb.DropAclsRequest{AclFilter: []*flusspb.PbAclFilter{{
		ResourceType: proto.Int32(int32(auth.ResourceAny)), PrincipalName: proto.String("alice"), PrincipalType: proto.String("User"),
		OperationType: proto.Int32(int32(auth.OpRead)), PermissionType: proto.Int32(int32(auth.PermissionAny))}}}, &dr)
	if len(dr.FilterResults) != 1 || len(dr.FilterResults[0].MatchingAcls) != 1 || dr.FilterResults[0].MatchingAcls[0].Acl.GetResourceName() != "fluss.t1" {
		t.Fatalf("drop result: %v", &dr)
	}

	// ACLs survive a restart.
	n.Close()
	n = secureNode(t, dir)
	admin, alice = login(t, n, "admin"), login(t, n, "alice")
	if got := listACLs(t, admin.coord); len(got) != 1 || got[0].GetOperationType() != int32(auth.OpCreate) {
		t.Fatalf("after restart: %v", got)
	}
	if b := fetchBucket0(t, alice.tablet, t1); ferr.Code(b.GetErrorCode()) != ferr.AuthorizationException {
		t.Fatalf("fetch after READ was dropped: code %d", b.GetErrorCode())
	}
	bob := login(t, n, "bob")
	if got := listTables(t, bob.coord, "fluss"); len(got) != 0 {
		t.Fatalf("bob lists %v", got)
	}
}

func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	wantCode(t, call(t, tn.coord, wire.ListAcls, &flusspb.ListAclsRequest{AclFilter: anyFilter()}, &flusspb.ListAclsResponse{}),
		ferr.SecurityDisabledException, "LIST_ACLS")
	wantCode(t, call(t, tn.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{}, &flusspb.CreateAclsResponse{}),
		ferr.SecurityDisabledException, "CREATE_ACLS")
}

// Every data-plane and cluster API refuses a user without ACLs, and the refused writes store
// nothing.
func TestACLDeniesEveryAPI(t *testing.T) {
	n := secureNode(t, t.TempDir())
	admin, bob := login(t, n, "admin"), login(t, n, "bob")
	logID := createLogTable(t, admin.coord, "log", 1)
	pkID := createPKTable(t, admin.coord, "pk")
	if err := produce(t, admin.tablet, logID, 0, 3); err != nil {
		t.Fatal(err)
	}

	denied := func(what string, err error) {
		t.Helper()
		wantCode(t, err, ferr.AuthorizationException, what)
	}
	denied("PRODUCE_LOG", produce(t, bob.tablet, logID, 0, 1))
	denied("PUT_KV", call(t, bob.tablet, wire.PutKv, &flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: proto.Int64(pkID), TimeoutMs: proto.Int32(1000),
		BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(0), Records: []byte{1}}}}, &flusspb.PutKvResponse{}))
	denied("LIMIT_SCAN", call(t, bob.tablet, wire.LimitScan, &flusspb.LimitScanRequest{TableId: proto.Int64(logID), BucketId: proto.Int32(0), Limit: proto.Int32(10)}, &flusspb.LimitScanResponse{}))
	denied("LIST_OFFSETS", call(t, bob.tablet, wire.ListOffsets, &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(1),
		TableId: proto.Int64(logID), BucketId: []int32{0}}, &flusspb.ListOffsetsResponse{}))
	denied("GET_TABLE_STATS", call(t, bob.tablet, wire.GetTableStats, &flusspb.GetTableStatsRequest{TableId: proto.Int64(logID),
		BucketsReq: []*flusspb.PbTableStatsReqForBucket{{BucketId: proto.Int32(0)}}}, &flusspb.GetTableStatsResponse{}))
	denied("INIT_WRITER", call(t, bob.tablet, wire.InitWriter, &flusspb.InitWriterRequest{TablePath: []*flusspb.PbTablePath{tablePath("log")}}, &flusspb.InitWriterResponse{}))
	denied("LOOKUP insert_if_not_exists", call(t, bob.tablet, wire.Lookup, &flusspb.LookupRequest{TableId: proto.Int64(pkID), InsertIfNotExists: proto.Bool(true),
		BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{{0}}}}}, &flusspb.LookupResponse{}))
	var lr flusspb.LookupResponse
	mustCall(t, bob.tablet, wire.Lookup, &flusspb.LookupRequest{TableId: proto.Int64(pkID),
		BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{{0}}}}}, &lr)
	if b := lr.BucketsResp[0]; ferr.Code(b.GetErrorCode()) != ferr.AuthorizationException || len(b.Values) != 0 {
		t.Fatalf("LOOKUP: %v", b)
	}
	var plr flusspb.PrefixLookupResponse
	mustCall(t, bob.tablet, wire.PrefixLookup, &flusspb.PrefixLookupRequest{TableId: proto.Int64(pkID),
		BucketsReq: []*flusspb.PbPrefixLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{{0}}}}}, &plr)
	if b := plr.BucketsResp[0]; ferr.Code(b.GetErrorCode()) != ferr.AuthorizationException {
		t.Fatalf("PREFIX_LOOKUP: %v", b)
	}
	denied("ALTER_DATABASE", call(t, bob.coord, wire.AlterDatabase, &flusspb.AlterDatabaseRequest{DatabaseName: proto.String("fluss"),
		IgnoreIfNotExists: proto.Bool(false), Comment: proto.String("bob was here")}, &flusspb.AlterDatabaseResponse{}))
	denied("ALTER_TABLE", alterTable(t, bob.coord, "log", []*flusspb.PbAlterConfig{setOption("owner", "bob")}, nil))
	denied("DESCRIBE_CLUSTER_CONFIGS", call(t, bob.coord, wire.DescribeClusterConfigs, &flusspb.DescribeClusterConfigsRequest{}, &flusspb.DescribeClusterConfigsResponse{}))
	denied("ALTER_CLUSTER_CONFIGS", call(t, bob.coord, wire.AlterClusterConfigs, &flusspb.AlterClusterConfigsRequest{
		AlterConfigs: []*flusspb.PbAlterConfig{setOption("kv.snapshot.interval", "1min")}}, &flusspb.AlterClusterConfigsResponse{}))
	denied("GET_CLUSTER_HEALTH", call(t, bob.tablet, wire.GetClusterHealth, &flusspb.GetClusterHealthRequest{}, &flusspb.GetClusterHealthResponse{}))
	denied("REGISTER_PRODUCER_OFFSETS", call(t, bob.coord, wire.RegisterProducerOffsets, &flusspb.RegisterProducerOffsetsRequest{ProducerId: proto.String("p"),
		TableOffsets: []*flusspb.PbProducerTableOffsets{{TableId: proto.Int64(logID)}}}, &flusspb.RegisterProducerOffsetsResponse{}))

	// Nothing bob tried was stored.
	var st flusspb.GetTableStatsResponse
	mustCall(t, admin.tablet, wire.GetTableStats, &flusspb.GetTableStatsRequest{TableId: proto.Int64(logID),
		BucketsReq: []*flusspb.PbTableStatsReqForBucket{{BucketId: proto.Int32(0)}}}, &st)
	if st.BucketsResp[0].GetRowCount() != 3 {
		t.Fatalf("log holds %d records after denied writes", st.BucketsResp[0].GetRowCount())
	}
	if d := descriptorOf(t, tableInfo(t, admin.coord, "log")); len(d.CustomProperties) != 0 {
		t.Fatalf("denied ALTER_TABLE stored %v", d.CustomProperties)
	}
	var po flusspb.GetProducerOffsetsResponse
	mustCall(t, admin.coord, wire.GetProducerOffsets, &flusspb.GetProducerOffsetsRequest{ProducerId: proto.String("p")}, &po)
	if po.ProducerId != nil {
		t.Fatal("denied REGISTER_PRODUCER_OFFSETS stored offsets")
	}
	if _, ok := describeConfigs(t, admin.coord)["kv.snapshot.interval"]; ok {
		t.Fatal("denied ALTER_CLUSTER_CONFIGS stored a value")
	}

	// WRITE on the log table lets bob produce, and INIT_WRITER passes with one writable table.
	mustCall(t, admin.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{Acl: []*flusspb.PbAclInfo{aclInfo(auth.ResourceTable, "fluss.log", "bob", auth.OpWrite)}}, &flusspb.CreateAclsResponse{})
	if err := produce(t, bob.tablet, logID, 0, 1); err != nil {
		t.Fatalf("produce with WRITE: %v", err)
	}
	if err := call(t, bob.tablet, wire.InitWriter, &flusspb.InitWriterRequest{TablePath: []*flusspb.PbTablePath{tablePath("pk"), tablePath("log")}}, &flusspb.InitWriterResponse{}); err != nil {
		t.Fatalf("INIT_WRITER with one writable table: %v", err)
	}
}

// Requests on the internal listener (internal.listener.name) are never authorised, as in
// Fluss.
func TestACLInternalListenerIsExempt(t *testing.T) {
	n := secureNode(t, t.TempDir(), "internal.listener.name", "CLIENT")
	bob := login(t, n, "bob")
	createLogTable(t, bob.coord, "mine", 1)
	if got := listTables(t, bob.coord, "fluss"); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("bob lists %v on the internal listener", got)
	}
}

// An ACL entry for a host grants access only to clients connecting from it (Fluss matches the
// session's host against the entry's, "*" matching every host).
func TestACLHostMatching(t *testing.T) {
	n := secureNode(t, t.TempDir())
	admin, alice := login(t, n, "admin"), login(t, n, "alice")
	grant := func(host string) {
		t.Helper()
		acl := aclInfo(auth.ResourceCluster, auth.ClusterName, "alice", auth.OpCreate)
		acl.Host = proto.String(host)
		var cr flusspb.CreateAclsResponse
		mustCall(t, admin.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{Acl: []*flusspb.PbAclInfo{acl}}, &cr)
		for _, r := range cr.AclRes {
			if r.GetErrorCode() != 0 {
				t.Fatalf("create ACL: %v", r)
			}
		}
	}
	create := func(name string) error {
		return call(t, alice.coord, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(name), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateDatabaseResponse{})
	}
	grant("10.1.2.3") // another host: still denied from loopback
	wantCode(t, create("a"), ferr.AuthorizationException, "CREATE_DATABASE with an ACL for another host")
	grant("127.0.0.1") // the host alice connects from
	if err := create("b"); err != nil {
		t.Fatalf("CREATE_DATABASE with an ACL for the client's host: %v", err)
	}
}
