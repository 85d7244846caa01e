//! The fuzz target `sized_structs` on stable: its committed seeds, every input that once
//! failed (`fuzz/regressions/sized_structs`), and pseudo-random inputs, each run through
//! the sized structs' scenario exactly as the fuzzer does.

#[path = "../../fuzz/replay.rs"]
mod replay;
#[path = "support/sized_structs_ops.rs"]
mod sized_structs_ops;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("sized_structs", sized_structs_ops::run);
}

#[test]
fn random_inputs_pass() {
    replay::replay_random(
        "sized_structs",
        0x5eed_5172,
        2_000,
        512,
        sized_structs_ops::run,
    );
}
