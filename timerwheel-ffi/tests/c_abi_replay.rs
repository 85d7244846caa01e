//! The fuzz target `c_abi` on stable: its committed seeds, every input that once failed
//! (`fuzz/regressions/c_abi`), and a few thousand pseudo-random inputs, each decoded into C
//! ABI calls on a manual wheel and checked exactly as the fuzzer does.

#[path = "support/c_abi_ops.rs"]
mod c_abi_ops;
#[path = "../../fuzz/replay.rs"]
mod replay;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("c_abi", c_abi_ops::run);
}

#[test]
fn pseudo_random_inputs_pass() {
    replay::replay_random("c_abi", 0x9E37_79B9_7F4A_7C15, 2_000, 192, c_abi_ops::run);
}
