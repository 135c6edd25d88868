package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/fluss"
)

// tailPoll is how long one poll waits for records; between empty polls the stream sends a
// keep-alive (an SSE comment, or nothing for JSON lines), so a gone client is noticed.
const tailPoll = time.Second

// tail streams the table's log (a primary-key table's changelog) from ?from=earliest|latest
// (default latest) or an offset, every bucket (of one ?partition= of a partitioned table):
// server-sent events by default, JSON lines with ?format=ndjson. It ends when the client
// goes, the gateway closes, or after ?max_records= records.
func (g *Gateway) tail(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	start := fluss.LatestOffset
	switch f := q.Get("from"); f {
	case "", "latest":
	case "earliest":
		start = fluss.EarliestOffset
	default:
		off, err := strconv.ParseInt(f, 10, 64)
		if err != nil || off < 0 {
			return badRequest(fluss.ErrLogOffsetOutOfRange, "from="+strconv.Quote(f)+": want earliest, latest or an offset")
		}
		start = off
	}
	format := q.Get("format")
	if format != "" && format != "sse" && format != "ndjson" {
		return badRequest(fluss.ErrInvalidConfig, "format="+strconv.Quote(format)+": want sse or ndjson")
	}
	maxRecords, err := intParam(r, "max_records", math.MaxInt64, 1, math.MaxInt64)
	if err != nil {
		return err
	}
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	pid, err := partitionID(ctx, c, t, q.Get("partition"))
	if err != nil {
		return err
	}
	sc, err := t.NewScan().CreateLogScanner()
	if err != nil {
		return err
	}
	defer sc.Close()
	info := t.Info()
	for b := range info.NumBuckets() {
		if pid == fluss.NoPartition {
			err = sc.Subscribe(ctx, b, start)
		} else {
			err = sc.SubscribePartition(ctx, pid, b, start)
		}
		if err != nil {
			return err
		}
	}
	flusher, _ := w.(http.Flusher)
	if format == "ndjson" {
		w.Header().Set("Content-Type", "application/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if format != "ndjson" {
		fmt.Fprint(w, ": tailing\n\n") // lets EventSource fire "open" before the first record
	}
	if flusher != nil {
		flusher.Flush()
	}
	// From here on errors cannot change the status: they end the stream with an error event.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	cols := info.Schema().Columns
	var sent int64
	for sent < maxRecords {
		recs, err := sc.Poll(ctx, tailPoll)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			b, _ := json.Marshal(errorBody{ErrorCode: int32(fluss.CodeOf(err)), ErrorName: fluss.CodeOf(err).Name(), Message: err.Error()})
			if format == "ndjson" {
				fmt.Fprintf(w, "{\"error\":%s}\n", b)
			} else {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			}
			return nil
		}
		for _, rec := range recs {
			if sent >= maxRecords {
				break
			}
			b, err := json.Marshal(map[string]any{
				"bucket": rec.Bucket.Bucket, "offset": rec.Offset, "timestamp": rec.Timestamp,
				"change_type": rec.ChangeType.ShortString(), "row": cli.RowToJSON(cols, rec.Row),
			})
			if err != nil {
				return nil
			}
			if format == "ndjson" {
				fmt.Fprintf(w, "%s\n", b)
			} else {
				fmt.Fprintf(w, "id: %d-%d\nevent: record\ndata: %s\n\n", rec.Bucket.Bucket, rec.Offset, b)
			}
			sent++
		}
		if len(recs) == 0 && format != "ndjson" {
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	return nil
}
