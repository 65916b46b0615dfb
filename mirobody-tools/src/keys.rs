//! The syntax of a storage key, checked before a key a model passed reaches the store.
//!
//! It is `mirobody_store::valid_key`'s, restated here so that `read_file` and the `file://`
//! resources work without the `uploads` feature (and so without mirobody-store); the tests
//! below hold the two equal.

/// The longest object key the store accepts.
const MAX_KEY_LEN: usize = 512;

/// Whether `key` is a key the store accepts: segments of `A-Z a-z 0-9 . _ -` separated by `/`,
/// no empty, `.` or `..` segment, at most 512 bytes.
pub(crate) fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn keys_are_checked_as_the_store_checks_them() {
        let long = "a".repeat(MAX_KEY_LEN);
        let too_long = "a".repeat(MAX_KEY_LEN + 1);
        for key in ["abc", "u/1/report.pdf", "f_0a.trans", "A-b_c.d", long.as_str()] {
            assert!(valid_key(key) && mirobody_store::valid_key(key), "{key}");
        }
        for key in ["", "/abs", "a//b", "a/../b", "..", "a/./b", "a b", "a\\b", "é", "a?b", too_long.as_str()] {
            assert!(!valid_key(key) && !mirobody_store::valid_key(key), "{key}");
        }
    }

    proptest! {
        #[test]
        fn any_key_is_valid_here_exactly_when_the_store_takes_it(key in "[a-zA-Z0-9._/ é?-]{0,12}|[a.]{500,520}") {
            prop_assert_eq!(valid_key(&key), mirobody_store::valid_key(&key), "{}", key);
        }
    }
}
