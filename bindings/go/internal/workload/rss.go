package workload

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// settledRSS collects garbage and returns the resident set size in bytes (0 where
// /proc/self/statm cannot be read).
func settledRSS() int64 {
	runtime.GC()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
