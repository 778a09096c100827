//! Logs on stderr, as text or JSON, filtered by LOG_LEVEL. Text is coloured only for a person at a
//! terminal: escape codes in a file, a pipe or a log collector are noise that every reader must strip.

use std::{ffi::OsString, fmt, io::IsTerminal};

use tracing::field::Field;
use tracing_subscriber::{
    Layer,
    field::MakeExt,
    filter::filter_fn,
    fmt::{MakeWriter, format::Writer},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

use super::cli::LogFormat;
use crate::{Error, Result};

/// Installs the process's subscriber. `filter` was checked when the command line was parsed.
pub fn init(format: LogFormat, filter: &str) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| Error::Config(format!("LOG_LEVEL {filter:?}: {e}")))?;
    let ansi = colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR"));
    match format {
        LogFormat::Json => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .json()
            .init(),
        LogFormat::Text => text(filter, ansi, std::io::stderr).init(),
    }
    Ok(())
}

/// Text logs, one line per event: a value that holds a line break (PostgreSQL's detail and hint, a
/// message the API server sent) has it escaped, as `\n`, so that every line a reader or `grep` sees
/// starts with its time and level. Escape codes in values are escaped too: colour is the formatter's
/// alone, and only when `ansi`. A reconcile's lines carry its span, `reconcile{controller object}`
/// (`namespace/name`); kube-runtime's span around it, which names the object again as
/// `Kind.version.group/name.namespace`, is left out here (JSON logs keep it).
fn text<W>(
    filter: tracing_subscriber::EnvFilter,
    ansi: bool,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let kube_runtime_span = |meta: &tracing::Metadata<'_>| {
        meta.is_span() && meta.target().starts_with("kube_runtime::controller")
    };
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi)
        .fmt_fields(tracing_subscriber::fmt::format::debug_fn(one_line_field).delimited(" "))
        .with_filter(filter_fn(move |meta| !kube_runtime_span(meta)));
    tracing_subscriber::registry().with(filter).with(lines)
}

/// `name=value`, or the message alone, with control characters in the value escaped.
fn one_line_field(writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
    let name = field.name();
    // What the `log` crate's records carry besides their message (tracing-log's bookkeeping), which
    // tracing-subscriber's own field formatter leaves out too.
    if name.starts_with("log.") {
        return Ok(());
    }
    let value = escape_control(&format!("{value:?}"));
    match name {
        "message" => write!(writer, "{value}"),
        name => write!(writer, "{}={value}", name.strip_prefix("r#").unwrap_or(name)),
    }
}

/// `text` with line breaks, escape codes and other control characters written as escapes (`\n`).
fn escape_control(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// Colour on a terminal, unless NO_COLOR is set to anything but the empty string (no-color.org).
fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer into a shared buffer, to read back what the subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;

        fn make_writer(&'w self) -> Captured {
            self.clone()
        }
    }

    #[test]
    fn each_event_is_one_line_whatever_its_values_hold() {
        let captured = Captured::default();
        let filter = tracing_subscriber::EnvFilter::new("info");
        let subscriber = text(filter, false, captured.clone());
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("reconcile", object = %"default/a\nb");
            let _entered = span.enter();
            let error = "ERROR: duplicate key\nDETAIL: Key (id)=(x) already exists.\u{1b}[31m";
            tracing::warn!(%error, "could not write the row");
            tracing::info!(r#type = "Normal", "done");
        });
        let written = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 2, "{written}");
        assert!(!written.contains('\x1b'), "{written}");
        assert!(
            lines[0].contains(
                "reconcile{object=default/a\\nb}: operator::manager::logs::tests: could not write the row \
                 error=ERROR: duplicate key\\nDETAIL: Key (id)=(x) already exists.\\u{1b}[31m"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].ends_with("done type=\"Normal\""), "{}", lines[1]);
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("1".into())));
    }
}
