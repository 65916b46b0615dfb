use mirobody_core::tool_service;

#[derive(Default)]
struct Service;

#[tool_service(enabeld = always)]
impl Service {
    /// Takes `&mut self`, which concurrent calls cannot share.
    pub fn mutate(&mut self) {}

    /// Marked as a tool but private.
    #[tool]
    fn hidden() {}

    /// `#[arg]` on a private method.
    fn helper(#[arg(default = 1)] n: i64) -> i64 {
        n
    }
}

trait Greet {
    fn greet();
}

#[tool_service]
impl Greet for Service {
    fn greet() {}
}

fn main() {}
