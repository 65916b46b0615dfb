use mirobody_core::tool;

#[tool]
fn undocumented(text: String) -> String {
    text
}

fn main() {}
