package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// system is one server under test: a Strom configuration (a fresh process per round) or the
// Apache Kafka broker that tools/kafkabroker/run.sh started.
type system struct {
	name, label string
	strom       *stromConfig // nil for Kafka
	kafkaAddr   string
	kafkaPID    int
}

type stromConfig struct {
	binary string
	set    []string // extra `--set key=value` of strom serve
}

// stromProc is a running `strom serve` with a KAFKA listener.
type stromProc struct {
	cmd                *exec.Cmd
	exited             chan error // receives Wait's result once; only the watcher calls Wait
	coordinator, kafka string
	logPath            string
}

// measure runs the round's workloads against s. Samples of the workloads that finished are
// returned even when a later one failed.
func (s system) measure(ctx context.Context, w workload, round int, dir string) ([]sample, error) {
	topic := fmt.Sprintf("bench_r%d_%d", round+1, time.Now().UnixNano()%1_000_000)
	if s.strom == nil {
		return runWorkloads(ctx, w, s.name, s.kafkaAddr, "", s.kafkaPID, topic)
	}
	p, err := startStrom(ctx, *s.strom, dir)
	if err != nil {
		return nil, err
	}
	got, err := runWorkloads(ctx, w, s.name, p.kafka, p.coordinator, p.cmd.Process.Pid, topic)
	if stopErr := p.stop(); stopErr != nil && err == nil {
		err = stopErr
	}
	if err == nil {
		// Good runs leave nothing behind: a round's segments are hundreds of MB.
		err = os.RemoveAll(filepath.Join(dir, "data"))
	}
	return got, err
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func startStrom(ctx context.Context, c stromConfig, dir string) (*stromProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	p := &stromProc{
		coordinator: "127.0.0.1:" + strconv.Itoa(ports[0]),
		kafka:       "127.0.0.1:" + strconv.Itoa(ports[2]),
		logPath:     filepath.Join(dir, "strom.log"),
	}
	cfg := fmt.Sprintf("bind.listeners: FLUSS://%s\ntablet-server.bind.listeners: FLUSS://127.0.0.1:%d, KAFKA://%s\nkafka.enabled: true\n",
		p.coordinator, ports[1], p.kafka)
	cfgPath := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	args := []string{"serve", "--data-dir", filepath.Join(dir, "data"), "--config", cfgPath}
	for _, kv := range c.set {
		args = append(args, "--set", kv)
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(c.binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.exited = make(chan error, 1)
	go func() { p.exited <- p.cmd.Wait() }()
	exited := p.exited
	deadline := time.Now().Add(60 * time.Second)
	for {
		text, _ := os.ReadFile(p.logPath)
		if strings.Contains(string(text), "strom is ready") {
			return p, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("strom serve exited before it was ready (%v); log: %s", err, p.logPath)
		case <-ctx.Done():
			_ = p.cmd.Process.Kill()
			<-exited
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.cmd.Process.Kill()
			<-exited
			return nil, errors.New("strom serve not ready within 60 s; log: " + p.logPath)
		}
	}
}

// stop ends the server with SIGTERM (a clean shutdown) and waits for it, at most 30 s
// before it is killed.
func (p *stromProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("strom serve did not stop within 30 s of SIGTERM; log: " + p.logPath)
	}
}
