package kvstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/logstore"
)

// fillUsers writes n upserts over 7 keys (id i%7 gets age i), then deletes key 3. It
// returns the log end offset after each write.
func fillUsers(h *harness, n int64) []int64 {
	var ends []int64
	for i := int64(0); i < n; i++ {
		ends = append(ends, h.put(nil, up(i%7, "n", i)))
	}
	return append(ends, h.put(nil, del(3)))
}

// wantUsers checks that the state holds the first n upserts of fillUsers, and the delete of
// key 3 when deleted.
func wantUsers(t *testing.T, h *harness, n int64, deleted bool) {
	t.Helper()
	for i := int64(0); i < 7; i++ {
		want := ""
		if !(i == 3 && deleted) && i < n {
			last := i + 7*((n-1-i)/7)
			want = render(h.tab.tbl.types, []row.Datum{{I: i}, {B: []byte("n")}, {I: last}})
		}
		if got := h.get(i); got != want {
			t.Fatalf("%d = %q, want %q", i, got, want)
		}
	}
}

func wantKvOffline(t *testing.T, h *harness, why string) {
	t.Helper()
	k, _ := row.EncodeKey(nil, h.tab.tbl.keyTypes, []row.Datum{{I: 1}})
	_, err := h.tab.Lookup([][]byte{k}, nil)
	if ferr.CodeOf(err) != ferr.KvStorageException || !strings.Contains(ferr.MessageOf(err), why) {
		t.Fatalf("lookup on an offline state: %v, want KV_STORAGE_EXCEPTION mentioning %q", err, why)
	}
	if _, err := h.tab.PrefixLookup([][]byte{k}); ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("prefix lookup: %v", err)
	}
	if _, err := h.tab.LimitScan(nil, 10); ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("limit scan: %v", err)
	}
	if _, err := h.tryPut(nil, up(1, "x", 1)); ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("put: %v", err)
	}
}

// TestStateAheadOfChangelogIsNotRebuilt reproduces finding 5c of issue 11: when the
// changelog lost batches that Pebble already reflects, recovery used to wipe the state and
// rebuild it from the shorter log. Now the state stays as it is and the bucket is offline.
func TestStateAheadOfChangelogIsNotRebuilt(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	ends := fillUsers(h, 40)
	if err := h.store.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := h.log.Replica().Truncate(ends[19]); err != nil { // the log loses its tail behind Pebble's back
		t.Fatal(err)
	}
	h.reopen()
	wantKvOffline(t, h, fmt.Sprintf("changelog ends at %d", ends[19]))
	// The rows are still in Pebble: nothing was dropped.
	applied, err := h.tab.readApplied()
	if want := ends[len(ends)-1]; err != nil || applied != want {
		t.Fatalf("applied offset %d (%v), want %d: the state was rewritten", applied, err, want)
	}
}

// TestCorruptChangelogTakesStateOfflineUntilRepaired: a corrupt batch in the middle of the
// changelog takes the log offline, and with it the state; after the operator accepts the cut
// the state is rebuilt from what remains, so lookups and the changelog agree again.
func TestCorruptChangelogTakesStateOfflineUntilRepaired(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	ends := fillUsers(h, 40)
	logDir := filepath.Join(h.dir, "log")
	h.close()
	seg := filepath.Join(logDir, "00000000000000000000.log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Find batch 20 and flip a byte in its body; drop the clean-shutdown marker so that
	// recovery reads the segment in full, as after a kill -9.
	pos := 0
	for i := 0; i < 20; i++ {
		pos += int(int32(uint32(data[pos+8])|uint32(data[pos+9])<<8|uint32(data[pos+10])<<16|uint32(data[pos+11])<<24)) + 12
	}
	data[pos+60] ^= 0x10
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(logDir, "clean_shutdown")); err != nil {
		t.Fatal(err)
	}
	h.open()
	if h.log.Offline() == nil {
		t.Fatal("changelog with a corrupt middle batch is not offline")
	}
	wantKvOffline(t, h, "changelog is offline")
	h.close()

	if _, err := logstore.AcceptTruncation(logDir); err != nil {
		t.Fatal(err)
	}
	h.open()
	if h.log.LogEndOffset() != ends[19] || h.tab.AppliedOffset() != ends[19] {
		t.Fatalf("after repair: log end %d applied %d, want %d", h.log.LogEndOffset(), h.tab.AppliedOffset(), ends[19])
	}
	wantUsers(t, h, 20, false)
	if _, ok := h.log.OperatorTruncation(); ok {
		t.Fatal("operator truncation marker not cleared after the rebuild")
	}
	h.seq = 20
	h.put(nil, up(3, "back", 1))
	if h.get(3) == "" {
		t.Fatal("write after repair lost")
	}
}

// TestPebbleCorruptionIsRebuiltFromChangelog: a flipped byte in a Pebble table makes reads
// of the bucket fail with KV_STORAGE_EXCEPTION; the state is then rebuilt from the intact
// changelog and reads succeed again with the right values.
func TestPebbleCorruptionIsRebuiltFromChangelog(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	fillUsers(h, 200)
	h.close() // flushes the state into table files
	tables, _ := filepath.Glob(filepath.Join(h.dir, "kv", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table files")
	}
	for _, f := range tables {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/4] ^= 0x01 // inside the data blocks
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.open()
	deadline := time.Now().Add(10 * time.Second)
	for {
		k, _ := row.EncodeKey(nil, h.tab.tbl.keyTypes, []row.Datum{{I: 1}})
		_, err := h.tab.Lookup([][]byte{k}, nil)
		if err == nil {
			break
		}
		if ferr.CodeOf(err) != ferr.KvStorageException {
			t.Fatalf("lookup on a corrupt table: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("state not rebuilt: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantUsers(t, h, 200, true)
}

// TestPebbleCorruptionFoundByALookup: the damaged block holds only data keys, so the tablet
// opens normally and a lookup finds the damage; the state is rebuilt in the background and
// the lookup succeeds after a retry, as a Fluss client retries KV_STORAGE_EXCEPTION.
func TestPebbleCorruptionFoundByALookup(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	const n = 3000 // distinct keys, so the table has many data blocks before the meta key
	var recs []rec
	for i := int64(0); i < n; i++ {
		recs = append(recs, up(i, "some name to fill blocks", i))
	}
	h.put(nil, recs...)
	h.close()
	tables, _ := filepath.Glob(filepath.Join(h.dir, "kv", "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("%d table files", len(tables))
	}
	data, _ := os.ReadFile(tables[0])
	data[200] ^= 0x01 // in the first data block: the smallest keys
	if err := os.WriteFile(tables[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	h.open()
	k, _ := row.EncodeKey(nil, h.tab.tbl.keyTypes, []row.Datum{{I: 0}})
	_, err := h.tab.Lookup([][]byte{k}, nil)
	if ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("lookup in a corrupt block: %v, want KV_STORAGE_EXCEPTION", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err = h.tab.Lookup([][]byte{k}, nil); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("state not rebuilt: %v", err)
	}
	for _, i := range []int64{0, 1, n / 2, n - 1} {
		if got := h.get(i); !strings.Contains(got, fmt.Sprintf("(%d,some name", i)) {
			t.Fatalf("%d = %q after the rebuild", i, got)
		}
	}
}
