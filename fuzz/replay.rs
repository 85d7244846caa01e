//! The stable side of a fuzz target: its committed seeds (`fuzz/seeds/<target>`), every input
//! that once failed (`fuzz/regressions/<target>`), and pseudo-random inputs, each run through
//! the target's own decode-and-check function exactly as the fuzzer runs it. Included with
//! `#[path]` by the replay test of each target.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
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

/// Runs every seed and regression of `target`; there must be seeds.
pub fn replay_corpus(target: &str, run: impl Fn(&[u8])) {
    let seeds = files_in(&fuzz_dir().join("seeds").join(target));
    assert!(!seeds.is_empty(), "the seed corpus of {target} is missing");
    let regressions = files_in(&fuzz_dir().join("regressions").join(target));
    for (name, bytes) in seeds.iter().chain(&regressions) {
        eprintln!("replaying {name}");
        run(bytes);
    }
}

/// Runs `count` pseudo-random inputs of up to `max_len` bytes from a fixed `seed`.
pub fn replay_random(seed: u64, count: u64, max_len: u64, run: impl Fn(&[u8])) {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..count {
        let len = next() % max_len;
        let input: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        run(&input);
    }
}
