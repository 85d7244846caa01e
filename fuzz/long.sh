#!/bin/sh
# One fuzz target for `make fuzz-long`: runs it until RUNS inputs or SECONDS, minimizes its
# corpus (cargo fuzz cmin), and prints one line: inputs run, inputs a second, coverage.
# usage: fuzz/long.sh TOOLCHAIN TARGET SANITIZER SECONDS RUNS MAX_LEN TIMEOUT
set -e
toolchain=$1 target=$2 sanitizer=$3 seconds=$4 runs=$5 max_len=$6 timeout=$7
log=fuzz/artifacts/$target.long.log
mkdir -p fuzz/corpus/$target fuzz/artifacts
status=0
cargo +$toolchain fuzz run -s $sanitizer $target fuzz/corpus/$target fuzz/seeds/$target -- \
	-max_total_time=$seconds -runs=$runs -max_len=$max_len -timeout=$timeout \
	-print_final_stats=1 >$log 2>&1 || status=$?
cargo +$toolchain fuzz cmin -s $sanitizer $target fuzz/corpus/$target -- -max_len=$max_len \
	>>$log 2>&1 || true
inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' $log | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' $log | tail -1)
cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' $log | tail -1)
echo "fuzz-long: $target: ${inputs:-?} inputs, ${rate:-?}/s, $cov, corpus $(ls fuzz/corpus/$target | wc -l) after cmin"
if [ $status -ne 0 ]; then
	echo "fuzz-long: $target FOUND A FAILURE (log $log): copy fuzz/artifacts/$target/* to fuzz/regressions/$target/"
	exit $status
fi
