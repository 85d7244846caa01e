//! W1 (docs/benchmarks.md) through the Rust API, with the delays and the delete order of
//! bench/c/bench.c (same generator, same seed), so that the C benchmark can put the cost
//! of the C ABI next to it. Prints one JSON line. Argument: `--quick` for a tenth of N.

use std::time::{Duration, Instant};

use timerwheel_core::{BoxTask, Config, Runtime};

/// xorshift64*, the generator of bench/c/bench.c.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = if quick { 100_000 } else { 1_000_000 };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let delays: Vec<u64> = (0..n)
        .map(|_| 1000 + rng.next() % (3_600_000 - 1000))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }

    let runtime: Runtime<BoxTask> = Runtime::new(Config::default()).expect("runtime");
    let mut ids = Vec::with_capacity(n);
    let start = Instant::now();
    for &ms in &delays {
        let task: BoxTask = Box::new(|_| {}); // zero-sized: no allocation
        ids.push(runtime.add(Duration::from_millis(ms), task).expect("add"));
    }
    let add_ns = start.elapsed().as_nanos() as f64 / n as f64;
    let start = Instant::now();
    for &i in &order {
        runtime.cancel(ids[i]).expect("cancel");
    }
    let cancel_ns = start.elapsed().as_nanos() as f64 / n as f64;
    runtime.shutdown().expect("shutdown");
    println!(
        "{{\"impl\": \"timerwheel-rust\", \"baseline\": false, \"workload\": \"W1\", \"n\": {n}, \
         \"add_ns\": {add_ns:.1}, \"cancel_ns\": {cancel_ns:.1}}}"
    );
}
