package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/internal/options"
)

// Roles a process can run (server.roles).
const (
	RoleCoordinator  = "coordinator"
	RoleTabletServer = "tablet-server"
)

// Cluster is the multi-node part of the configuration (docs/cluster.md). Its zero value, with
// no etcd.* key set, is the single node: both roles and an etcd member of its own on private
// unix sockets.
type Cluster struct {
	// Roles is server.roles: RoleCoordinator, RoleTabletServer or both (the default).
	Roles []string
	// Endpoints is etcd.endpoints: the client URLs of an external etcd. With it set the
	// process embeds no etcd member.
	Endpoints []string
	// The embedded member (etcd.name, etcd.initial-cluster, ...), used when Endpoints is empty.
	Name                string
	InitialCluster      string
	ListenPeerURLs      []url.URL
	AdvertisePeerURLs   []url.URL
	ListenClientURLs    []url.URL
	AdvertiseClientURLs []url.URL
	InitialClusterState string // "new" (default) or "existing"
	// JoinEndpoints is etcd.join-endpoints: client URLs of running members. A member that
	// starts without etcd data (a new node, or one whose disk was replaced) registers itself
	// with them, replacing a dead registration of its own name, instead of bootstrapping.
	JoinEndpoints []string
	// PeerTLS (etcd.peer-cert-file, etcd.peer-key-file, etcd.peer-trusted-ca-file) secures the
	// embedded members' traffic with each other: TLS both ways, a member must present a
	// certificate signed by the trusted CA. ClientTLS (etcd.client-*) does the same for etcd's
	// client URLs: a member serves them with it, and a process that dials etcd
	// (etcd.endpoints, etcd.join-endpoints) presents it. Empty: plain HTTP.
	PeerTLS, ClientTLS TLSFiles
	// SecretFile is cluster.secret-file: a secret shared by every process of the cluster from
	// which each derives the cluster's CA and issues its own certificate at start
	// (internal/clustertls), used for etcd's peer and client traffic in place of PeerTLS and
	// ClientTLS when those are not set by hand, and for the internal listener's mutual TLS
	// (docs/security.md, "Cluster authentication").
	SecretFile string
	// GenerateSecret: no secret was configured and this process is the lone first member of
	// a new embedded cluster, so SecretFile is <data.dir>/cluster-secret, which the server
	// creates at its first start (secure by default) and the other members must be given.
	GenerateSecret bool
	// Insecure is cluster.allow-insecure: no secret, and the operator asked for that.
	Insecure bool

	// TabletServerLeaseTTL (tablet-server.lease-ttl) is how long a tablet server stays
	// registered after its last keepalive: the failure-detection time of a dead server.
	TabletServerLeaseTTL time.Duration
	// CoordinatorLeaseTTL (coordinator.lease-ttl) is the lease of the coordinator election:
	// how long the cluster can run without an active coordinator when the active one dies.
	CoordinatorLeaseTTL time.Duration
	// MinInSyncReplicas is log.replica.min-in-sync-replicas-number.
	MinInSyncReplicas int32
	// ReplicaMaxLagTime is log.replica.max-lag-time.
	ReplicaMaxLagTime time.Duration

	set bool // an etcd.* key was given
}

// TLSFiles are the PEM files of one TLS identity and the CA it trusts.
type TLSFiles struct {
	CertFile, KeyFile, TrustedCAFile string
}

// Enabled reports whether any of the files is set.
func (f TLSFiles) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.TrustedCAFile != "" }

// validate checks that a TLS identity is complete and its files readable.
func (f TLSFiles) validate(prefix string) error {
	if !f.Enabled() {
		return nil
	}
	for _, kv := range [][2]string{{prefix + "cert-file", f.CertFile}, {prefix + "key-file", f.KeyFile}, {prefix + "trusted-ca-file", f.TrustedCAFile}} {
		if kv[1] == "" {
			return fmt.Errorf("%s is required with the other %s* options (TLS needs a certificate, its key and the CA to trust)", kv[0], prefix)
		}
		if _, err := os.Stat(kv[1]); err != nil {
			return fmt.Errorf("%s: %w", kv[0], err)
		}
	}
	return nil
}

