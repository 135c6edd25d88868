package remotelog

import (
	"testing"
	"time"
)

func TestConfigFrom(t *testing.T) {
	for _, tc := range []struct {
		raw      map[string]string
		ok       bool
		interval time.Duration
		threads  int
		fails    bool
	}{
		{raw: map[string]string{}, ok: false, interval: time.Minute, threads: 4},
		{raw: map[string]string{OptDataDir: "/r"}, ok: true, interval: time.Minute, threads: 4},
		{raw: map[string]string{OptDataDir: "/r", OptTaskInterval: "0"}, ok: true, interval: 0, threads: 4}, // served, not tiered
		{raw: map[string]string{OptDataDir: "/r", OptTaskInterval: "1s", OptTransferThread: "2"}, ok: true, interval: time.Second, threads: 2},
		{raw: map[string]string{OptDataDir: "/r", OptTaskInterval: "soon"}, fails: true},
		{raw: map[string]string{OptDataDir: "/r", OptTransferThread: "0"}, fails: true},
	} {
		c, ok, err := ConfigFrom(tc.raw)
		if tc.fails {
			if err == nil {
				t.Errorf("%v: accepted", tc.raw)
			}
			continue
		}
		if err != nil || ok != tc.ok || c.Interval != tc.interval || c.Threads != tc.threads {
			t.Errorf("%v: %+v ok %v err %v", tc.raw, c, ok, err)
		}
	}
}
