//! Generates the C header from the crate with cbindgen (configuration: cbindgen.toml).
//! The header goes to OUT_DIR, and also to the path in `TIMERWHEEL_HEADER` when that is set
//! (`make header` writes include/timerwheel.h that way, `make check-header` a temporary file
//! to compare with it). Also gives the shared object its soname (the ABI version).

use std::env;
use std::path::PathBuf;

/// The ABI version: bump it on any incompatible change of the header.
const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=TIMERWHEEL_HEADER");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtimerwheel.so.{ABI_VERSION}");

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("timerwheel-ffi/cbindgen.toml");
    let header = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not generate the header");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    header.write_to_file(out_dir.join("timerwheel.h"));
    if let Some(path) = env::var_os("TIMERWHEEL_HEADER") {
        header.write_to_file(path);
    }
}
