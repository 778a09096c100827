//! Logs on stderr, as text or JSON, filtered by LOG_LEVEL. Text is coloured only for a person at a
//! terminal: escape codes in a file, a pipe or a log collector are noise that every reader must strip.

use std::{ffi::OsString, io::IsTerminal};

use super::cli::LogFormat;
use crate::{Error, Result};

/// Installs the process's subscriber. `filter` was checked when the command line was parsed.
pub fn init(format: LogFormat, filter: &str) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| Error::Config(format!("LOG_LEVEL {filter:?}: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ));
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    Ok(())
}

/// Colour on a terminal, unless NO_COLOR is set to anything but the empty string (no-color.org).
fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("1".into())));
    }
}
