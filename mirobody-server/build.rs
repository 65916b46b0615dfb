//! Optionally lays out the release binary's code so that what runs goes together.
//!
//! Without a layout, the functions a server runs (start-up, then each request) are scattered
//! over a large `.text`, and the kernel maps code in 64 KiB windows around each page it faults
//! in, so several MiB of code stay resident that the server never runs again. A symbol
//! ordering file, the request path's functions first, then start-up's and shutdown's, makes the
//! linker place them together at the front of `.text`. It saves resident memory, not
//! throughput, and goes stale with every change, so it is an optional step and no list is
//! committed:
//!
//! ```text
//! benches/load/symbol-order.sh        # profiles the release server, writes target/symbol-order.txt
//! MIROBODY_SYMBOL_ORDER=$PWD/target/symbol-order.txt cargo build --release -p mirobody-server
//! ```
//!
//! Only where the linker is known to be LLD, which understands the option: the Rust toolchain's
//! own on x86_64 Linux from Rust 1.90, unless a build picks another linker.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MIROBODY_SYMBOL_ORDER");
    let Some(order) = env::var_os("MIROBODY_SYMBOL_ORDER").filter(|path| !path.is_empty()) else { return };
    let order = Path::new(&order);
    println!("cargo:rerun-if-changed={}", order.display());
    if !order.is_file() {
        // A build asked for a layout it cannot have: say so rather than link without it silently.
        println!("cargo:warning=MIROBODY_SYMBOL_ORDER names no file: {}", order.display());
        return;
    }
    if !lld_links_release() {
        println!("cargo:warning=MIROBODY_SYMBOL_ORDER is ignored: only release builds linked by LLD take it");
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
    // A function renamed since the list was made is skipped; one warning per name would bury
    // the build's output. `benches/load/symbol_order.py check` reports how much still matches.
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

fn lld_links_release() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    // The list names the functions of an optimised build; a debug build has other ones.
    var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        // Cargo names the linker here when the build configures one.
        && var("RUSTC_LINKER").is_empty()
        // Nor when RUSTFLAGS pick a linker or pass it flags (`-C linker`, `-C link-arg`, ...).
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link")
        && rustc_minor_version().is_some_and(|minor| minor >= 90)
}

/// The minor version of the compiler building this crate (`rustc 1.95.0 (...)` gives 95).
fn rustc_minor_version() -> Option<u32> {
    let rustc = env::var("RUSTC").ok()?;
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(output.stdout).ok()?;
    let mut numbers = version.split_whitespace().nth(1)?.split('.');
    (numbers.next()? == "1").then_some(())?;
    numbers.next()?.parse().ok()
}
