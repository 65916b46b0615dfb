//! JSON strings by hand, for the code that reads and writes messages on every call: where a
//! string ends, and a string written as serde_json writes it, for less.
//!
//! serde_json looks at a string's bytes one at a time, through its writer trait, to escape
//! it; these look at eight at a time. The bytes written are serde_json's, byte for byte.
//!
//! ```
//! let mut out = Vec::new();
//! mirobody_core::json::write_str(&mut out, "say \"hi\"\n");
//! assert_eq!(out, serde_json::to_vec("say \"hi\"\n").unwrap());
//! assert_eq!(mirobody_core::json::special_byte(b"name\": 1"), Some(4));
//! ```

/// Where the first byte of `bytes` is that a JSON string cannot hold as it is: `"` (which
/// ends it), `\` or a control character (below 0x20); `None` when there is none.
///
/// Eight bytes at a time: each test below sets the high bit of every byte it looks for, and
/// perhaps of bytes after those (a borrow carries), never of bytes before them, so the lowest
/// bit set marks the first byte found.
#[inline(always)]
pub fn special_byte(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH_BITS: u64 = ONES << 7;
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let quote = zero_in(word ^ (ONES * u64::from(b'"')));
        let backslash = zero_in(word ^ (ONES * u64::from(b'\\')));
        let control = word.wrapping_sub(ONES * 0x20) & !word;
        let found = (quote | backslash | control) & HIGH_BITS;
        if found != 0 {
            return Some(offset + found.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    let tail = words.remainder().iter().position(|&b| is_special(b))?;
    Some(offset + tail)
}

/// Appends `text` to `out` as a JSON string, quoted and escaped: what `serde_json` writes for
/// it.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text.as_bytes();
    while let Some(at) = special_byte(rest) {
        out.extend_from_slice(&rest[..at]);
        let byte = rest[at];
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\x08' => b'b',
            b'\x0c' => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            _ => 0,
        };
        if short == 0 {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn bytes_with_specials() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![any::<u8>(), proptest::sample::select(vec![b'"', b'\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, b'a'])],
            0..40,
        )
    }

    proptest! {
        /// Eight bytes at a time finds what one at a time does.
        #[test]
        fn special_bytes_are_found_word_by_word_as_byte_by_byte(bytes in bytes_with_specials()) {
            prop_assert_eq!(special_byte(&bytes), bytes.iter().position(|&b| is_special(b)));
        }

        /// Every string is written as serde_json writes it.
        #[test]
        fn strings_are_written_as_serde_json_writes_them(bytes in bytes_with_specials(), text in ".*") {
            for text in [String::from_utf8_lossy(&bytes).into_owned(), text] {
                // Appended after what is already there.
                let mut out = b"[".to_vec();
                write_str(&mut out, &text);
                let serde = serde_json::to_vec(&text).unwrap();
                prop_assert_eq!(&out[1..], serde.as_slice());
            }
        }
    }

    #[test]
    fn every_control_character_is_escaped_as_serde_json_escapes_it() {
        let text: String = (0u8..0x20).map(char::from).chain("\"\\/\u{7f}é".chars()).collect();
        let mut out = Vec::new();
        write_str(&mut out, &text);
        assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&text).unwrap());
        assert_eq!(special_byte(b""), None);
        assert_eq!(special_byte(b"abcdefgh\"ij"), Some(8), "in the tail, past a whole word");
    }
}
