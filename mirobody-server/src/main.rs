//! The `mirobody-server` binary: [`Application`](mirobody_server::Application) with the
//! built-in tools. `serve` (default), `stdio`, `tools`, and the operator's commands (`token`,
//! `secret`, `demo`, `import`, `circle`, `user`); and, hidden, `extract`: the sandboxed reader of one
//! document's text that the server starts as a child.

use std::process::ExitCode;

// Per request the server makes dozens of small allocations that live for microseconds, where
// glibc malloc spends far more than jemalloc. jemalloc rather than mimalloc: the `mimalloc`
// crate asks for every block through `mi_malloc_aligned`, which mimalloc 3 serves by
// over-allocating for any block above 1 KiB whose size is not a power of two (the boxed
// request future, hyper's buffers). The comparison is in benches/README.md.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    mirobody_server::Application::new().run()
}
