package workload

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// dumpLateness writes $TW_BENCH_DIR/w3-<name>.csv when that variable is set, for the
// report's plot: `bucket_us,count` lines, the lower bound of each non-empty 10 µs bucket of
// the lateness `ns` (nanoseconds).
func dumpLateness(name string, ns []int64) {
	dir := os.Getenv("TW_BENCH_DIR")
	if dir == "" || len(ns) == 0 {
		return
	}
	counts := map[int64]int{}
	for _, late := range ns {
		if late < 0 {
			late = 0
		}
		counts[late/10000*10]++
	}
	buckets := make([]int64, 0, len(counts))
	for b := range counts {
		buckets = append(buckets, b)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
	f, err := os.Create(filepath.Join(dir, "w3-"+name+".csv"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "bucket_us,count")
	for _, b := range buckets {
		fmt.Fprintf(w, "%d,%d\n", b, counts[b])
	}
	w.Flush()
}
