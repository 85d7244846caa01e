//! The fuzz target `c_abi` on stable: its committed seeds, every input that once failed
//! (`fuzz/regressions/c_abi`), and a few thousand pseudo-random inputs, each decoded into C
//! ABI calls on a manual wheel and checked exactly as the fuzzer does.

#[path = "support/c_abi_ops.rs"]
mod c_abi_ops;

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
    let seeds = files_in("seeds/c_abi");
    assert!(!seeds.is_empty(), "the seed corpus is missing");
    for (name, bytes) in seeds.iter().chain(&files_in("regressions/c_abi")) {
        eprintln!("replaying {name}");
        c_abi_ops::run(bytes);
    }
}

#[test]
fn pseudo_random_inputs_pass() {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..RANDOM_INPUTS {
        let len = next() % 192;
        let input: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        c_abi_ops::run(&input);
    }
}
