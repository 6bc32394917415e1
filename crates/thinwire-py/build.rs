//! Records how the library was compiled, for `thinwire --version` and a study's
//! `timing.json` (`_core.BUILD`): "profile-guided" when cargo passed
//! `-Cprofile-use` (bench/pgo.py, `make pgo`), "instrumented" with
//! `-Cprofile-generate` (its training build), "plain" otherwise. Timings are
//! only comparable between builds of the same kind (bench/RESULTS.md).
fn main() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // Flags are separated by 0x1f; `-C profile-use=…` may come as two.
    let flags = flags.replace('\x1f', " ");
    let kind = if flags.contains("profile-use") {
        "profile-guided"
    } else if flags.contains("profile-generate") {
        "instrumented"
    } else {
        "plain"
    };
    println!("cargo:rustc-env=THINWIRE_BUILD={kind}");
}
