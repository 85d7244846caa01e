//! Compiles the C side of the fuzz target `threads` (fuzz/threads/contract.c, which
//! includes tests/c/test_random_contract.c) into a static library, with AddressSanitizer
//! when the target is built with it; only the `threads` target links it.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn run(command: &mut Command) {
    let status = command.status().expect("the C compiler or ar runs");
    assert!(status.success(), "{command:?} failed");
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("..");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let source = root.join("fuzz/threads/contract.c");
    let object = out.join("contract.o");
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let mut compile = Command::new(env::var("CC").unwrap_or_else(|_| "cc".into()));
    compile.args(["-c", "-O1", "-g", "-pthread", "-fno-omit-frame-pointer"]);
    if rustflags.contains("sanitizer=address") {
        // Instrumented only: the Rust side links the AddressSanitizer runtime.
        compile.arg("-fsanitize=address");
    }
    compile.arg("-I").arg(root.join("include"));
    compile.arg(&source).arg("-o").arg(&object);
    run(&mut compile);
    run(Command::new("ar")
        .arg("crs")
        .arg(out.join("libtw_fuzz_threads.a"))
        .arg(&object));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=tw_fuzz_threads");
    for path in [
        "fuzz/threads/contract.c",
        "tests/c/test_random_contract.c",
        "tests/c/check.h",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=CC");
}
