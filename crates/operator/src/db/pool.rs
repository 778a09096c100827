//! The process's connection pool, and the deadline every database step runs under.

use std::{future::Future, sync::Arc, time::Duration};

use super::tls::{self, TlsSettings};
use crate::{Error, Result};

/// A pooled connection, which keeps the statements prepared on it.
pub type Client = deadpool_postgres::Client;

/// The connection pool and how long one step may wait for the database. Cheap to clone.
#[derive(Clone)]
pub struct Pool {
    inner: deadpool_postgres::Pool,
    step_timeout: Duration,
    /// The TLS settings connections open with, to say which check a failed handshake did not pass.
    tls: Arc<TlsSettings>,
}

impl Pool {
    pub(super) fn new(inner: deadpool_postgres::Pool, step_timeout: Duration, tls: Arc<TlsSettings>) -> Self {
        Pool {
            inner,
            step_timeout,
            tls,
        }
    }

    pub fn status(&self) -> deadpool_postgres::Status {
        self.inner.status()
    }

    pub(super) fn manager(&self) -> &deadpool_postgres::Manager {
        self.inner.manager()
    }

    /// How long one step (taking or opening a connection, one statement) may go unanswered.
    pub fn step_timeout(&self) -> Duration {
        self.step_timeout
    }

    /// A connection, within the step deadline.
    pub async fn get(&self) -> Result<Client> {
        match tokio::time::timeout(self.step_timeout, self.inner.get()).await {
            Ok(client) => client.map_err(|e| match e {
                // Connecting failed: say what PostgreSQL said (a refused password, say).
                deadpool_postgres::PoolError::Backend(e) => {
                    Error::DatabaseUnavailable(connect_failure(&self.tls, &e))
                }
                other => Error::DatabaseUnavailable(other.to_string()),
            }),
            Err(_) => Err(self.no_answer()),
        }
    }

    /// Runs one step on `client` within the deadline. A PostgreSQL that stops answering without
    /// closing its connections (a hung host, a half-open connection) would otherwise hold the caller,
    /// and the connection, for as long as TCP takes to notice: hours with default keepalives.
    /// On `Err(Abandoned)` the connection must not be used again: see [`discard`].
    pub async fn within_deadline<T>(&self, step: impl Future<Output = T>) -> Result<T, Abandoned> {
        tokio::time::timeout(self.step_timeout, step)
            .await
            .map_err(|_| Abandoned(self.step_timeout))
    }

    /// Runs `step` with a connection of its own, all within the deadline; a connection whose step was
    /// abandoned is closed rather than returned to the pool.
    pub async fn run<T>(&self, step: impl AsyncFnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let mut client = self.get().await?;
        match self.within_deadline(step(&mut client)).await {
            Ok(outcome) => outcome,
            Err(abandoned) => {
                discard(client);
                Err(abandoned.into())
            }
        }
    }

    fn no_answer(&self) -> Error {
        Abandoned(self.step_timeout).into()
    }
}

/// Why a connection could not be opened: PostgreSQL's own words, and for TLS, which check refused
/// the server (a wrong CA, a host name the certificate does not hold) before rustls' words.
fn connect_failure(settings: &TlsSettings, error: &tokio_postgres::Error) -> String {
    let message = crate::error::postgres_message(error);
    match tls::rustls_failure(error) {
        Some(failure) => format!(
            "TLS to PostgreSQL failed, {}: {message}",
            tls::explain(settings, failure)
        ),
        None => message,
    }
}

/// A step that got no answer within its deadline.
#[derive(Debug, Clone, Copy)]
pub struct Abandoned(pub Duration);

impl From<Abandoned> for Error {
    fn from(Abandoned(limit): Abandoned) -> Self {
        Error::DatabaseUnavailable(format!(
            "no answer from PostgreSQL within {} s (--db-connect-timeout + --db-statement-timeout)",
            limit.as_secs()
        ))
    }
}

/// Closes a connection instead of returning it to the pool: a statement on it may still be waiting
/// for an answer, and the next user would wait behind it.
pub fn discard(client: Client) {
    drop(deadpool_postgres::Object::take(client));
}
