// Command bench runs the workloads W1, W2 and W3 of docs/benchmarks.md against the Go runtime's
// timers (time.AfterFunc, Stop, Reset) and against timerwheel, and prints one JSON object
// per line, then a table of ratios (timerwheel / baseline). Each measurement runs in a
// fresh process of this command, so that memory and garbage left by one does not count
// against the next; all of them run in this one command, side by side, the two
// implementations taking turns, and each figure is the median of -runs runs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/timerwheel/timerwheel/bindings/go/internal/workload"
)

func main() {
	n := flag.Int("n", workload.N, "timers per workload")
	touches := flag.Int("touches", workload.W2Touches, "refreshes in W2")
	one := flag.String("one", "", "run only this workload (W1, W2, W3), in this process")
	impl := flag.String("impl", "", "with -one: the implementation to run")
	runs := flag.Int("runs", 3, "runs of each measurement; the median is reported")
	only := flag.String("workloads", strings.Join(workload.Workloads, ","),
		"the workloads to run, comma-separated")
	flag.Parse()

	if *one != "" {
		rec, err := workload.Run(*one, *impl, *n, *touches)
		exitOn(err)
		exitOn(json.NewEncoder(os.Stdout).Encode(rec))
		return
	}
	var records []workload.Record
	for _, wl := range strings.Split(*only, ",") {
		runsOf := make([][]workload.Record, len(workload.ImplNames))
		for r := 0; r < *runs; r++ {
			for i, name := range workload.ImplNames {
				rec, err := runChild(wl, name, *n, *touches)
				exitOn(err)
				runsOf[i] = append(runsOf[i], rec)
			}
		}
		for _, recs := range runsOf {
			rec := workload.Median(recs)
			exitOn(json.NewEncoder(os.Stdout).Encode(rec))
			records = append(records, rec)
		}
	}
	fmt.Println()
	workload.WriteTable(os.Stdout, records)
}

// runChild runs one measurement in a fresh process of this command.
func runChild(wl, impl string, n, touches int) (workload.Record, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-one", wl, "-impl", impl,
		"-n", strconv.Itoa(n), "-touches", strconv.Itoa(touches))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", wl, impl, err)
	}
	var rec workload.Record
	return rec, json.Unmarshal(out, &rec)
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
