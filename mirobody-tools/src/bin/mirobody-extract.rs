//! The sandboxed document reader as a program of its own: `mirobody-extract <kind> <memory
//! bytes> <cpu seconds>`, the document on stdin, its text on stdout. Started by an
//! [`Extractor`](mirobody_tools::extract::Extractor), never by hand.

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    mirobody_tools::extract::child_main(&args)
}
