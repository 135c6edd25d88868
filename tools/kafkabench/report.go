package main

import (
	"fmt"
	"slices"
	"strings"
)

// markdown renders the medians over rounds per (workload, system) and the ratios the
// benchmark is for, each the median of the per-round ratios (a round's runs are close in
// time, so they saw similar load).
func markdown(w workload, systems []system, samples []sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d records of %d-byte values, %d partitions, no compression; medians of %d round(s)\n\n",
		w.records, w.valueBytes, w.partitions, rounds(samples))
	b.WriteString("| workload |")
	for _, s := range systems {
		fmt.Fprintf(&b, " %s |", s.label)
	}
	b.WriteString("\n|---|")
	for range systems {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, wl := range []string{wlProduce, wlConsume, wlFlussAppend} {
		fmt.Fprintf(&b, "| %s |", wl)
		for _, s := range systems {
			rps := values(samples, s.name, wl, func(x sample) float64 { return x.RecordsPerSec })
			if len(rps) == 0 {
				b.WriteString(" — |")
				continue
			}
			mbs := values(samples, s.name, wl, func(x sample) float64 { return x.MBPerSec })
			fmt.Fprintf(&b, " %.0f rec/s, %.1f MB/s", median(rps), median(mbs))
			if cpu := values(samples, s.name, wl, func(x sample) float64 { return x.ServerCPUus }); len(cpu) > 0 && median(cpu) >= 0 {
				fmt.Fprintf(&b, ", server %.1f µs CPU/rec", median(cpu))
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}

	b.WriteString("\n| ratio (median of per-round ratios) | value |\n|---|---|\n")
	ratio := func(label, sysA, wlA, sysB, wlB string, field func(sample) float64) {
		var rs []float64
		for r := 1; r <= rounds(samples); r++ {
			a, okA := find(samples, sysA, wlA, r)
			c, okB := find(samples, sysB, wlB, r)
			if okA && okB && field(c) > 0 && field(a) >= 0 {
				rs = append(rs, field(a)/field(c))
			}
		}
		if len(rs) > 0 {
			fmt.Fprintf(&b, "| %s | %.2f |\n", label, median(rs))
		}
	}
	thr := func(x sample) float64 { return x.RecordsPerSec }
	cpu := func(x sample) float64 { return x.ServerCPUus }
	for _, s := range systems {
		if s.strom == nil {
			continue
		}
		ratio(s.label+" ÷ Apache Kafka, produce throughput", s.name, wlProduce, "kafka", wlProduce, thr)
		ratio(s.label+" ÷ Apache Kafka, consume throughput", s.name, wlConsume, "kafka", wlConsume, thr)
		ratio(s.label+" ÷ Apache Kafka, produce server CPU per record", s.name, wlProduce, "kafka", wlProduce, cpu)
		ratio(s.label+" ÷ Apache Kafka, consume server CPU per record", s.name, wlConsume, "kafka", wlConsume, cpu)
		ratio(s.label+": Fluss append ÷ Kafka produce, throughput", s.name, wlFlussAppend, s.name, wlProduce, thr)
		ratio(s.label+": Fluss append ÷ Kafka produce, server CPU per record", s.name, wlFlussAppend, s.name, wlProduce, cpu)
	}
	return b.String()
}

func rounds(samples []sample) int {
	n := 0
	for _, s := range samples {
		n = max(n, s.Round)
	}
	return n
}

func values(samples []sample, system, workload string, field func(sample) float64) []float64 {
	var v []float64
	for _, s := range samples {
		if s.System == system && s.Workload == workload {
			v = append(v, field(s))
		}
	}
	return v
}

func find(samples []sample, system, workload string, round int) (sample, bool) {
	for _, s := range samples {
		if s.System == system && s.Workload == workload && s.Round == round {
			return s, true
		}
	}
	return sample{}, false
}

// median of v, which must not be empty; the mean of the middle two for an even count.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
