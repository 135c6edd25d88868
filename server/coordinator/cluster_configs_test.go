package coordinator

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

func alterOp(key, value string, op int32) *flusspb.PbAlterConfig {
	return &flusspb.PbAlterConfig{ConfigKey: proto.String(key), ConfigValue: proto.String(value), OpType: proto.Int32(op)}
}

// Dynamic configs: only Fluss's dynamic options, values checked by type, nothing stored unless
// every change is valid, and what is stored is what a restart describes.
func TestClusterConfigsAlterValidatesAndPersists(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	open := func() *clusterConfigs {
		cc := &clusterConfigs{store: store, log: quietLog(), static: map[string]string{
			"kv.snapshot.interval": "10 min", "security.sasl.plain.credentials": "admin:secret", "bind.listeners": "FLUSS://0:9123",
			"s3.secret-key": "wJalrXUtnFEMI", "s3.access-key": "AKIDEXAMPLE", "s3.endpoint": "http://127.0.0.1:9000"}}
		if err := cc.load(ctx); err != nil {
			t.Fatal(err)
		}
		return cc
	}
	cc := open()
	wantCode(t, cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("bind.listeners", "x", alterOpSet)}), ferr.ConfigException, "a static option")
	wantCode(t, cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("kv.snapshot.interval", "often", alterOpSet)}), ferr.ConfigException, "a duration that does not parse")
	wantCode(t, cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("kv.snapshot.interval", "1 min", alterOpAppend)}), ferr.ConfigException, "APPEND to a scalar option")
	// A valid change before an invalid one is not stored either.
	wantCode(t, cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("kv.snapshot.interval", "1 min", alterOpSet),
		alterOp("log.replica.min-in-sync-replicas-number", "two", alterOpSet)}), ferr.ConfigException, "an int that does not parse")
	if len(cc.dynamic()) != 0 || store.txns != 0 {
		t.Fatalf("refused changes left %v (%d writes)", cc.dynamic(), store.txns)
	}

	if err := cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("kv.snapshot.interval", "1 min", alterOpSet),
		alterOp("remote.data.dirs", "/a", alterOpAppend), alterOp("remote.data.dirs", "/b", alterOpAppend),
		alterOp("security.sasl.plain.credentials", "bob:pw", alterOpSet)}); err != nil {
		t.Fatal(err)
	}
	if err := cc.alter(ctx, []*flusspb.PbAlterConfig{alterOp("remote.data.dirs", "/a", alterOpSubtract)}); err != nil {
		t.Fatal(err)
	}

	resp, err := open().handleDescribeClusterConfigs(ctx, request(t, &flusspb.DescribeClusterConfigsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, c := range resp.(*flusspb.DescribeClusterConfigsResponse).GetConfigs() {
		got[c.GetConfigKey()] = [2]string{c.GetConfigValue(), c.GetConfigSource()}
	}
	want := map[string][2]string{
		"bind.listeners":                  {"FLUSS://0:9123", "INITIAL_SERVER_CONFIG"},
		"kv.snapshot.interval":            {"1 min", "DYNAMIC_SERVER_CONFIG"},
		"remote.data.dirs":                {"/b", "DYNAMIC_SERVER_CONFIG"},
		"security.sasl.plain.credentials": {redacted, "DYNAMIC_SERVER_CONFIG"},
		// The object store's keys are secrets too; its endpoint is not.
		"s3.secret-key": {redacted, "INITIAL_SERVER_CONFIG"},
		"s3.access-key": {redacted, "INITIAL_SERVER_CONFIG"},
		"s3.endpoint":   {"http://127.0.0.1:9000", "INITIAL_SERVER_CONFIG"},
	}
	if len(got) != len(want) {
		t.Fatalf("described %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: described %v, want %v", k, got[k], w)
		}
	}
}
