//! The fuzz target `virtual_clock` on stable: its committed seeds, every input that once
//! failed (`fuzz/regressions/virtual_clock`, but for those `fuzz/regressions/KNOWN` lists),
//! each decoded into a scenario on a virtual-clock
//! wheel and checked against its model exactly as the fuzzer does.

#[path = "../../fuzz/replay.rs"]
mod replay;
#[path = "support/virtual_clock_ops.rs"]
mod virtual_clock_ops;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("virtual_clock", virtual_clock_ops::run);
}