// Default cluster timings (docs/cluster.md, "Timings"), the registry's defaults.
var (
	DefaultTabletServerLeaseTTL = options.TabletServerLeaseTTL.DefaultValue()
	DefaultCoordinatorLeaseTTL  = options.CoordinatorLeaseTTL.DefaultValue()
	DefaultReplicaMaxLagTime    = options.ReplicaMaxLagTime.DefaultValue() // Fluss's default
)

func defaultCluster() Cluster {
	return Cluster{
		TabletServerLeaseTTL: DefaultTabletServerLeaseTTL,
		CoordinatorLeaseTTL:  DefaultCoordinatorLeaseTTL,
		MinInSyncReplicas:    options.MinInSyncReplicas.DefaultValue(),
		ReplicaMaxLagTime:    DefaultReplicaMaxLagTime,
		InitialClusterState:  "new",
	}
}

// Clustered reports whether any etcd.* key was set: the process is a member of a cluster
// whose metadata lives in a shared etcd, not the single node.
func (c *Config) Clustered() bool { return c.Cluster.set }

// HasRole reports whether the process runs role (RoleCoordinator or RoleTabletServer).
func (c *Config) HasRole(role string) bool {
	if len(c.Cluster.Roles) == 0 {
		return true
	}
	for _, r := range c.Cluster.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// EmbeddedEtcd reports whether the process runs an etcd member (no etcd.endpoints).
func (c *Config) EmbeddedEtcd() bool { return len(c.Cluster.Endpoints) == 0 }

// setCluster applies one cluster option; known is false for keys it does not own.
func (c *Config) setCluster(key, value string) (known bool, err error) {
	cl := &c.Cluster
	if strings.HasPrefix(key, "etcd.") {
		cl.set = true
	}
	switch key {
	case "server.roles":
		cl.Roles = nil
		for _, r := range strings.Split(value, ",") {
			r = strings.ToLower(strings.TrimSpace(r))
			if r == "" {
				continue
			}
			if r != RoleCoordinator && r != RoleTabletServer {
				return true, fmt.Errorf("unknown role %q (want %s, %s or both comma-separated)", r, RoleCoordinator, RoleTabletServer)
			}
			cl.Roles = append(cl.Roles, r)
		}
		if len(cl.Roles) == 0 {
			return true, fmt.Errorf("no role given (want %s, %s or both comma-separated)", RoleCoordinator, RoleTabletServer)
		}
	case "etcd.endpoints":
		cl.Endpoints, err = parseEndpoints(value)
	case "etcd.join-endpoints":
		cl.JoinEndpoints, err = parseEndpoints(value)
	case "etcd.peer-cert-file":
		cl.PeerTLS.CertFile = value
	case "etcd.peer-key-file":
		cl.PeerTLS.KeyFile = value
	case "etcd.peer-trusted-ca-file":
		cl.PeerTLS.TrustedCAFile = value
	case "etcd.client-cert-file":
		cl.ClientTLS.CertFile = value
	case "etcd.client-key-file":
		cl.ClientTLS.KeyFile = value
	case "etcd.client-trusted-ca-file":
		cl.ClientTLS.TrustedCAFile = value
	case "cluster.secret-file":
		cl.SecretFile = value
	case "etcd.name":
		cl.Name = value
	case "etcd.initial-cluster":
		cl.InitialCluster = value
		_, err = ParseInitialCluster(value)
	case "etcd.listen-peer-urls":
		cl.ListenPeerURLs, err = parseURLs(value)
	case "etcd.advertise-peer-urls":
		cl.AdvertisePeerURLs, err = parseURLs(value)
	case "etcd.listen-client-urls":
		cl.ListenClientURLs, err = parseURLs(value)
	case "etcd.advertise-client-urls":
		cl.AdvertiseClientURLs, err = parseURLs(value)
	case "etcd.initial-cluster-state":
		if value != "new" && value != "existing" {
			return true, fmt.Errorf("want new or existing, got %q", value)
		}
		cl.InitialClusterState = value
	case "tablet-server.lease-ttl":
		cl.TabletServerLeaseTTL, err = options.TabletServerLeaseTTL.Parse(value)
	case "coordinator.lease-ttl":
		cl.CoordinatorLeaseTTL, err = options.CoordinatorLeaseTTL.Parse(value)
	case "log.replica.min-in-sync-replicas-number":
		cl.MinInSyncReplicas, err = options.MinInSyncReplicas.Parse(value)
	case "log.replica.max-lag-time":
		cl.ReplicaMaxLagTime, err = options.ReplicaMaxLagTime.Parse(value)
	default:
		if strings.HasPrefix(key, "etcd.") {
			return true, fmt.Errorf("unknown etcd option (known: etcd.endpoints, etcd.join-endpoints, etcd.name, etcd.initial-cluster, etcd.listen-peer-urls, etcd.advertise-peer-urls, etcd.listen-client-urls, etcd.advertise-client-urls, etcd.initial-cluster-state, etcd.peer-cert-file, etcd.peer-key-file, etcd.peer-trusted-ca-file, etcd.client-cert-file, etcd.client-key-file, etcd.client-trusted-ca-file)")
		}
		return false, nil
	}
	return true, err
}

// parseEndpoints parses a comma-separated list of etcd client URLs.
func parseEndpoints(value string) ([]string, error) {
	var eps []string
	for _, e := range strings.Split(value, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if _, err := parseURL(e); err != nil {
			return nil, err
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("empty endpoint list")
	}
	return eps, nil
}

func parseURL(s string) (url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return url.URL{}, fmt.Errorf("bad URL %q (want http://HOST:PORT): %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return url.URL{}, fmt.Errorf("bad URL %q: want http://HOST:PORT", s)
	}
	if u.Port() == "" {
		return url.URL{}, fmt.Errorf("bad URL %q: no port", s)
	}
	return *u, nil
}

func parseURLs(s string) ([]url.URL, error) {
	var out []url.URL
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		u, err := parseURL(part)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty URL list")
	}
	return out, nil
}

// ParseInitialCluster parses etcd's `name=http://host:port,...` member list into name → peer
// URLs.
func ParseInitialCluster(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, u, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("member %q: want NAME=http://HOST:PORT", part)
		}
		if _, err := parseURL(u); err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		out[strings.TrimSpace(name)] = append(out[strings.TrimSpace(name)], strings.TrimSpace(u))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no member given")
	}
	return out, nil
}

