package fluss_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/stromdb/strom/fluss"
)

// Grant a user read access to one table, list the grants on it, and revoke them. The
// cluster must run with authorizer.enabled: true and the caller must be a super user (or
// hold ALTER on the cluster). This example is compiled but not run: the in-process server
// of the examples has no authorizer (TestAcls runs the same calls against one).
func ExampleAdmin_CreateAcls() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{
		BootstrapServers: bootstrap, SecurityProtocol: "sasl", SASLUsername: "admin", SASLPassword: "admin-secret",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()

	orders := fluss.TableResource(fluss.NewTablePath("shop", "orders"))
	results, err := admin.CreateAcls(ctx, []fluss.AclBinding{
		fluss.NewAclBinding(orders, fluss.User("alice"), fluss.OperationRead),
		fluss.NewAclBinding(orders, fluss.User("alice"), fluss.OperationDescribe),
	})
	if errors.Is(err, fluss.ErrSecurityDisabled) {
		log.Fatal("the cluster has no authorizer")
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r != nil {
			log.Fatal(r)
		}
	}

	grants, err := admin.ListAcls(ctx, fluss.AclBindingFilter{ResourceType: fluss.ResourceTable, ResourceName: orders.Name})
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range grants {
		fmt.Println(g.Entry.Principal, g.Entry.Operation)
	}

	alice := fluss.User("alice")
	if _, err := admin.DropAcls(ctx, []fluss.AclBindingFilter{{ResourceType: fluss.ResourceTable, ResourceName: orders.Name, Principal: &alice}}); err != nil {
		log.Fatal(err)
	}
}
