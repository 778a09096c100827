//! The one error type of the operator crate.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[source] kube::Error),

    #[error("finalizer handling failed: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),

    #[error("database unavailable: {0}")]
    DatabaseUnavailable(String),

    #[error("database query failed: {}", postgres_message(.0))]
    Database(#[source] tokio_postgres::Error),

    /// PostgreSQL refused a statement (it answered with an SQL state), shared by every row of a batch.
    #[error("the database rejected the statement: {0}")]
    DatabaseRejected(String),

    /// The table exists with columns this operator cannot write; fixing needs a human.
    #[error("table is incompatible: {0}")]
    TableIncompatible(String),

    /// The object asks for something that can never succeed as written; retrying will not help.
    #[error("invalid spec: {0}")]
    InvalidSpec(String),

    /// Something we would write is already there and owned by someone else.
    #[error("not owned: {0}")]
    NotOwned(String),

    /// Start-up configuration that cannot work (bad port, unreadable password file, ...).
    #[error("configuration error: {0}")]
    Config(String),

    /// Another replica holds the Lease now (taken over, or not renewed in time): this one stops at once
    /// so that the new leader reconciles alone, and its restart waits as a standby.
    #[error("leadership lost; stopping so that the new leader reconciles alone")]
    LeadershipLost,

    /// A controller's task panicked: a bug. The process exits so that its restart starts clean.
    #[error("controller {controller} panicked: {message}")]
    ControllerPanicked {
        controller: &'static str,
        message: String,
    },

    /// Leader election gave up before this replica led (the Lease could not be read or written); the
    /// process exits so that its restart tries again.
    #[error("leader election stopped: {0}")]
    LeaderElection(String),

    #[error("serialization failed: {0}")]
    Serialization(#[source] serde_json::Error),

    #[error("i/o failed: {0}")]
    Io(#[source] std::io::Error),
}

impl Error {
    /// Terminal errors are reported (status condition, Event, metric) but not retried with back-off:
    /// only a change to the object can fix them, and that change triggers a reconcile by itself.
    pub fn is_terminal(&self) -> bool {
        matches!(self.root(), Error::InvalidSpec(_) | Error::NotOwned(_))
    }

    /// The error a reconcile itself returned, seen through the finalizer helper's wrapping.
    pub fn root(&self) -> &Error {
        use kube::runtime::finalizer::Error as Finalizer;
        match self {
            Error::Finalizer(inner) => match inner.as_ref() {
                Finalizer::ApplyFailed(e) | Finalizer::CleanupFailed(e) => e.root(),
                _ => self,
            },
            other => other,
        }
    }
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        Error::Kube(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Serialization(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

/// What PostgreSQL or the connection said, on one line. tokio-postgres' own text is only the kind
/// ("db error"), with PostgreSQL's message, detail and hint in its source on lines of their own; a
/// status condition, an Event or a log line needs them together.
pub fn postgres_message(error: &tokio_postgres::Error) -> String {
    let Some(db) = error.as_db_error() else {
        return match std::error::Error::source(error) {
            Some(cause) => format!("{error}: {cause}"),
            None => error.to_string(),
        };
    };
    let mut message = format!("{}: {}", db.severity(), db.message());
    if let Some(detail) = db.detail() {
        message.push_str(&format!(" (detail: {detail})"));
    }
    if let Some(hint) = db.hint() {
        message.push_str(&format!(" (hint: {hint})"));
    }
    message.replace(['\r', '\n'], " ")
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
