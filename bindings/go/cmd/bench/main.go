// Command bench runs the workloads W1, W2 and W3 of BENCHMARKS.md against the Go runtime's
// timers (time.AfterFunc, Stop, Reset) and against timerwheel in the same process, and
// prints one JSON object per line, then a table of ratios (timerwheel / baseline).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/timerwheel/timerwheel/bindings/go/internal/workload"
)

func main() {
	n := flag.Int("n", workload.N, "timers per workload")
	touches := flag.Int("touches", workload.W2Touches, "refreshes in W2")
	flag.Parse()

	records := workload.RunAll(*n, *touches)
	enc := json.NewEncoder(os.Stdout)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Println()
	workload.WriteTable(os.Stdout, records)
}
