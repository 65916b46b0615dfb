//! The names uploads are kept under: what a person sees in `list_files` and what a model reads.

/// The longest file name kept, in characters.
pub const MAX_FILENAME_CHARS: usize = 255;

/// The name to keep for an upload: its last path segment, without control characters, at
/// most [`MAX_FILENAME_CHARS`] characters; `upload` when nothing is left.
pub fn clean_filename(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(MAX_FILENAME_CHARS).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." { "upload".to_owned() } else { cleaned.to_owned() }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_paths_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\me\\lab.pdf"), "lab.pdf");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(".."), "upload");
        assert_eq!(clean_filename(""), "upload");
        assert_eq!(clean_filename(&"x".repeat(400)).chars().count(), MAX_FILENAME_CHARS);
    }
}
