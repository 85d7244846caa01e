//! The fuzz target `wheel_ops` on stable: its committed seeds, every input that once failed
//! (`fuzz/regressions/wheel_ops`), and a few thousand pseudo-random inputs, each decoded and
//! run against the model exactly as the fuzzer does.

#[path = "../../fuzz/replay.rs"]
mod replay;
#[path = "support/wheel_bytes.rs"]
mod wheel_bytes;
#[path = "support/wheel_harness.rs"]
mod wheel_harness;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("wheel_ops", wheel_bytes::run);
}

#[test]
fn pseudo_random_inputs_pass() {
    replay::replay_random(
        "wheel_ops",
        0x2545_F491_4F6C_DD1D,
        2_000,
        128,
        wheel_bytes::run,
    );
}
