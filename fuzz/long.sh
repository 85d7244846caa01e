#!/bin/sh
# One fuzz target for `make fuzz-long`: runs it until the run length its libFuzzer options
# set (inputs or seconds), minimizes its corpus (cargo fuzz cmin), and prints one line:
# inputs run, inputs a second, coverage.
# usage: fuzz/long.sh "CARGO_FUZZ" TARGET "BUILD_OPTIONS" "LIBFUZZER_OPTIONS"
set -e
cargo_fuzz=$1 target=$2 build=$3 options=$4
log=fuzz/artifacts/$target.long.log
mkdir -p fuzz/corpus/$target fuzz/artifacts
status=0
# shellcheck disable=SC2086 # the options are lists of words
$cargo_fuzz run $build $target fuzz/corpus/$target fuzz/seeds/$target -- $options \
	>$log 2>&1 || status=$?
max_len=$(echo "$options" | grep -o -- '-max_len=[0-9]*')
# shellcheck disable=SC2086
$cargo_fuzz cmin $build $target fuzz/corpus/$target -- $max_len >>$log 2>&1 || true
inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' $log | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' $log | tail -1)
cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' $log | tail -1)
echo "fuzz-long: $target: ${inputs:-?} inputs, ${rate:-?}/s, $cov, corpus $(ls fuzz/corpus/$target | wc -l) after cmin"
if [ $status -ne 0 ]; then
	echo "fuzz-long: $target FOUND A FAILURE (log $log): copy fuzz/artifacts/$target/* to fuzz/regressions/$target/"
	exit $status
fi
