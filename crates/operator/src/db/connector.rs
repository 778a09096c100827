//! How the pool opens a connection: deadpool-postgres' `Connect` hook, so that each new connection
//! takes the password and the TLS files as they are now (a rotated Secret, a renewed certificate)
//! rather than as they were at start.

use std::sync::Arc;

use deadpool_postgres::Connect;
use futures::future::BoxFuture;
use tokio::task::JoinHandle;

use super::{
    password::PasswordSource,
    tls::{self, ReloadingTls, SslMode, TlsSettings},
};

pub struct Connector {
    password: Arc<PasswordSource>,
    tls: Arc<TlsSettings>,
}

impl Connector {
    pub fn new(password: PasswordSource, tls: Arc<TlsSettings>) -> Self {
        Connector {
            password: Arc::new(password),
            tls,
        }
    }
}

type Opened = (tokio_postgres::Client, JoinHandle<()>);

impl Connect for Connector {
    fn connect(&self, base: &tokio_postgres::Config) -> BoxFuture<'_, Result<Opened, tokio_postgres::Error>> {
        let mut config = base.clone();
        if let Some(password) = self.password.current() {
            config.password(password);
        }
        config.ssl_mode(self.tls.mode.negotiation());
        let tls = ReloadingTls(self.tls.clone());
        Box::pin(async move {
            let (client, connection) = match config.connect(tls.clone()).await {
                Ok(opened) => opened,
                // libpq's prefer: a TLS handshake that fails is tried again in plain text (tokio-postgres
                // itself falls back only when the server declines TLS).
                Err(error) if self.tls.mode == SslMode::Prefer && tls::rustls_failure(&error).is_some() => {
                    tracing::warn!(
                        error = %crate::error::postgres_message(&error),
                        "TLS to PostgreSQL failed; sslmode prefer tries plain text"
                    );
                    config.ssl_mode(tokio_postgres::config::SslMode::Disable);
                    config.connect(tls).await?
                }
                Err(error) => return Err(error),
            };
            // The connection's own task, as deadpool's default hook runs it: its end (the server
            // closed it, a terminated backend) marks the client closed, and the pool then drops it
            // instead of handing it out again.
            let task = tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(error = %crate::error::postgres_message(&error), "a database connection ended");
                }
            });
            Ok((client, task))
        })
    }
}
