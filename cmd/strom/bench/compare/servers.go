package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// System is one server configuration under test.
type System struct {
	Name  string // key in results ("fluss", "strom", "strom-1s")
	Label string // column header
	// Start launches a fresh server with all its state under dir, registering every process
	// it starts in g (also on error), and returns the coordinator's address.
	Start func(ctx context.Context, dir string, g *group) (bootstrap string, err error)
}

// FlussJVM describes how to run Apache Fluss from released jars.
type FlussJVM struct {
	Java     string   // java binary
	JarDir   string   // fluss-server-*.jar and the logging backend jars
	JVMFlags []string // extra JVM flags (heap settings, ...)
}

// flussMain* are the entry points the Fluss distribution's scripts start.
const (
	flussZooKeeperMain   = "org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
	flussCoordinatorMain = "org.apache.fluss.server.coordinator.CoordinatorServer"
	flussTabletMain      = "org.apache.fluss.server.tablet.TabletServer"
)

// log4jConfig sends each JVM's log to the file named by -Dlog.file at INFO, as the Fluss
// distribution's conf/log4j.properties does (without rolling).
const log4jConfig = `rootLogger.level=INFO
rootLogger.appenderRef.file.ref=Main
appender.main.name=Main
appender.main.type=File
appender.main.fileName=${sys:log.file}
appender.main.layout.type=PatternLayout
appender.main.layout.pattern=%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
`

// FlussSystem starts a single-node Fluss: ZooKeeper, a coordinator and one tablet server,
// all at once (as `local-cluster.sh` does), each its own JVM on a free loopback port, with
// the distribution's defaults otherwise.
func FlussSystem(name, label string, jvm FlussJVM) System {
	return System{Name: name, Label: label, Start: func(ctx context.Context, dir string, g *group) (string, error) {
		jars, err := filepath.Glob(filepath.Join(jvm.JarDir, "*.jar"))
		if err != nil || len(jars) == 0 {
			return "", fmt.Errorf("no jars in %s (run `make bench-fluss`, which fetches them)", jvm.JarDir)
		}
		ports, err := freePorts(3)
		if err != nil {
			return "", err
		}
		zkPort, coordPort, tabletPort := ports[0], ports[1], ports[2]
		files := map[string]string{
			"log4j2.properties": log4jConfig,
			"zoo.cfg": fmt.Sprintf("dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n",
				filepath.Join(dir, "zookeeper"), zkPort),
		}
		serverYAML := func(port int) string {
			return fmt.Sprintf("zookeeper.address: 127.0.0.1:%d\ndefault.bucket.number: 1\ndefault.replication.factor: 1\n"+
				"data.dir: %s\nremote.data.dir: %s\nbind.listeners: FLUSS://127.0.0.1:%d\ntablet-server.id: 0\n",
				zkPort, filepath.Join(dir, "data"), filepath.Join(dir, "remote"), port)
		}
		files["coordinator/server.yaml"] = serverYAML(coordPort)
		files["tablet/server.yaml"] = serverYAML(tabletPort)
		for name, body := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return "", err
			}
		}
		java := func(logName, main string, args ...string) []string {
			argv := []string{jvm.Java, "--add-opens=java.base/java.nio=ALL-UNNAMED"}
			argv = append(argv, jvm.JVMFlags...)
			argv = append(argv,
				"-Dlog4j.configurationFile=file:"+filepath.Join(dir, "log4j2.properties"),
				"-Dlog.file="+filepath.Join(dir, logName+".log"),
				"-cp", strings.Join(jars, string(os.PathListSeparator)), main)
			return append(argv, args...)
		}
		for _, s := range []struct {
			name string
			argv []string
		}{
			{"zookeeper", java("zookeeper", flussZooKeeperMain, filepath.Join(dir, "zoo.cfg"))},
			{"coordinator", java("coordinator", flussCoordinatorMain, "--configDir", filepath.Join(dir, "coordinator"))},
			{"tablet", java("tablet", flussTabletMain, "--configDir", filepath.Join(dir, "tablet"))},
		} {
			p, err := startProcess(name+" "+s.name, filepath.Join(dir, s.name+".out"), dir, s.argv)
			if err != nil {
				return "", err
			}
			g.add(p)
		}
		return fmt.Sprintf("127.0.0.1:%d", coordPort), nil
	}}
}

// StromSystem starts `strom serve` from binary with its data under dir and extra flags
// (e.g. --set log.flush.interval=1s).
func StromSystem(name, label, binary string, extra ...string) System {
	return System{Name: name, Label: label, Start: func(ctx context.Context, dir string, g *group) (string, error) {
		ports, err := freePorts(2)
		if err != nil {
			return "", err
		}
		coord := fmt.Sprintf("127.0.0.1:%d", ports[0])
		argv := append([]string{binary, "serve", "--data-dir", filepath.Join(dir, "data"),
			"--coordinator-listen", coord, "--tablet-listen", fmt.Sprintf("127.0.0.1:%d", ports[1])}, extra...)
		p, err := startProcess(name, filepath.Join(dir, "strom.log"), dir, argv)
		if err != nil {
			return "", err
		}
		g.add(p)
		return coord, nil
	}}
}

// waitReady polls the coordinator until it answers GET_METADATA listing at least one tablet
// server — the point from which a client can create a table and write — and returns the
// time since start. It fails as soon as a process of g exits.
func waitReady(ctx context.Context, bootstrap string, g *group, start time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := start.Add(timeout)
	var last error
	for {
		if err := g.failed(); err != nil {
			return 0, err
		}
		ok, err := probeCoordinator(ctx, bootstrap)
		if ok {
			return time.Since(start), nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("coordinator %s not ready after %s (last: %v)", bootstrap, timeout, last)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

func probeCoordinator(ctx context.Context, addr string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, addr, wire.ClientConfig{SoftwareName: "strom-bench-compare"})
	if err != nil {
		return false, err
	}
	defer c.Close()
	var resp flusspb.MetadataResponse
	if err := c.Call(ctx, wire.GetMetadata, &flusspb.MetadataRequest{}, &resp); err != nil {
		return false, err
	}
	if len(resp.TabletServers) == 0 {
		return false, fmt.Errorf("no tablet server registered yet")
	}
	return true, nil
}
