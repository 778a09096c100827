//! Database settings from the tutorial's environment (PSQL_*) or DATABASE_URL, and the one pool per
//! process built from them.

use std::{path::PathBuf, time::Duration};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::{NoTls, config::SslMode};

use crate::{Error, Result};

#[derive(clap::Args, Clone, Default)]
pub struct DatabaseConfig {
    /// Full connection string; overrides the PSQL_* settings. It may hold a password: --help hides its
    /// value.
    #[arg(long = "database-url", env = "DATABASE_URL", hide_env_values = true)]
    pub url: Option<String>,
    #[arg(long = "psql-host", env = "PSQL_HOST", default_value = "localhost")]
    pub host: String,
    #[arg(long = "psql-port", env = "PSQL_PORT", default_value_t = 5432)]
    pub port: u16,
    #[arg(long = "psql-dbname", env = "PSQL_DBNAME", default_value = "postgres")]
    pub dbname: String,
    #[arg(long = "psql-user", env = "PSQL_USER", default_value = "postgres")]
    pub user: String,
    #[arg(long = "psql-password", env = "PSQL_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A file holding the password (a mounted Secret); wins over PSQL_PASSWORD.
    #[arg(long = "psql-password-file", env = "PSQL_PASSWORD_FILE")]
    pub password_file: Option<PathBuf>,
    /// `disable` or `prefer` (this build has no TLS connector, so `prefer` connects in plain text).
    #[arg(long = "db-sslmode", env = "PSQL_SSLMODE", default_value = "prefer")]
    pub sslmode: String,
    #[arg(long = "db-pool-size", env = "DB_POOL_SIZE", default_value_t = 8)]
    pub pool_size: usize,
    /// Seconds to wait for a connection.
    #[arg(long = "db-connect-timeout", env = "DB_CONNECT_TIMEOUT", default_value_t = 5)]
    pub connect_timeout_seconds: u64,
}

impl std::fmt::Debug for DatabaseConfig {
    // The password never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &self.url.as_ref().map(|_| "<set>"))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("dbname", &self.dbname)
            .field("user", &self.user)
            .field("sslmode", &self.sslmode)
            .field("pool_size", &self.pool_size)
            .finish_non_exhaustive()
    }
}

impl DatabaseConfig {
    pub fn from_url(url: &str) -> Self {
        DatabaseConfig {
            url: Some(url.to_owned()),
            sslmode: "prefer".into(),
            pool_size: 8,
            connect_timeout_seconds: 5,
            ..Default::default()
        }
    }

    fn postgres_config(&self) -> Result<tokio_postgres::Config> {
        let mut config = match &self.url {
            Some(url) => url
                .parse::<tokio_postgres::Config>()
                .map_err(|e| Error::Config(format!("DATABASE_URL is not a valid connection string: {e}")))?,
            None => {
                let mut config = tokio_postgres::Config::new();
                config
                    .host(&self.host)
                    .port(self.port)
                    .dbname(&self.dbname)
                    .user(&self.user);
                config
            }
        };
        if let Some(path) = &self.password_file {
            let password = std::fs::read_to_string(path).map_err(|e| {
                Error::Config(format!("cannot read the password file {}: {e}", path.display()))
            })?;
            config.password(password.trim_end_matches(['\n', '\r']));
        } else if let Some(password) = &self.password {
            config.password(password);
        }
        match self.sslmode.as_str() {
            "disable" => config.ssl_mode(SslMode::Disable),
            "prefer" => config.ssl_mode(SslMode::Prefer),
            other => {
                return Err(Error::Config(format!(
                    "sslmode {other:?} is not supported by this build (no TLS connector): use disable or prefer"
                )));
            }
        };
        if self.port == 0 && self.url.is_none() {
            return Err(Error::Config("PSQL_PORT must be between 1 and 65535".into()));
        }
        config.connect_timeout(Duration::from_secs(self.connect_timeout_seconds.max(1)));
        Ok(config)
    }

    /// The process's pool. Connections are made on demand, so a database that is down now is not an
    /// error here; a configuration that can never work is.
    pub fn connect(&self) -> Result<Pool> {
        let config = self.postgres_config()?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(self.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(self.connect_timeout_seconds.max(1))))
            .create_timeout(Some(Duration::from_secs(self.connect_timeout_seconds.max(1))))
            .build()
            .map_err(|e| Error::Config(format!("cannot build the database pool: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_password() {
        let config = DatabaseConfig {
            password: Some("s3cret".into()),
            url: Some("postgres://u:s3cret@h/db".into()),
            ..Default::default()
        };
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn unusable_settings_are_one_clear_configuration_error() {
        let bad_url = DatabaseConfig::from_url("postgres://host:notaport/db");
        assert!(matches!(bad_url.connect(), Err(Error::Config(m)) if m.contains("DATABASE_URL")));
        let require = DatabaseConfig {
            sslmode: "require".into(),
            ..DatabaseConfig::from_url("postgres://h/db")
        };
        assert!(matches!(require.connect(), Err(Error::Config(m)) if m.contains("sslmode")));
        let missing_file = DatabaseConfig {
            password_file: Some("/nonexistent/pw".into()),
            ..DatabaseConfig::from_url("postgres://h/db")
        };
        assert!(matches!(missing_file.connect(), Err(Error::Config(m)) if m.contains("password file")));
    }
}
