package fsyncbench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stromdb/strom/cmd/strom/bench/compare"
)

// Cell is the median over the rounds of one layout at one (record size, writers).
type Cell struct {
	MBps, MBpsMin, MBpsMax float64
	SyncsPerSec            float64
	P50Ms, P99Ms           float64
	CPUsPerGB              float64 // this process's CPU seconds per GB acknowledged
	N                      int
}

// Summarize groups samples by (record size, writers, layout) and takes medians.
func Summarize(samples []Sample) map[[2]int]map[Layout]Cell {
	type key struct {
		size, n int
		l       Layout
	}
	by := map[key][]Sample{}
	for _, s := range samples {
		k := key{s.RecordBytes, s.Writers, s.Layout}
		by[k] = append(by[k], s)
	}
	out := map[[2]int]map[Layout]Cell{}
	for k, ss := range by {
		pick := func(f func(Sample) float64) []float64 {
			xs := make([]float64, len(ss))
			for i, s := range ss {
				xs[i] = f(s)
			}
			return xs
		}
		mbps := pick(Sample.MBps)
		c := Cell{
			MBps: compare.Median(mbps), MBpsMin: slices.Min(mbps), MBpsMax: slices.Max(mbps),
			SyncsPerSec: compare.Median(pick(Sample.SyncsPerSec)),
			P50Ms:       compare.Median(pick(func(s Sample) float64 { return s.P50Ms })),
			P99Ms:       compare.Median(pick(func(s Sample) float64 { return s.P99Ms })),
			CPUsPerGB: compare.Median(pick(func(s Sample) float64 {
				if s.Bytes == 0 {
					return 0
				}
				return s.CPUSeconds / float64(s.Bytes) * 1e9
			})),
			N: len(ss),
		}
		ck := [2]int{k.size, k.n}
		if out[ck] == nil {
			out[ck] = map[Layout]Cell{}
		}
		out[ck][k.l] = c
	}
	return out
}

// Markdown renders one row per (record size, writers): for each layout its acknowledged
// MB/s (min–max over the rounds), fdatasyncs/s and p50 latency, and for the journal
// layouts the ratio of their MB/s to LayoutFiles'. referenceMBps, the disk's plain
// fdatasync'd sequential write measured in the same rounds, gives the share column of each
// layout; nil leaves it out.
func Markdown(samples []Sample, layouts []Layout, referenceMBps []float64) string {
	sum := Summarize(samples)
	var keys [][2]int
	for k := range sum {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	ref := 0.0
	if len(referenceMBps) > 0 {
		ref = compare.Median(referenceMBps)
	}
	var b strings.Builder
	b.WriteString("| record | writers")
	for _, l := range layouts {
		fmt.Fprintf(&b, " | %s MB/s", l)
		if ref > 0 {
			b.WriteString(" (of disk)")
		}
		fmt.Fprintf(&b, " | fdatasync/s | p50 ms")
		if l != LayoutFiles {
			fmt.Fprintf(&b, " | ÷ %s", LayoutFiles)
		}
	}
	b.WriteString(" |\n|---|---")
	for _, l := range layouts {
		b.WriteString("|---|---|---")
		if l != LayoutFiles {
			b.WriteString("|---")
		}
	}
	b.WriteString("|\n")
	for _, k := range keys {
		row := sum[k]
		fmt.Fprintf(&b, "| %s | %d", sizeText(k[0]), k[1])
		base, hasBase := row[LayoutFiles]
		for _, l := range layouts {
			c, ok := row[l]
			if !ok {
				b.WriteString(" | – | – | –")
				if l != LayoutFiles {
					b.WriteString(" | –")
				}
				continue
			}
			mb := fmt.Sprintf("%.0f", c.MBps)
			if c.N > 1 && fmt.Sprintf("%.0f", c.MBpsMin) != fmt.Sprintf("%.0f", c.MBpsMax) {
				mb += fmt.Sprintf(" (%.0f–%.0f)", c.MBpsMin, c.MBpsMax)
			}
			if ref > 0 {
				mb += fmt.Sprintf(" %.0f %%", 100*c.MBps/ref)
			}
			fmt.Fprintf(&b, " | %s | %.0f | %.2f", mb, c.SyncsPerSec, c.P50Ms)
			if l != LayoutFiles {
				if hasBase && base.MBps > 0 {
					fmt.Fprintf(&b, " | %.2f×", c.MBps/base.MBps)
				} else {
					b.WriteString(" | –")
				}
			}
		}
		b.WriteString(" |\n")
	}
	if ref > 0 {
		fmt.Fprintf(&b, "\nReference, the disk's sequential write with one fdatasync at the end (1 MiB writes, as `make bench-fluss` measures it), in the same rounds: %.0f MB/s (%.0f–%.0f).\n",
			ref, slices.Min(referenceMBps), slices.Max(referenceMBps))
	}
	return b.String()
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
