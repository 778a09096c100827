//! Database settings from the tutorial's environment (PSQL_*) or DATABASE_URL, and the one pool per
//! process built from them. Every setting is a flag and an environment variable, read by clap alike.

use std::{path::PathBuf, time::Duration};

use super::{
    Pool,
    connector::Connector,
    password::PasswordSource,
    root_certificates::RootCertificates,
    tls::{SslMode, TlsSettings},
    url_tls::{UrlTls, split_tls},
};
use crate::{Error, Result};
use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod, Runtime};

const DEFAULT_HOST: &str = "localhost";
const DEFAULT_PORT: u16 = 5432;
const DEFAULT_DBNAME: &str = "postgres";
const DEFAULT_USER: &str = "postgres";

#[derive(clap::Args, Clone, Default)]
pub struct DatabaseConfig {
    /// Full connection string; overrides the PSQL_* settings, the TLS ones included (sslmode,
    /// sslrootcert, sslcert, sslkey). It may hold a password: --help hides its value.
    #[arg(long = "database-url", env = "DATABASE_URL", hide_env_values = true)]
    pub url: Option<String>,
    /// [default: localhost]
    #[arg(long = "psql-host", env = "PSQL_HOST")]
    pub host: Option<String>,
    /// [default: 5432]
    #[arg(long = "psql-port", env = "PSQL_PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// [default: postgres]
    #[arg(long = "psql-dbname", env = "PSQL_DBNAME")]
    pub dbname: Option<String>,
    /// [default: postgres]
    #[arg(long = "psql-user", env = "PSQL_USER")]
    pub user: Option<String>,
    #[arg(long = "psql-password", env = "PSQL_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A file holding the password (a mounted Secret); wins over PSQL_PASSWORD. Read again for each
    /// new connection, so that a rotated password is used without a restart.
    #[arg(long = "psql-password-file", env = "PSQL_PASSWORD_FILE")]
    pub password_file: Option<PathBuf>,
    /// libpq's sslmode: disable, prefer (TLS when the server offers it), require (TLS; the server's
    /// certificate checked only against --db-sslrootcert, when given), verify-ca (signed by a CA of
    /// --db-sslrootcert), verify-full (and naming the host) [default: prefer]
    #[arg(long = "db-sslmode", env = "PSQL_SSLMODE", value_parser = parse_sslmode)]
    pub sslmode: Option<SslMode>,
    /// PEM file of the CAs that sign the server's certificate (a mounted Secret or ConfigMap), or
    /// `system`: the system's CA store (the bundle SSL_CERT_FILE names, when set), which makes
    /// verify-full the default sslmode and refuses weaker ones. Read again for each new connection, so
    /// that a renewed CA needs no restart.
    #[arg(long = "db-sslrootcert", env = "PSQL_SSLROOTCERT")]
    pub sslrootcert: Option<PathBuf>,
    /// PEM file of a client certificate (and its chain), for pg_hba's `cert` method or `clientcert`;
    /// needs --db-sslkey. Read again for each new connection.
    #[arg(long = "db-sslcert", env = "PSQL_SSLCERT")]
    pub sslcert: Option<PathBuf>,
    /// PEM file of the client certificate's key.
    #[arg(long = "db-sslkey", env = "PSQL_SSLKEY")]
    pub sslkey: Option<PathBuf>,
    #[arg(long = "db-pool-size", env = "DB_POOL_SIZE", default_value_t = 8)]
    pub pool_size: usize,
    /// Seconds to wait for a connection (to open one, or for a free one in the pool).
    #[arg(long = "db-connect-timeout", env = "DB_CONNECT_TIMEOUT", default_value_t = 5, value_parser = at_least_a_second)]
    pub connect_timeout_seconds: u64,
    /// Seconds a statement may run: PostgreSQL cancels it after this (statement_timeout). A database
    /// step that gets no answer within --db-connect-timeout plus this (a server that hangs, a
    /// half-open connection) is abandoned, its connection closed, and the resource reports
    /// DatabaseUnavailable.
    #[arg(long = "db-statement-timeout", env = "DB_STATEMENT_TIMEOUT", default_value_t = 10, value_parser = at_least_a_second)]
    pub statement_timeout_seconds: u64,
    /// Seconds a connection may be silent before TCP keepalive probes it (every third of this, three
    /// times); data unacknowledged for three times this long closes it (TCP_USER_TIMEOUT). Finds
    /// connections whose server or network went away without closing them.
    #[arg(long = "db-keepalive", env = "DB_KEEPALIVE", default_value_t = 10, value_parser = at_least_a_second)]
    pub keepalive_seconds: u64,
}

fn parse_sslmode(text: &str) -> std::result::Result<SslMode, String> {
    text.parse().map_err(|error| match error {
        Error::Config(message) => message,
        other => other.to_string(),
    })
}

