"""Start and stop a real `strom serve` process for the compatibility tests."""

import base64
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READY = re.compile(r"strom is ready.*coordinator=(\S+) tablet_server=(\S+)")


def build_binary() -> str:
    """Build ./cmd/strom once per session (or use $STROM_BIN) and return its path. The data lake
    tiering program, ./cmd/strom-lake, is built next to it, where `strom serve` looks for it."""
    env_bin = os.environ.get("STROM_BIN")
    if env_bin:
        return env_bin
    out = Path(tempfile.gettempdir()) / f"strom-compat-{os.getpid()}"
    out.mkdir(exist_ok=True)
    subprocess.run(["go", "build", "-o", str(out) + "/", "./cmd/strom", "./cmd/strom-lake"], cwd=REPO, check=True)
    return str(out / "strom")


class StromServer:
    """One `strom serve` process on free loopback ports with its own data directory.

    The data directory outlives stop()/kill() so tests can restart on the same data.
    """

    def __init__(self, binary: str, data_dir: str, extra_args=None):
        self.binary = binary
        self.data_dir = data_dir
        self.extra_args = list(extra_args or [])
        self.proc = None
        self.log_path = Path(data_dir + ".log")
        self.coordinator = None
        self.tablet_server = None
        # When False, listeners come from the config file instead of free ports.
        self.listen_flags = True

    @property
    def bootstrap(self) -> str:
        return self.coordinator

    def start(self, timeout=30.0):
        self.spawn()
        return self.wait_ready(timeout)

    def spawn(self):
        """Start the process without waiting for it (members of one etcd cluster wait for
        each other's quorum, so a cluster's nodes are spawned first, then waited for)."""
        args = [self.binary, "serve", "--data-dir", self.data_dir, *self.extra_args]
        if self.listen_flags:
            args += ["--coordinator-listen", "127.0.0.1:0", "--tablet-listen", "127.0.0.1:0"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"strom serve exited with {self.proc.returncode}:\n{self.log_path.read_text()}")
            text = self.log_path.read_text(errors="replace")
            matches = READY.findall(text)
            if matches and len(matches) > self._ready_seen:
                self.coordinator, self.tablet_server = matches[-1]
                self._ready_seen = len(matches)
                return self
            time.sleep(0.05)
        raise TimeoutError(f"strom serve not ready after {timeout}s:\n{self.log_path.read_text()}")

    _ready_seen = 0

    def stop(self, timeout=30.0):
        """Graceful shutdown with SIGTERM."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        self.proc = None

    def kill(self):
        """Hard kill with SIGKILL, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(binary: str, root: Path, nodes=3, options=None, kafka=False):
    """Start `nodes` strom processes that form one cluster (docs/cluster.md): each a
    coordinator, a tablet server and an embedded etcd member on free loopback ports. Returns
    the servers, node i+1 at index i (its tablet-server.id). With kafka, each tablet server
    also has a Kafka listener (docs/kafka.md), at the server's `kafka` attribute. The nodes
    share a generated cluster.secret-file, as a cluster needs by default (docs/security.md,
    "Cluster authentication"): etcd and the internal listener over mutual TLS."""
    ports = [free_port() for _ in range(4 * nodes)]
    kafka_ports = [free_port() for _ in range(nodes)] if kafka else []
    initial = ",".join(f"n{i + 1}=https://127.0.0.1:{ports[4 * i + 2]}" for i in range(nodes))
    root.mkdir(parents=True, exist_ok=True)
    secret = root / "cluster-secret"
    secret.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    secret.chmod(0o600)
    servers = []
    for i in range(nodes):
        coord, tablet, peer, client = ports[4 * i:4 * i + 4]
        sets = {
            "tablet-server.id": str(i + 1),
            "etcd.name": f"n{i + 1}",
            "etcd.initial-cluster": initial,
            "etcd.listen-peer-urls": f"https://127.0.0.1:{peer}",
            "etcd.advertise-peer-urls": f"https://127.0.0.1:{peer}",
            "etcd.listen-client-urls": f"https://127.0.0.1:{client}",
            "etcd.advertise-client-urls": f"https://127.0.0.1:{client}",
            "cluster.secret-file": str(secret),
            # KV snapshots: one directory the nodes share (docs/kv-snapshots.md).
            "remote.data.dir": str(root / "remote"),
            **(options or {}),
        }
        args = ["--coordinator-listen", f"127.0.0.1:{coord}", "--tablet-listen", f"127.0.0.1:{tablet}"]
        if kafka:
            # --tablet-listen would replace the listeners, so they are set as options.
            args = args[:2]
            sets["tablet-server.bind.listeners"] = f"FLUSS://127.0.0.1:{tablet}, KAFKA://127.0.0.1:{kafka_ports[i]}"
            sets["kafka.enabled"] = "true"
        for k, v in sets.items():
            args += ["--set", f"{k}={v}"]
        srv = StromServer(binary, str(root / f"node{i + 1}"), args)
        srv.listen_flags = False
        if kafka:
            srv.kafka = f"127.0.0.1:{kafka_ports[i]}"
        servers.append(srv)
    for srv in servers:
        srv.spawn()
    for srv in servers:
        srv.wait_ready(60)
    return servers
