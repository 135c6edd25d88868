package faultfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestInactiveInjectsNothing(t *testing.T) {
	if Active() {
		t.Skip("STROM_FAULTS is set in this environment")
	}
	if err := Before(Sync, "/any/file"); err != nil {
		t.Fatalf("inactive Before = %v", err)
	}
}

func TestRulesMatchByOperationAndPrefix(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(rules, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// A rewrite within the reload interval may keep mtime and size; force a re-stat.
		time.Sleep(reloadEvery + 10*time.Millisecond)
	}
	defer ActivateForTest(rules)()

	if err := Before(Write, "/d/a.log"); err != nil {
		t.Fatalf("missing rules file: %v", err)
	}
	write("# comment\n\nsync /d/b eio\nwrite /d/ enospc\n* /e/ delay=30ms\n")
	if err := Before(Sync, "/d/a.log"); err != nil {
		t.Errorf("sync of /d/a.log = %v, want no fault (the sync rule is for /d/b)", err)
	}
	if err := Before(Sync, "/d/b.log"); !errors.Is(err, syscall.EIO) {
		t.Errorf("sync of /d/b.log = %v, want EIO", err)
	}
	var pe *os.PathError
	if err := Before(Write, "/d/a.log"); !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || pe.Path != "/d/a.log" {
		t.Errorf("write of /d/a.log = %v, want ENOSPC naming the file", err)
	}
	start := time.Now()
	if err := Before(Sync, "/e/x"); err != nil {
		t.Errorf("delayed sync = %v", err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Errorf("delay rule did not delay")
	}

	write("")
	if err := Before(Sync, "/d/b.log"); err != nil {
		t.Errorf("after clearing the rules: %v", err)
	}
	write("write /d/ bogus\n")
	if err := Before(Write, "/d/a.log"); err != nil {
		t.Errorf("a malformed rules file must inject nothing, got %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"sync /d", "read /d eio", "sync /d delay=-1s", "sync /d delay=x", "sync /d crash"} {
		if _, err := parse([]byte(bad)); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
	rs, err := parse([]byte("* * delay=1s\n"))
	if err != nil || len(rs) != 1 || rs[0].op != "" || rs[0].prefix != "" || rs[0].delay != time.Second {
		t.Errorf("parse wildcard = %+v, %v", rs, err)
	}
}