/// A connection string as tokio-postgres reads it, once the TLS settings it does not know are taken
/// out; those come back beside it.
pub fn parse_connection_string(url: &str) -> Result<(tokio_postgres::Config, UrlTls)> {
    let (rest, tls) = split_tls(url)?;
    let config = rest
        .parse::<tokio_postgres::Config>()
        .map_err(|e| Error::Config(format!("DATABASE_URL is not a valid connection string: {e}")))?;
    Ok((config, tls))
}

fn at_least_a_second(text: &str) -> std::result::Result<u64, String> {
    match text.parse::<u64>().map_err(|e| e.to_string())? {
        0 => Err("must be at least 1 second".into()),
        seconds => Ok(seconds),
    }
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
            .field("sslrootcert", &self.sslrootcert)
            .field("sslcert", &self.sslcert)
            .field("sslkey", &self.sslkey)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout_seconds", &self.connect_timeout_seconds)
            .field("statement_timeout_seconds", &self.statement_timeout_seconds)
            .field("keepalive_seconds", &self.keepalive_seconds)
            .finish_non_exhaustive()
    }
}

impl DatabaseConfig {
    /// The defaults of every flag, with `url` as DATABASE_URL.
    pub fn from_url(url: &str) -> Self {
        DatabaseConfig {
            url: Some(url.to_owned()),
            pool_size: 8,
            connect_timeout_seconds: 5,
            statement_timeout_seconds: 10,
            keepalive_seconds: 10,
            ..Default::default()
        }
    }

    /// Whether a flag or the environment says where the database is (`operator dev` starts its own
    /// otherwise).
    pub fn names_a_database(&self) -> bool {
        self.url.is_some()
            || self.host.is_some()
            || self.port.is_some()
            || self.dbname.is_some()
            || self.user.is_some()
    }

    pub fn host(&self) -> &str {
        self.host.as_deref().unwrap_or(DEFAULT_HOST)
    }

