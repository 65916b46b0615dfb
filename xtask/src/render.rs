//! Tokens to one line of text, spaced the way rustfmt would space a signature
//! (`fn call(&self, name: &str) -> Result<Vec<u8>, Error>`), so listing lines read like code
//! and do not change with the source's own line breaks or comments.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// Renders anything that prints as tokens on one line.
pub(crate) fn tokens(value: &impl ToTokens) -> String {
    let mut pieces = Vec::new();
    flatten(value.to_token_stream(), &mut pieces);
    let pieces = without_trailing_commas(pieces);
    let mut out = String::new();
    let mut previous: Option<&Piece> = None;
    for piece in &pieces {
        if let Some(prev) = previous
            && space_between(prev, piece)
        {
            out.push(' ');
        }
        out.push_str(piece.text());
        previous = Some(piece);
    }
    out
}

/// Drops a comma that ends a list (before `)`, `]`, `}`, `>` or the end), as rustfmt does:
/// `f(a, b,)` reads as `f(a, b)`. The comma of a one-element tuple, `(u8,)`, stays.
fn without_trailing_commas(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for (index, piece) in pieces.iter().enumerate() {
        let is_comma = matches!(piece, Piece::Op(op) if op == ",");
        let ends_list = match pieces.get(index + 1) {
            None | Some(Piece::Close(_)) => true,
            Some(Piece::Op(op)) => op == ">",
            _ => false,
        };
        if is_comma
            && ends_list
            && !(pieces.get(index + 1).is_some_and(|p| matches!(p, Piece::Close(')'))) && only_comma_in_parens(&out))
        {
            continue;
        }
        out.push(piece.clone());
    }
    out
}

/// Whether the innermost open parenthesis at the end of `before` is a tuple (not a parameter
/// list after a name or generics: `f(`, `Fn(`, `f<T>(`) holding no comma at its level so far,
/// so that a comma now makes it a one-element tuple.
fn only_comma_in_parens(before: &[Piece]) -> bool {
    let mut depth = 0usize;
    for (index, piece) in before.iter().enumerate().rev() {
        match piece {
            Piece::Close(_) => depth += 1,
            Piece::Open(c) if depth == 0 => {
                let after_name = match index.checked_sub(1).map(|i| &before[i]) {
                    Some(Piece::Word(_)) => true,
                    Some(Piece::Op(op)) => op == ">",
                    _ => false,
                };
                return *c == '(' && !after_name;
            }
            Piece::Open(_) => depth -= 1,
            Piece::Op(op) if op == "," && depth == 0 => return false,
            _ => {}
        }
    }
    false
}

/// A printable unit: a word, a literal, an operator made of joint punctuation (`->`, `::`),
/// a lifetime, or one side of a delimiter.
#[derive(Clone)]
enum Piece {
    Word(String),
    Op(String),
    Open(char),
    Close(char),
}

impl Piece {
    fn text(&self) -> &str {
        match self {
            Piece::Word(text) | Piece::Op(text) => text,
            Piece::Open(c) | Piece::Close(c) => match c {
                '(' => "(",
                '[' => "[",
                '{' => "{",
                ')' => ")",
                ']' => "]",
                _ => "}",
            },
        }
    }
}

