// Command crossclient writes and reads rows with the Go client for the cross-client
// compatibility tests (tests/compat/test_cross_client.py). Each subcommand prints JSON on
// stdout.
//
//	crossclient -bootstrap H:P append   DB TABLE START COUNT   # rows (id int32, name, score double)
//	crossclient -bootstrap H:P scan     DB TABLE COUNT         # all buckets from the start
//	crossclient -bootstrap H:P upsert   DB TABLE ID...         # rows (id int32, name, age bigint)
//	crossclient -bootstrap H:P delete   DB TABLE ID...
//	crossclient -bootstrap H:P lookup   DB TABLE ID...
//	crossclient -bootstrap H:P addcolumn DB TABLE          # ALTER TABLE ADD COLUMN extra BIGINT
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/stromdb/strom/fluss"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9123", "bootstrap server")
	flag.Parse()
	args := flag.Args()
	if len(args) < 3 {
		log.Fatal("usage: crossclient [-bootstrap H:P] CMD DB TABLE ARGS...")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := run(ctx, *bootstrap, args[0], fluss.NewTablePath(args[1], args[2]), args[3:])
	if err != nil {
		log.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		log.Fatal(err)
	}
}

func ints(args []string) ([]int, error) {
	out := make([]int, len(args))
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func run(ctx context.Context, bootstrap, cmd string, path fluss.TablePath, args []string) (any, error) {
	nums, err := ints(args)
	if err != nil {
		return nil, err
	}
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	table, err := conn.Table(ctx, path)
	if err != nil {
		return nil, err
	}
	switch cmd {
	case "addcolumn": // pyfluss has no ALTER TABLE
		return "ok", conn.Admin().AlterTable(ctx, path, []fluss.TableChange{fluss.AddColumn("extra", fluss.BigInt(), "")}, false)
	case "append":
		w, err := table.NewAppend().CreateWriter()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		for i := nums[0]; i < nums[0]+nums[1]; i++ {
			if _, err := w.Append(ctx, fluss.Row{int32(i), fmt.Sprintf("go-%d", i), float64(i) + 0.5}); err != nil {
				return nil, err
			}
		}
		return "ok", w.Flush(ctx)
	case "scan":
		sc, err := table.NewScan().CreateLogScanner()
		if err != nil {
			return nil, err
		}
		defer sc.Close()
		offsets := map[int32]int64{}
		for b := range table.Info().NumBuckets() {
			offsets[b] = fluss.EarliestOffset
		}
		if err := sc.SubscribeBuckets(ctx, offsets); err != nil {
			return nil, err
		}
		var rows []map[string]any
		for len(rows) < nums[0] {
			recs, err := sc.Poll(ctx, 5*time.Second)
			if err != nil {
				return nil, err
			}
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				m := map[string]any{"change_type": r.ChangeType.ShortString(), "bucket": r.Bucket.Bucket, "offset": r.Offset}
				for i, name := range table.Info().ColumnNames() {
					m[name] = r.Row[i]
				}
				rows = append(rows, m)
			}
		}
		return rows, nil
	case "upsert", "delete":
		w, err := table.NewUpsert().CreateWriter()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		for _, id := range nums {
			r := fluss.Row{int32(id), fmt.Sprintf("go-%d", id), int64(id) * 10}
			if cmd == "delete" {
				_, err = w.Delete(ctx, r)
			} else {
				_, err = w.Upsert(ctx, r)
			}
			if err != nil {
				return nil, err
			}
		}
		return "ok", w.Flush(ctx)
	case "lookup":
		l, err := table.NewLookup().CreateLookuper()
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, id := range slices.Sorted(slices.Values(nums)) {
			r, err := l.Lookup(ctx, fluss.Row{int32(id)})
			if err != nil {
				return nil, err
			}
			if r == nil {
				out[strconv.Itoa(id)] = nil
			} else {
				out[strconv.Itoa(id)] = map[string]any{"id": r[0], "name": r[1], "age": r[2]}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}