    pub fn port(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PORT)
    }

    pub fn dbname(&self) -> &str {
        self.dbname.as_deref().unwrap_or(DEFAULT_DBNAME)
    }

    pub fn user(&self) -> &str {
        self.user.as_deref().unwrap_or(DEFAULT_USER)
    }

    /// How long one database step (taking or opening a connection, then one statement) may go
    /// unanswered before it is abandoned. Longer than the statement timeout, so that a server that
    /// answers reports its own cancellation first.
    pub fn step_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_seconds.max(1) + self.statement_timeout_seconds.max(1))
    }

    /// The connection settings but the password (set as each connection opens), and TLS's.
    fn postgres_config(&self) -> Result<(tokio_postgres::Config, TlsSettings)> {
        let (mut config, in_url) = match &self.url {
            Some(url) => parse_connection_string(url)?,
            None => {
                let mut config = tokio_postgres::Config::new();
                config
                    .host(self.host())
                    .port(self.port())
                    .dbname(self.dbname())
                    .user(self.user());
                (config, UrlTls::default())
            }
        };
        let tls = TlsSettings::new(
            in_url.mode.or(self.sslmode),
            in_url
                .root_cert
                .or_else(|| self.sslrootcert.clone())
                .map(RootCertificates::from),
            in_url.client_cert.or_else(|| self.sslcert.clone()),
            in_url.client_key.or_else(|| self.sslkey.clone()),
        );
        tls.check()?;
        config.ssl_mode(tls.mode.negotiation());
        let connect = Duration::from_secs(self.connect_timeout_seconds.max(1));
        let keepalive = Duration::from_secs(self.keepalive_seconds.max(1));
        // Each batch statement is prepared once per connection, usually while its table is still
        // empty, and PostgreSQL's plan cache then keeps the generic plan it made for an empty table
        // (a sequential scan) however large the table grows: a plan made for each execution's own
        // values costs a little planning instead. Options given in DATABASE_URL come after it, so a
        // plan_cache_mode given there wins.
        let plan_cache_mode = "-c plan_cache_mode=force_custom_plan";
        // The server cancels what runs too long itself; options given in DATABASE_URL come first, so
        // ours wins where both set statement_timeout.
        let statement_timeout = format!("-c statement_timeout={}s", self.statement_timeout_seconds.max(1));
        let given = config.get_options().filter(|given| !given.is_empty());
        let options = [Some(plan_cache_mode), given, Some(statement_timeout.as_str())]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        config
            .options(options)
            .connect_timeout(connect)
            .keepalives(true)
            .keepalives_idle(keepalive)
            .keepalives_interval((keepalive / 3).max(Duration::from_secs(1)))
            .keepalives_retries(3)
            .tcp_user_timeout(keepalive * 3);
        Ok((config, tls))
    }

    /// The process's pool. Connections are made on demand, so a database that is down now is not an
    /// error here; a configuration that can never work is.
    pub fn connect(&self) -> Result<Pool> {
        let (config, tls) = self.postgres_config()?;
        let tls = std::sync::Arc::new(tls);
        // The password and the TLS files are read as each connection opens: a rotated password or a
        // renewed certificate is used from the next connection on.
        let password = PasswordSource::new(self.password_file.as_deref(), self.password.as_deref())?;
        let manager = Manager::from_connect(
            config,
            Connector::new(password, tls.clone()),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let connect = Duration::from_secs(self.connect_timeout_seconds.max(1));
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(self.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(connect))
            .create_timeout(Some(connect))
            .build()
            .map_err(|e| Error::Config(format!("cannot build the database pool: {e}")))?;
        Ok(Pool::new(pool, self.step_timeout(), tls))
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
        let unverifiable = DatabaseConfig {
            sslmode: Some(SslMode::VerifyFull),
            ..DatabaseConfig::from_url("postgres://h/db")
        };
        assert!(matches!(unverifiable.connect(), Err(Error::Config(m)) if m.contains("sslrootcert")));
        let missing_file = DatabaseConfig {
            password_file: Some("/nonexistent/pw".into()),
            ..DatabaseConfig::from_url("postgres://h/db")
        };
        assert!(matches!(missing_file.connect(), Err(Error::Config(m)) if m.contains("password file")));
    }

    #[test]
    fn every_connection_carries_a_statement_timeout_keepalives_and_a_user_timeout() {
        let config = DatabaseConfig {
            statement_timeout_seconds: 7,
            keepalive_seconds: 9,
            ..DatabaseConfig::from_url("postgres://h/db?options=-c%20search_path%3Dapp")
        };
        let (pg, _) = config.postgres_config().unwrap();
        assert_eq!(
            pg.get_options(),
            Some("-c plan_cache_mode=force_custom_plan -c search_path=app -c statement_timeout=7s")
        );
        assert!(pg.get_keepalives());
        assert_eq!(pg.get_keepalives_idle(), Duration::from_secs(9));
        assert_eq!(pg.get_keepalives_interval(), Some(Duration::from_secs(3)));
        assert_eq!(pg.get_tcp_user_timeout(), Some(&Duration::from_secs(27)));
        assert_eq!(pg.get_connect_timeout(), Some(&Duration::from_secs(5)));
        assert_eq!(config.step_timeout(), Duration::from_secs(12));
    }

    #[test]
    fn tls_settings_in_the_url_win_over_the_flags_and_prefer_is_the_default() {
        let (_, tls) = DatabaseConfig::from_url("postgres://h/db")
            .postgres_config()
            .unwrap();
        assert_eq!(tls.mode, SslMode::Prefer, "libpq's default");
        let flags = DatabaseConfig {
            sslmode: Some(SslMode::Require),
            sslrootcert: Some("/flag/ca.crt".into()),
            ..DatabaseConfig::from_url("postgres://h/db?sslmode=disable")
        };
        let (pg, tls) = flags.postgres_config().unwrap();
        assert_eq!(tls.mode, SslMode::Disable, "the URL's sslmode wins");
        assert_eq!(pg.get_ssl_mode(), tokio_postgres::config::SslMode::Disable);
        assert_eq!(
            tls.root_cert,
            Some(RootCertificates::File("/flag/ca.crt".into())),
            "the flag fills what the URL leaves"
        );
        let psql = DatabaseConfig {
            sslmode: Some(SslMode::Require),
            ..Default::default()
        };
        let (pg, tls) = psql.postgres_config().unwrap();
        assert_eq!(
            (tls.mode, pg.get_ssl_mode()),
            (SslMode::Require, tokio_postgres::config::SslMode::Require)
        );
        assert_eq!(parse_sslmode("verify-ca"), Ok(SslMode::VerifyCa));
        assert!(parse_sslmode("full").unwrap_err().starts_with("sslmode \"full\""));
    }

    #[test]
    fn a_database_is_named_by_any_location_setting_and_defaults_fill_the_rest() {
        let nothing = DatabaseConfig::default();
        assert!(!nothing.names_a_database());
        assert_eq!(
            (nothing.host(), nothing.port(), nothing.dbname(), nothing.user()),
            ("localhost", 5432, "postgres", "postgres")
        );
        let port_only = DatabaseConfig {
            port: Some(6543),
            ..Default::default()
        };
        assert!(port_only.names_a_database());
        let password_only = DatabaseConfig {
            password: Some("pw".into()),
            ..Default::default()
        };
        assert!(
            !password_only.names_a_database(),
            "a password alone says nothing about where"
        );
    }
}
