//! The fuzz target `durable_store` on stable: its committed seeds, every input that once
//! failed (`fuzz/regressions/durable_store`), and pseudo-random inputs, each run through
//! the store's scenario exactly as the fuzzer does.

#[path = "support/durable_store_ops.rs"]
mod durable_store_ops;
#[path = "../../fuzz/replay.rs"]
mod replay;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("durable_store", durable_store_ops::run);
}

#[test]
fn random_inputs_pass() {
    replay::replay_random(
        "durable_store",
        0x5eed_d0ab,
        300,
        512,
        durable_store_ops::run,
    );
}
