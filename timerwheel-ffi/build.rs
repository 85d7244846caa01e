//! Generates the C header from the crate with cbindgen (configuration: cbindgen.toml), with
//! the version macros of the package version. The header goes to OUT_DIR, and also to the
//! path in `TIMERWHEEL_HEADER` when that is set (`make header` writes include/timerwheel.h
//! that way, `make check-header` a temporary file to compare with it). Also gives the shared
//! object its soname, from the ABI version in Cargo.toml (`[package.metadata.timerwheel]`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-env-changed=TIMERWHEEL_HEADER");

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let abi = abi_version(&crate_dir.join("Cargo.toml"));
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtimerwheel.so.{abi}");

    let version = Version::of_package();
    fs::write(
        out_dir.join("version_number.rs"),
        format!("const VERSION_NUMBER: u32 = {:#08x};\n", version.number()),
    )
    .expect("OUT_DIR is writable");

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("timerwheel-ffi/cbindgen.toml");
    config.after_includes = Some(version.macros());
    let header = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not generate the header");
    header.write_to_file(out_dir.join("timerwheel.h"));
    if let Some(path) = env::var_os("TIMERWHEEL_HEADER") {
        header.write_to_file(path);
    }
}

/// The `abi = N` line of the manifest's `[package.metadata.timerwheel]` table.
fn abi_version(manifest: &Path) -> u32 {
    let text = fs::read_to_string(manifest).expect("timerwheel-ffi/Cargo.toml");
    text.lines()
        .find_map(|line| line.strip_prefix("abi = "))
        .and_then(|value| value.trim().parse().ok())
        .expect("timerwheel-ffi/Cargo.toml: [package.metadata.timerwheel] abi = <number>")
}

/// The package version, from Cargo.toml.
struct Version {
    major: u32,
    minor: u32,
    patch: u32,
}

impl Version {
    fn of_package() -> Self {
        let part = |name: &str| -> u32 {
            let value = env::var(name).expect("set by cargo");
            let number = value.parse().expect("a number");
            assert!(
                number < 256,
                "{name} = {number}: tw_version_number() has 8 bits for it"
            );
            number
        };
        Version {
            major: part("CARGO_PKG_VERSION_MAJOR"),
            minor: part("CARGO_PKG_VERSION_MINOR"),
            patch: part("CARGO_PKG_VERSION_PATCH"),
        }
    }

    /// What tw_version_number() returns and TW_VERSION_NUMBER is.
    fn number(&self) -> u32 {
        (self.major << 16) | (self.minor << 8) | self.patch
    }

    /// The header's version macros: the version it was generated with.
    fn macros(&self) -> String {
        format!(
            "\n/* The version of this header; tw_version() and tw_version_number() give the \
             library's. */\n\
             #define TW_VERSION_MAJOR {}\n\
             #define TW_VERSION_MINOR {}\n\
             #define TW_VERSION_PATCH {}\n\
             /* (major << 16) | (minor << 8) | patch, as tw_version_number() returns it. */\n\
             #define TW_VERSION_NUMBER {:#08x}",
            self.major,
            self.minor,
            self.patch,
            self.number()
        )
    }
}