// finishCluster validates the cluster options together.
func (c *Config) finishCluster() error {
	cl := &c.Cluster
	if !c.Clustered() {
		if !c.HasRole(RoleCoordinator) || !c.HasRole(RoleTabletServer) {
			return fmt.Errorf("server.roles %s needs a shared metadata store: set etcd.endpoints or the etcd.* keys of an embedded member (docs/cluster.md)", strings.Join(cl.Roles, ","))
		}
		return nil
	}
	if c.HasRole(RoleTabletServer) {
		if _, ok := c.Raw["tablet-server.id"]; !ok {
			return fmt.Errorf("tablet-server.id is required on a tablet server of a cluster (each server needs its own id)")
		}
		if c.TabletServerID < 0 {
			return fmt.Errorf("tablet-server.id must not be negative")
		}
	}
	if err := c.requireSecret(); err != nil {
		return err
	}
	if cl.SecretFile != "" && !cl.GenerateSecret {
		if _, err := clustertls.ReadSecret(cl.SecretFile); err != nil {
			return err
		}
	}
	if err := cl.PeerTLS.validate("etcd.peer-"); err != nil {
		return err
	}
	if err := cl.ClientTLS.validate("etcd.client-"); err != nil {
		return err
	}
	peerTLS, clientTLS := cl.PeerTLS.Enabled() || cl.SecretFile != "", cl.ClientTLS.Enabled() || cl.SecretFile != ""
	if err := checkSchemes("etcd.endpoints", cl.Endpoints, clientTLS, "etcd.client-"); err != nil {
		return err
	}
	if err := checkSchemes("etcd.join-endpoints", cl.JoinEndpoints, clientTLS, "etcd.client-"); err != nil {
		return err
	}
	if len(cl.Endpoints) > 0 {
		for _, k := range []string{"etcd.join-endpoints", "etcd.name", "etcd.initial-cluster", "etcd.listen-peer-urls", "etcd.advertise-peer-urls", "etcd.listen-client-urls", "etcd.advertise-client-urls", "etcd.initial-cluster-state", "etcd.peer-cert-file", "etcd.peer-key-file", "etcd.peer-trusted-ca-file"} {
			if _, ok := c.Raw[k]; ok {
				return fmt.Errorf("%s is for an embedded etcd member, but etcd.endpoints names an external etcd: set one or the other", k)
			}
		}
		return nil
	}
	if cl.Name == "" {
		return fmt.Errorf("etcd.name is required for an embedded etcd member (or set etcd.endpoints for an external etcd)")
	}
	if len(cl.ListenPeerURLs) == 0 {
		return fmt.Errorf("etcd.listen-peer-urls is required for an embedded etcd member")
	}
	if len(cl.ListenClientURLs) == 0 {
		return fmt.Errorf("etcd.listen-client-urls is required for an embedded etcd member")
	}
	if len(cl.AdvertisePeerURLs) == 0 {
		cl.AdvertisePeerURLs = cl.ListenPeerURLs
	}
	if len(cl.AdvertiseClientURLs) == 0 {
		cl.AdvertiseClientURLs = cl.ListenClientURLs
	}
	for _, u := range append(append([]url.URL(nil), cl.AdvertisePeerURLs...), cl.AdvertiseClientURLs...) {
		if h := u.Hostname(); h == "0.0.0.0" || h == "::" {
			return fmt.Errorf("advertised etcd URL %s names a wildcard address: set etcd.advertise-peer-urls / etcd.advertise-client-urls to an address other members can reach", u.String())
		}
	}
	if cl.InitialCluster == "" {
		var urls []string
		for _, u := range cl.AdvertisePeerURLs {
			urls = append(urls, cl.Name+"="+u.String())
		}
		cl.InitialCluster = strings.Join(urls, ",")
	}
	members, err := ParseInitialCluster(cl.InitialCluster)
	if err != nil {
		return fmt.Errorf("etcd.initial-cluster: %w", err)
	}
	if _, ok := members[cl.Name]; !ok {
		return fmt.Errorf("etcd.initial-cluster does not list this member's etcd.name %q", cl.Name)
	}
	if cl.GenerateSecret {
		// A first member's etcd URLs written http:// get a message that says why https.
		if err := checkSchemes("etcd.listen-peer-urls", urlStrings(cl.ListenPeerURLs), true, "etcd.peer-"); err != nil {
			return fmt.Errorf("%w (a cluster is authenticated by default: without cluster.secret-file its first member generates one; cluster.allow-insecure: true runs it in the clear, for tests and development)", err)
		}
	}
	var peers []string
	for _, us := range members {
		peers = append(peers, us...)
	}
	for _, check := range []struct {
		key  string
		urls []string
		tls  bool
		pre  string
	}{
		{"etcd.initial-cluster", peers, peerTLS, "etcd.peer-"},
		{"etcd.listen-peer-urls", urlStrings(cl.ListenPeerURLs), peerTLS, "etcd.peer-"},
		{"etcd.advertise-peer-urls", urlStrings(cl.AdvertisePeerURLs), peerTLS, "etcd.peer-"},
		{"etcd.listen-client-urls", urlStrings(cl.ListenClientURLs), clientTLS, "etcd.client-"},
		{"etcd.advertise-client-urls", urlStrings(cl.AdvertiseClientURLs), clientTLS, "etcd.client-"},
	} {
		if err := checkSchemes(check.key, check.urls, check.tls, check.pre); err != nil {
			return err
		}
	}
	return nil
}

