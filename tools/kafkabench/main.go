// Command kafkabench measures Kafka produce and consume throughput with franz-go against
// Strom's Kafka listener and against a real Apache Kafka broker on the same machine, and
// Kafka produce against Fluss append (the Go client) on the same Strom (`make bench-kafka`;
// docs/benchmarks.md, "Kafka: Strom's listener against Apache Kafka").
//
// Every round measures, in an order that rotates by round: Strom with its defaults (an
// fdatasync before every acknowledgement), Strom with log.flush.interval set (acknowledged
// after write(2), as Kafka acknowledges by default), and the Apache Kafka broker at
// -kafka (started by tools/kafkabroker/run.sh, which also passes its process id so that its
// CPU time can be read). Each Strom run is a fresh `strom serve` with a KAFKA listener; the
// Kafka broker lives for the whole benchmark and gets a new topic per round. Every
// workload writes the same records: no key, a value of -value-bytes bytes, no headers,
// acks=all from an idempotent producer, no compression. Before the first round the Kafka
// broker is warmed up with -warmup-records records (its JIT compiler; not measured). The report is the medians over
// rounds and their ratios, not absolute numbers: the machine is shared.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench:", err)
		os.Exit(1)
	}
}

// workload is what every system is asked to do in one round.
type workload struct {
	records    int
	valueBytes int
	partitions int
	timeout    time.Duration
}

func run() error {
	var w workload
	flag.IntVar(&w.records, "records", 200_000, "records produced (and consumed back) per workload")
	flag.IntVar(&w.valueBytes, "value-bytes", 1024, "bytes per record value")
	flag.IntVar(&w.partitions, "partitions", 4, "partitions (buckets) per topic")
	flag.DurationVar(&w.timeout, "timeout", 5*time.Minute, "bound of one workload")
	var (
		stromBin   = flag.String("strom", "bin/strom", "strom binary")
		kafkaAddr  = flag.String("kafka", os.Getenv("KAFKA_BOOTSTRAP"), "bootstrap HOST:PORT of the Apache Kafka broker (empty: Strom only)")
		kafkaPID   = flag.Int("kafka-pid", envInt("KAFKA_BROKER_PID"), "process id of that broker, for its CPU time (0: not measured)")
		flushEvery = flag.String("like-for-like-flush", "1s", "log.flush.interval of the like-for-like Strom runs (empty: skip them)")
		rounds     = flag.Int("rounds", 3, "interleaved rounds")
		warmup     = flag.Int("warmup-records", 100_000, "records produced and consumed on the Kafka broker before the first round, not measured (its JIT compiler warms up; a Strom process has nothing to warm)")
		workDir    = flag.String("work-dir", "", "where Strom servers keep their data and logs (default: a new temp dir, removed after good runs)")
		outJSON    = flag.String("json", "", "write every sample as JSON here")
		outMD      = flag.String("md", "", "also write the Markdown report here")
	)
	flag.Parse()
	if w.records <= 0 || w.valueBytes <= 0 || w.partitions <= 0 || *rounds <= 0 {
		return errors.New("-records, -value-bytes, -partitions and -rounds must be positive")
	}
	binary, err := filepath.Abs(*stromBin)
	if err != nil {
		return err
	}
	keepWork := *workDir != ""
	if !keepWork {
		if *workDir, err = os.MkdirTemp("", "strom-kafkabench-"); err != nil {
			return err
		}
	}

	systems := []system{{name: "strom", label: "Strom (fsync before ack)", strom: &stromConfig{binary: binary}}}
	if *flushEvery != "" {
		systems = append(systems, system{name: "strom-flush", label: "Strom, log.flush.interval=" + *flushEvery,
			strom: &stromConfig{binary: binary, set: []string{"log.flush.interval=" + *flushEvery}}})
	}
	if *kafkaAddr != "" {
		systems = append(systems, system{name: "kafka", label: "Apache Kafka", kafkaAddr: *kafkaAddr, kafkaPID: *kafkaPID})
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *kafkaAddr != "" && *warmup > 0 {
		fmt.Fprintf(os.Stderr, "warming up Apache Kafka with %d records\n", *warmup)
		ww := w
		ww.records = *warmup
		if _, err := runWorkloads(ctx, ww, "kafka", *kafkaAddr, "", 0, "bench_warmup"); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var samples []sample
	failed := false
	for r := 0; r < *rounds; r++ {
		for i := range systems {
			s := systems[(i+r)%len(systems)]
			fmt.Fprintf(os.Stderr, "round %d: %s\n", r+1, s.label)
			got, err := s.measure(ctx, w, r, filepath.Join(*workDir, fmt.Sprintf("r%d-%s", r+1, s.name)))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				failed = true
				fmt.Fprintf(os.Stderr, "round %d: %s: %v\n", r+1, s.label, err)
			}
			for i := range got {
				got[i].Round = r + 1
			}
			for _, g := range got {
				fmt.Fprintf(os.Stderr, "  %-14s %10.0f records/s %8.1f MB/s  server CPU %s\n", g.Workload, g.RecordsPerSec, g.MBPerSec, cpuText(g.ServerCPUus))
			}
			samples = append(samples, got...)
		}
	}

	report := markdown(w, systems, samples)
	fmt.Print(report)
	if *outMD != "" {
		if err := os.WriteFile(*outMD, []byte(report), 0o644); err != nil {
			return err
		}
	}
	if *outJSON != "" {
		b, err := json.MarshalIndent(samples, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*outJSON, b, 0o644); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("some runs failed; Strom logs are under %s", *workDir)
	}
	if !keepWork {
		return os.RemoveAll(*workDir)
	}
	return nil
}

func envInt(name string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(os.Getenv(name)))
	return n
}

func cpuText(us float64) string {
	if us < 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.1f µs/record", us)
}
