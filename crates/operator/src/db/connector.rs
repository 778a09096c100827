//! How the pool opens a connection: deadpool-postgres' `Connect` hook, so that each new connection
//! takes the password as it is now (a rotated Secret) rather than as it was at start.

use std::sync::Arc;

use deadpool_postgres::Connect;
use futures::future::BoxFuture;
use tokio::task::JoinHandle;

use super::password::PasswordSource;

pub struct Connector {
    password: Arc<PasswordSource>,
}

impl Connector {
    pub fn new(password: PasswordSource) -> Self {
        Connector {
            password: Arc::new(password),
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
        Box::pin(async move {
            let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
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