fn flatten(stream: TokenStream, out: &mut Vec<Piece>) {
    let mut pending_op = String::new();
    for tree in stream {
        match tree {
            TokenTree::Punct(punct) => {
                pending_op.push(punct.as_char());
                // A lifetime's quote waits for its name; other joint punctuation for the rest of
                // its operator.
                if punct.spacing() == Spacing::Alone && punct.as_char() != '\'' {
                    out.push(Piece::Op(std::mem::take(&mut pending_op)));
                }
                continue;
            }
            TokenTree::Ident(ident) if pending_op == "'" => {
                pending_op.clear();
                out.push(Piece::Word(format!("'{ident}")));
                continue;
            }
            _ => {}
        }
        if !pending_op.is_empty() {
            out.push(Piece::Op(std::mem::take(&mut pending_op)));
        }
        match tree {
            TokenTree::Ident(ident) => out.push(Piece::Word(ident.to_string())),
            TokenTree::Literal(literal) => out.push(Piece::Word(literal.to_string())),
            TokenTree::Group(group) => {
                let delimiters = match group.delimiter() {
                    Delimiter::Parenthesis => Some(('(', ')')),
                    Delimiter::Bracket => Some(('[', ']')),
                    Delimiter::Brace => Some(('{', '}')),
                    Delimiter::None => None,
                };
                if let Some((open, _)) = delimiters {
                    out.push(Piece::Open(open));
                }
                flatten(group.stream(), out);
                if let Some((_, close)) = delimiters {
                    out.push(Piece::Close(close));
                }
            }
            TokenTree::Punct(_) => unreachable!("handled above"),
        }
    }
    if !pending_op.is_empty() {
        out.push(Piece::Op(pending_op));
    }
}

/// Keywords after which a parenthesis is not a call or a tuple struct's fields.
const SPACED_BEFORE_PAREN: &[&str] = &["impl", "dyn", "mut", "as", "where", "for", "in", "return", "move"];

fn space_between(prev: &Piece, next: &Piece) -> bool {
    use Piece::{Close, Op, Open, Word};
    match (prev, next) {
        (Open('{'), Close('}')) => false,
        (Open('{'), _) | (_, Close('}')) => true,
        (Open(_), _) | (_, Close(_)) => false,
        (_, Op(op)) if matches!(op.as_str(), "," | ";" | ":" | "::" | ">" | "." | "..") => false,
        (Op(op), _) if matches!(op.as_str(), "::" | "&" | "&&" | "*" | "#" | "<" | "?" | "." | "..") => false,
        (_, Op(op)) if op == "<" => !matches!(prev, Word(_)) && !matches!(prev, Op(p) if p == "::"),
        (Word(word), Open('(')) => SPACED_BEFORE_PAREN.contains(&word.as_str()),
        (Op(op), Open('(')) => op != ">",
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::tokens;

    fn render(source: &str) -> String {
        tokens(&syn::parse_str::<syn::Signature>(source).unwrap())
    }

    #[test]
    fn signatures_read_like_rustfmt() {
        for source in [
            "fn call(&self, name: &str, args: Value) -> Result<Vec<u8>, CallError>",
            "async fn get<'a, T: ?Sized + Send>(&'a mut self, key: &'a [u8; 32]) -> Option<&'static str>",
            "fn new<F>(f: F) -> Self where F: for<'a> Fn(&'a str) -> Box<dyn Future<Output = ()> + Send> + 'static",
            "fn raw(p: *const u8, x: <T as Trait>::Out, t: (u8, u16), u: ()) -> !",
        ] {
            assert_eq!(render(source), source);
        }
        for (source, expected) in [
            ("fn f(a: u8,) -> Vec<(u8, u16,)>", "fn f(a: u8) -> Vec<(u8, u16)>"),
            ("fn g<T,>(t: T) where T: Send,", "fn g<T>(t: T) where T: Send"),
            ("fn h(t: (u8,), u: [(u8,); 2],) -> (u8,)", "fn h(t: (u8,), u: [(u8,); 2]) -> (u8,)"),
        ] {
            assert_eq!(render(source), expected);
        }
    }

    #[test]
    fn attributes_and_braces() {
        let attr: syn::Attribute = syn::parse_quote!(#[cfg(feature = "macros")]);
        assert_eq!(tokens(&attr), "#[cfg(feature = \"macros\")]");
        let variant: syn::Variant = syn::parse_quote!(Text { text: String, meta: Option<Map> });
        assert_eq!(tokens(&variant), "Text { text: String, meta: Option<Map> }");
    }
}
