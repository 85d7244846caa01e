//! The fuzz target `wheel_ops` on stable: its committed seeds, every input that once failed
//! (`fuzz/regressions/wheel_ops`), and a few thousand pseudo-random inputs, each decoded and
//! run against the model exactly as the fuzzer does.

#[path = "support/wheel_bytes.rs"]
mod wheel_bytes;
#[path = "support/wheel_harness.rs"]
mod wheel_harness;

use std::path::Path;

/// Pseudo-random inputs per run.
const RANDOM_INPUTS: u64 = 2_000;

fn files_in(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|entry| entry.expect("readable directory").path())
        .filter(|path| path.is_file())
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .map(|path| {
            let bytes = std::fs::read(&path).expect("readable file");
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn seeds_and_regressions_pass() {
    let seeds = files_in("seeds/wheel_ops");
    assert!(!seeds.is_empty(), "the seed corpus is missing");
    for (name, bytes) in seeds.iter().chain(&files_in("regressions/wheel_ops")) {
        eprintln!("replaying {name}");
        wheel_bytes::run(bytes);
    }
}

#[test]
fn pseudo_random_inputs_pass() {
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..RANDOM_INPUTS {
        let len = next() % 128;
        let input: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        wheel_bytes::run(&input);
    }
}
