//! The stable side of a fuzz target: its committed seeds (`fuzz/seeds/<target>`), every input
//! that once failed (`fuzz/regressions/<target>`), and pseudo-random inputs, each run through
//! the target's own decode-and-check function exactly as the fuzzer runs it. A regression
//! that `fuzz/regressions/KNOWN` lists (a bug being fixed on another branch) is skipped. Included with
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

/// The regressions of bugs still being fixed elsewhere, as `fuzz/regressions/KNOWN` lists
/// them (`<target>/<file>  the bug`, one a line): their contents, by target.
fn known(target: &str) -> Vec<Vec<u8>> {
    let regressions = fuzz_dir().join("regressions");
    let list = std::fs::read_to_string(regressions.join("KNOWN")).unwrap_or_default();
    let lines = list.lines().filter(|line| !line.starts_with('#'));
    let names = lines.filter_map(|line| line.split_whitespace().next());
    let of_target = names.filter(|name| name.split('/').next() == Some(target));
    of_target
        .map(|name| std::fs::read(regressions.join(name)).expect("a KNOWN file exists"))
        .collect()
}

/// Runs every seed and regression of `target` but the known ones; there must be seeds.
pub fn replay_corpus(target: &str, run: impl Fn(&[u8])) {
    let seeds = files_in(&fuzz_dir().join("seeds").join(target));
    assert!(!seeds.is_empty(), "the seed corpus of {target} is missing");
    let regressions = files_in(&fuzz_dir().join("regressions").join(target));
    let known = known(target);
    for (name, bytes) in seeds.iter().chain(&regressions) {
        if known.contains(bytes) {
            eprintln!("skipping {name}: a known bug (fuzz/regressions/KNOWN)");
            continue;
        }
        eprintln!("replaying {name}");
        run(bytes);
    }
}

#[allow(dead_code)] // not every target replays pseudo-random inputs
/// Runs `count` pseudo-random inputs of up to `max_len` bytes from a fixed `seed`, but those
/// that are a known regression of `target`.
pub fn replay_random(target: &str, seed: u64, count: u64, max_len: u64, run: impl Fn(&[u8])) {
    let known = known(target);
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
        if !known.contains(&input) {
            run(&input);
        }
    }
}