// checkSchemes requires https URLs when TLS is configured and http URLs when it is not, so a
// member never serves or dials in the clear by a typo.
func checkSchemes(key string, urls []string, tls bool, prefix string) error {
	want := "http"
	if tls {
		want = "https"
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, want+"://") {
			if tls {
				return fmt.Errorf("%s: %s must be https:// because %s* options or cluster.secret-file set up TLS", key, u, prefix)
			}
			return fmt.Errorf("%s: %s is https:// but no %scert-file, %skey-file and %strusted-ca-file are set", key, u, prefix, prefix, prefix)
		}
	}
	return nil
}

func urlStrings(us []url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

// requireSecret makes a cluster secure by default (docs/security.md, "Cluster
// authentication"): with cluster.secret-file it is used; without it a lone first member of a
// new embedded etcd cluster generates one in its data directory (GenerateSecret), every
// other process (a member of a multi-member initial cluster, a joiner, a tablet server of an
// existing cluster) is refused with a message naming the option, and cluster.allow-insecure
// is the explicit opt-out.
func (c *Config) requireSecret() error {
	cl := &c.Cluster
	insecure, err := options.ClusterAllowInsecure.Get(c.Raw)
	if err != nil {
		return err
	}
	if cl.SecretFile != "" {
		if insecure {
			return fmt.Errorf("cluster.allow-insecure and cluster.secret-file contradict each other: set one or the other")
		}
		return nil
	}
	if insecure {
		cl.Insecure = true
		return nil
	}
	if cl.PeerTLS.Enabled() && cl.ClientTLS.Enabled() {
		// etcd is secured with the operator's own certificates; the internal listener still
		// needs the secret.
		return fmt.Errorf("cluster.secret-file is required: the etcd.peer-*/etcd.client-* files secure etcd, and the secret authenticates the servers' internal listener (docs/security.md, \"Cluster authentication\"); cluster.allow-insecure: true runs the internal listener in the clear")
	}
	if c.loneFirstMember() {
		cl.SecretFile = filepath.Join(c.DataDir, SecretFileName)
		cl.GenerateSecret = true
		return nil
	}
	return fmt.Errorf("cluster.secret-file is required: a cluster authenticates its servers to each other by default. Give every process the file of the cluster's secret (the one its first member generated at <data.dir>/%s, or one made with `head -c 32 /dev/urandom | base64 > FILE`), or set cluster.allow-insecure: true to run without authentication (tests and development only; docs/security.md, \"Cluster authentication\")", SecretFileName)
}

// SecretFileName is the secret a lone first member generates in its data directory.
const SecretFileName = "cluster-secret"

// loneFirstMember reports whether this process bootstraps a new embedded etcd cluster of
// itself alone: no external etcd, no join, the initial cluster (given or defaulted) naming
// only this member.
func (c *Config) loneFirstMember() bool {
	cl := &c.Cluster
	if len(cl.Endpoints) > 0 || len(cl.JoinEndpoints) > 0 || cl.InitialClusterState == "existing" {
		return false
	}
	if cl.InitialCluster == "" {
		return true
	}
	members, err := ParseInitialCluster(cl.InitialCluster)
	if err != nil {
		return false // reported by finishCluster
	}
	_, self := members[cl.Name]
	return len(members) == 1 && self
}
