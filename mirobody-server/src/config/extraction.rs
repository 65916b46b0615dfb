//! The `extraction` settings: how the text of an uploaded PDF or Word file is read, by a
//! sandboxed child process per document (a document is never parsed inside the server).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mirobody_tools::extract::ExtractLimits;
use serde::Deserialize;

/// Where poppler's `pdftotext` is looked for when `pdftotext` is `auto`.
const PDFTOTEXT_PATHS: [&str; 2] = ["/usr/bin/pdftotext", "/usr/local/bin/pdftotext"];

/// The `extraction` section: the bounds on each reader, and which reads PDFs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ExtractionSettings {
    /// The reader's address space, in MiB: a decompression bomb ends there.
    pub memory_mib: u64,
    /// The reader's CPU time, in whole seconds (the kernel's limit counts no finer).
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub cpu_time: Duration,
    /// How long the server waits for a reader before it kills it.
    #[serde(deserialize_with = "mirobody_mcp::human_duration::deserialize")]
    pub deadline: Duration,
    /// Readers running at once, server-wide; each person has one at a time.
    pub max_running: usize,
    /// What reads PDFs: `auto` (poppler's `pdftotext` where it is installed, else the built-in
    /// pdf-extract), `builtin`, or the path of a `pdftotext`.
    pub pdftotext: String,
}

impl Default for ExtractionSettings {
    fn default() -> Self {
        let limits = ExtractLimits::default();
        ExtractionSettings {
            memory_mib: limits.memory_bytes >> 20,
            cpu_time: Duration::from_secs(limits.cpu_seconds),
            deadline: limits.deadline,
            max_running: limits.max_running,
            pdftotext: "auto".to_owned(),
        }
    }
}

impl ExtractionSettings {
    /// The limits each reader runs under, with the `pdftotext` found for `auto`.
    pub fn limits(&self) -> ExtractLimits {
        let mut limits = ExtractLimits::default();
        limits.memory_bytes = self.memory_mib.saturating_mul(1 << 20);
        limits.cpu_seconds = self.cpu_time.as_secs();
        limits.deadline = self.deadline;
        limits.max_running = self.max_running;
        limits.pdftotext = match self.pdftotext.as_str() {
            "builtin" => None,
            "auto" => PDFTOTEXT_PATHS.iter().map(PathBuf::from).find(|path| path.is_file()),
            path => Some(PathBuf::from(path)),
        };
        limits
    }

    /// Why these settings cannot be used, if they cannot.
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.memory_mib < 64 || self.cpu_time.as_secs() == 0 || self.deadline.is_zero() {
            return Err("extraction needs memory_mib of at least 64, cpu_time of at least 1s and a deadline".into());
        }
        if self.max_running == 0 {
            return Err("extraction.max_running must be at least 1".into());
        }
        match self.pdftotext.as_str() {
            "auto" | "builtin" => Ok(()),
            path if Path::new(path).is_absolute() && Path::new(path).is_file() => Ok(()),
            path => Err(format!(
                "extraction.pdftotext must be auto, builtin, or the absolute path of a pdftotext, not '{path}'"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdftotext_is_found_chosen_or_refused() {
        let mut settings = ExtractionSettings::default();
        assert_eq!(settings.limits().pdftotext.is_some(), PDFTOTEXT_PATHS.iter().any(|p| Path::new(p).is_file()));
        settings.pdftotext = "builtin".into();
        assert_eq!(settings.limits().pdftotext, None);
        settings.validate().unwrap();
        settings.pdftotext = "pdftotext".into();
        assert!(settings.validate().unwrap_err().contains("absolute path"));
        settings.pdftotext = "/nonexistent/pdftotext".into();
        assert!(settings.validate().is_err());
        settings.pdftotext = "auto".into();
        settings.max_running = 0;
        assert!(settings.validate().unwrap_err().contains("max_running"));
    }
}
