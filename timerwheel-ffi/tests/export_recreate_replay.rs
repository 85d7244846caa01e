//! The fuzz target `export_recreate` on stable: its committed seeds, every input that once
//! failed (`fuzz/regressions/export_recreate`), and pseudo-random inputs, each run through
//! the export-and-re-create scenario exactly as the fuzzer does.

#[path = "support/export_recreate_ops.rs"]
mod export_recreate_ops;
#[path = "../../fuzz/replay.rs"]
mod replay;

#[test]
fn seeds_and_regressions_pass() {
    replay::replay_corpus("export_recreate", export_recreate_ops::run);
}

#[test]
fn random_inputs_pass() {
    replay::replay_random(
        "export_recreate",
        0xe4_9047,
        2_000,
        512,
        export_recreate_ops::run,
    );
}
