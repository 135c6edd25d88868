package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
)

// didYouMean adds the closest existing name to a TABLE_NOT_EXIST or DATABASE_NOT_EXIST
// error about path: "(did you mean shop.orders?)". It asks the cluster for the names and
// returns err unchanged when that fails or nothing is close.
func (a *app) didYouMean(ctx context.Context, path fluss.TablePath, err error) error {
	if a.conn == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	admin := a.conn.Admin()
	code := fluss.CodeOf(err)
	if code == fluss.ErrTableNotExist {
		tables, lerr := admin.ListTables(ctx, path.Database)
		switch {
		case fluss.CodeOf(lerr) == fluss.ErrDatabaseNotExist:
			code = fluss.ErrDatabaseNotExist // the database is the typo
		case lerr != nil:
			return err
		default:
			if best := closest(path.Table, tables); best != "" {
				return fmt.Errorf("%w (did you mean %s?)", err, fluss.NewTablePath(path.Database, best))
			}
			return err
		}
	}
	if code == fluss.ErrDatabaseNotExist {
		dbs, lerr := admin.ListDatabases(ctx)
		if lerr != nil {
			return err
		}
		if best := closest(path.Database, dbs); best != "" {
			return fmt.Errorf("%w (did you mean database %s?)", err, best)
		}
	}
	return err
}

// closest is the name nearest to s by edit distance, if it is near enough to be a typo:
// at most a third of the longer name's letters, and at most 3.
func closest(s string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		d := editDistance(strings.ToLower(s), strings.ToLower(n))
		limit := min(3, max(len(s), len(n))/3)
		if d > limit || d == 0 && n == s {
			continue
		}
		if best == "" || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
