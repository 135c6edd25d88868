package fluss_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
	"github.com/stromdb/strom/server/config"
)

const aclJAAS = `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required ` +
	`user_admin="admin-secret" user_alice="alice-secret";`

// aclCluster, when set, is a SASL listener of an external cluster run with
// authorizer.enabled, super.users User:admin and the users of aclJAAS, and without ACLs of
// its own (TestAcls drops every binding first). Otherwise the ACL tests start a server.
var aclCluster = os.Getenv("FLUSS_ACL_BOOTSTRAP")

// startAuthorized starts a server with SASL/PLAIN users admin (a super user) and alice, and
// authorizer.enabled, and returns a connection per user.
func startAuthorized(t *testing.T) (admin, alice *fluss.Connection, ctx context.Context) {
	t.Helper()
	ctx = t.Context()
	bootstrap := aclCluster
	if bootstrap == "" {
		bootstrap = startAuthorizedStrom(t)
	}
	login := func(user string) *fluss.Connection {
		conn, err := fluss.Connect(ctx, fluss.Config{
			BootstrapServers: bootstrap, SecurityProtocol: "sasl",
			SASLUsername: user, SASLPassword: user + "-secret", WriterBatchTimeout: 5e6,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	admin, alice = login("admin"), login("alice")
	if aclCluster != "" {
		if _, err := admin.Admin().DropAcls(ctx, []fluss.AclBindingFilter{{}}); err != nil {
			t.Fatal(err)
		}
	}
	return admin, alice, ctx
}

func startAuthorizedStrom(t *testing.T) string {
	needsStrom(t)
	srv := testserver.Start(t, func(c *config.Config) {
		c.SecurityProtocolMap = map[string]string{"FLUSS": "SASL"}
		c.PlainJAASConfig = aclJAAS
		for k, v := range map[string]string{"authorizer.enabled": "true", "super.users": "User:admin",
			// The server's one listener is FLUSS; Fluss never authorises the internal one.
			"internal.listener.name": "INTERNAL"} {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	return srv.Bootstrap
}

// A super user grants alice rights with CreateAcls; alice is denied with ErrAuthorization
// before and after the grant is dropped, and can do what she was granted in between.
func TestAcls(t *testing.T) {
	root, alice, ctx := startAuthorized(t)
	admin, aliceAdmin := root.Admin(), alice.Admin()
	path := fluss.NewTablePath("fluss", "acl_go")
	if err := admin.DropTable(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTable(ctx, path, logDesc(1), false); err != nil {
		t.Fatal(err)
	}

	_, err := aliceAdmin.GetTableInfo(ctx, path)
	mustCode(t, err, fluss.ErrAuthorization)
	// Alice may not grant herself anything.
	_, err = aliceAdmin.CreateAcls(ctx, []fluss.AclBinding{fluss.NewAclBinding(fluss.ClusterResource(), fluss.User("alice"), fluss.OperationAll)})
	mustCode(t, err, fluss.ErrAuthorization)

	grants := []fluss.AclBinding{
		fluss.NewAclBinding(fluss.TableResource(path), fluss.User("alice"), fluss.OperationDescribe),
		fluss.NewAclBinding(fluss.DatabaseResource("fluss"), fluss.User("alice"), fluss.OperationDescribe),
		// Refused on its own: a resource needs a name.
		fluss.NewAclBinding(fluss.DatabaseResource(""), fluss.User("alice"), fluss.OperationRead),
	}
	results, err := admin.CreateAcls(ctx, grants)
	if err != nil {
		t.Fatal(err)
	}
	if results[0] != nil || results[1] != nil || fluss.CodeOf(results[2]) == 0 {
		t.Fatalf("create results %v", results)
	}

	all, err := admin.ListAcls(ctx, fluss.AclBindingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || !slices.Contains(all, grants[0]) || !slices.Contains(all, grants[1]) {
		t.Fatalf("list all = %v", all)
	}
	onTable, err := admin.ListAcls(ctx, fluss.AclBindingFilter{ResourceType: fluss.ResourceTable, ResourceName: path.String()})
	if err != nil || len(onTable) != 1 || onTable[0] != grants[0] {
		t.Fatalf("list table = %v, %v", onTable, err)
	}
	bob := fluss.User("bob")
	if none, err := admin.ListAcls(ctx, fluss.AclBindingFilter{Principal: &bob}); err != nil || len(none) != 0 {
		t.Fatalf("list bob = %v, %v", none, err)
	}

	info, err := aliceAdmin.GetTableInfo(ctx, path)
	if err != nil || info.Path != path {
		t.Fatalf("granted describe: %v, %v", info, err)
	}
	// DESCRIBE is not WRITE.
	mustCode(t, aliceAdmin.DropTable(ctx, path, false), fluss.ErrAuthorization)

	dropped, err := admin.DropAcls(ctx, []fluss.AclBindingFilter{fluss.FilterOf(grants[0]), {ResourceType: fluss.ResourceCluster}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || dropped[0].Err != nil || len(dropped[0].Bindings) != 1 || dropped[0].Bindings[0] != grants[0] || len(dropped[1].Bindings) != 0 {
		t.Fatalf("dropped %+v", dropped)
	}
	// DESCRIBE on the database still covers its tables, as in Fluss.
	if _, err := aliceAdmin.GetTableInfo(ctx, path); err != nil {
		t.Fatal(err)
	}
	left, err := admin.ListAcls(ctx, fluss.AclBindingFilter{})
	if err != nil || len(left) != 1 || left[0] != grants[1] {
		t.Fatalf("left %v, %v", left, err)
	}
	aliceP := fluss.User("alice")
	if _, err := admin.DropAcls(ctx, []fluss.AclBindingFilter{{Principal: &aliceP}}); err != nil {
		t.Fatal(err)
	}
	_, err = aliceAdmin.GetTableInfo(ctx, path)
	mustCode(t, err, fluss.ErrAuthorization)
	if left, err := admin.ListAcls(ctx, fluss.AclBindingFilter{}); err != nil || len(left) != 0 {
		t.Fatalf("left %v, %v", left, err)
	}

	// ALTER on a database lets alice manage the ACLs of its tables, and of nothing else.
	if _, err := admin.CreateAcls(ctx, []fluss.AclBinding{fluss.NewAclBinding(fluss.DatabaseResource("fluss"), aliceP, fluss.OperationAlter)}); err != nil {
		t.Fatal(err)
	}
	bobReads := fluss.NewAclBinding(fluss.TableResource(path), bob, fluss.OperationRead)
	if res, err := aliceAdmin.CreateAcls(ctx, []fluss.AclBinding{bobReads}); err != nil || res[0] != nil {
		t.Fatalf("alice grants on her database's table: %v %v", res, err)
	}
	_, err = aliceAdmin.CreateAcls(ctx, []fluss.AclBinding{fluss.NewAclBinding(fluss.DatabaseResource("other"), bob, fluss.OperationRead)})
	mustCode(t, err, fluss.ErrAuthorization)
	// A binding with ANY codes is stored, as Fluss stores it.
	anyOp := fluss.NewAclBinding(fluss.TableResource(path), bob, fluss.OperationAny)
	if res, err := admin.CreateAcls(ctx, []fluss.AclBinding{anyOp}); err != nil || res[0] != nil {
		t.Fatalf("ANY binding: %v %v", res, err)
	}
	got, err := admin.ListAcls(ctx, fluss.AclBindingFilter{Principal: &bob})
	if err != nil || len(got) != 2 || !slices.Contains(got, bobReads) || !slices.Contains(got, anyOp) {
		t.Fatalf("bob's bindings %v, %v", got, err)
	}
}

// Without an authorizer the ACL calls fail with ErrSecurityDisabled, on Strom as on Fluss
// (an external FLUSS_BOOTSTRAP cluster is taken to have none unless FLUSS_ACL_BOOTSTRAP is set).
func TestAclsWithoutAuthorizer(t *testing.T) {
	if aclCluster != "" {
		t.Skip("the external cluster has an authorizer")
	}
	conn, ctx := connect(t)
	_, err := conn.Admin().ListAcls(ctx, fluss.AclBindingFilter{})
	mustCode(t, err, fluss.ErrSecurityDisabled)
	_, err = conn.Admin().CreateAcls(ctx, []fluss.AclBinding{fluss.NewAclBinding(fluss.ClusterResource(), fluss.User("x"), fluss.OperationRead)})
	mustCode(t, err, fluss.ErrSecurityDisabled)
	_, err = conn.Admin().DropAcls(ctx, []fluss.AclBindingFilter{{}})
	mustCode(t, err, fluss.ErrSecurityDisabled)
}
