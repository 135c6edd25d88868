package rocksdbdir

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// ReadWithRocksDB runs the RocksDB checker (tests/rocksdb/run.sh) on dirs and returns each
// directory's entries, in order of keys. For tests: the checker is Java (make test-rocksdb).
func ReadWithRocksDB(check string, dirs ...string) (map[string]map[string]string, error) {
	out, err := exec.Command(check, dirs...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", check, err, out)
	}
	res := map[string]map[string]string{}
	var cur map[string]string
	var keys []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "db":
			cur = map[string]string{}
			res[f[1]] = cur
			keys = nil
		case len(f) == 2 && f[0] == "end":
			if !sort.StringsAreSorted(keys) {
				return nil, fmt.Errorf("keys out of order")
			}
		case len(f) == 2 && cur != nil:
			k, err1 := hex.DecodeString(f[0])
			v, err2 := hex.DecodeString(f[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("checker line %q", line)
			}
			cur[string(k)] = string(v)
			keys = append(keys, string(k))
		case len(f) == 1 && cur != nil: // an empty value
			k, _ := hex.DecodeString(f[0])
			cur[string(k)] = ""
		}
	}
	return res, nil
}
