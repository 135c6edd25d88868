package bench

import (
	"github.com/stromdb/strom/internal/row"
)

// gen produces the benchmark rows deterministically from a seed: row r has id r, BIGINT
// columns hold pseudo-random values below one million, STRING columns StringBytes bytes cut
// at a random offset from a 1 MiB pool of space-separated words drawn from a 512-word
// vocabulary. Compressors thus find some structure (small integers, recurring words) but
// no long verbatim repeats; the ratio on real data will differ.
type gen struct {
	cfg  *Config
	pool []byte
	vals []row.Datum
}

const poolSize = 1 << 20

func newGen(cfg *Config) *gen {
	g := &gen{cfg: cfg, vals: make([]row.Datum, cfg.Columns)}
	if cfg.StringBytes > 0 {
		const alphabet = "abcdefghijklmnopqrstuvwxyz"
		s := cfg.Seed ^ 0x5bd1e995
		words := make([][]byte, 512)
		for i := range words {
			w := make([]byte, 3+splitmix(&s)%8)
			for j := range w {
				w[j] = alphabet[splitmix(&s)%uint64(len(alphabet))]
			}
			words[i] = w
		}
		need := poolSize + cfg.StringBytes
		g.pool = make([]byte, 0, need+16)
		for len(g.pool) < need {
			g.pool = append(append(g.pool, words[splitmix(&s)%uint64(len(words))]...), ' ')
		}
	}
	return g
}

// row returns the values of row id. The slice (and the string bytes, which alias the pool)
// are reused by the next call.
func (g *gen) row(id int64) []row.Datum {
	s := g.cfg.Seed*0x9e3779b97f4a7c15 ^ uint64(id)
	g.vals[0] = row.Datum{I: id}
	for i := 1; i < len(g.vals); i++ {
		x := splitmix(&s)
		if g.cfg.isString(i) {
			off := int(x % poolSize)
			g.vals[i] = row.Datum{B: g.pool[off : off+g.cfg.StringBytes]}
		} else {
			g.vals[i] = row.Datum{I: int64(x % 1_000_000)}
		}
	}
	return g.vals
}

// splitmix is SplitMix64: it advances *s and returns the next pseudo-random value.
func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// RowSource generates the rows of the benchmark's tables for clients outside this package
// (the Go-client and Java-client runs of `make bench-clients`, whose Java half,
// tools/javabench, computes the same sequence), so that every client writes the same bytes.
type RowSource struct{ g *gen }

// NewRowSource returns the row generator of cfg (Columns, StringBytes and Seed matter).
func NewRowSource(cfg Config) *RowSource {
	return &RowSource{g: newGen(&cfg)}
}

// Row returns the values of row id: Datum.I for BIGINT columns, Datum.B for STRING columns
// (see Config.IsString). The slice is reused by the next call; the string bytes alias an
// immutable pool and stay valid.
func (s *RowSource) Row(id int64) []row.Datum { return s.g.row(id) }

// IsString reports whether column col of the benchmark schema is a STRING (else BIGINT).
func (c *Config) IsString(col int) bool { return c.isString(col) }

// LookupKeys returns the n keys the lookup workload asks for, drawn from [0, loaded).
func LookupKeys(seed uint64, n, loaded int) []int64 {
	s := seed ^ 0xdeadbeef
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(splitmix(&s) % uint64(loaded))
	}
	return keys
}
