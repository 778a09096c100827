//! `operator dev`: the whole product on one machine with nothing configured. The embedded API server,
//! the webhooks (on loopback, under a throwaway CA, registered with that API server), the CRDs, the
//! chosen controllers and, when postgres-writer is among them, a throwaway PostgreSQL unless a flag or
//! the environment names a database. What it prints never holds a password.

use std::{
    io::Write,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

use tokio::sync::watch;

use super::{
    cli::{ControllerName, DevArgs},
    crds,
    run::{self, Manager},
};
use crate::{
    Error, Result,
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
    webhook::{
        configurations::{self, Endpoint},
        tls::{self, ThrowawayCa},
    },
};

/// The database `operator dev` runs postgres-writer against.
enum Database {
    /// postgres-writer is not among the controllers: no database at all.
    None,
    /// The one a flag or the environment names.
    Given,
    /// A throwaway cluster, stopped and deleted when `dev` ends; its password is in `password_file`.
    Throwaway {
        postgres: ThrowawayPostgres,
        password_file: PathBuf,
    },
}

pub async fn dev(mut args: DevArgs, shutdown: watch::Receiver<bool>) -> Result<()> {
    let server = apiserver::ApiServer::start(apiserver::Config {
        addr: args.apiserver_addr,
        simulated_node: args.simulated_node,
        ..Default::default()
    })
    .await
    .map_err(|e| Error::Config(format!("embedded API server on {}: {e}", args.apiserver_addr)))?;
    server
        .write_kubeconfig(&args.kubeconfig)
        .map_err(|e| Error::Config(format!("writing {}: {e}", args.kubeconfig.display())))?;
    let client = server.client();

    let kubeconfig = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    let database = if !args.run.controllers.contains(&ControllerName::PostgresWriter) {
        Database::None
    } else if args.run.database.names_a_database() {
        Database::Given
    } else {
        let postgres = ThrowawayPostgres::start().await?;
        let password_file = kubeconfig.with_file_name("pgpass");
        write_private(&password_file, &pgpass_line(&postgres))?;
        // Only where the database is changes; timeouts and pool size stay as given.
        args.run.database = DatabaseConfig {
            url: Some(postgres.url()),
            ..args.run.database
        };
        Database::Throwaway {
            postgres,
            password_file,
        }
    };

    // The webhooks listen before the CRDs and configurations that send the API server to them exist:
    // from the first request on, VoteConfigs convert and default, and PostgresWriters are validated.
    let manager = Manager::start(&args.run, &client).await?;
    let webhooks = serve_webhooks(&manager, &args).await?;
    crds::install(&client, configurations::crds(&webhooks.endpoint)).await?;
    // The embedded API server reads them at every request: they apply from the next request on.
    super::local_webhooks::register_admission(&client, &webhooks.endpoint, "operator-dev").await?;

    println!("API server: {}", server.url());
    // Requests are authorized by RBAC; the one kubeconfig written is the administrator's.
    println!(
        "Kubeconfig: {} (the administrator, in system:masters; RBAC authorizes everyone else)",
        kubeconfig.display()
    );
    println!(
        "Webhooks: {} (conversion, defaulting, validation; under a CA made for this run)",
        webhooks.base
    );
    let location = match &database {
        Database::None => None,
        Database::Given => Some(location(&args.run.database)?),
        Database::Throwaway { postgres, .. } => Some(format!(
            "postgres://{}@127.0.0.1:{}/postgres",
            crate::db::throwaway::USER,
            postgres.port()
        )),
    };
    match (&database, &location) {
        (Database::Throwaway { password_file, .. }, Some(location)) => {
            println!(
                "Database: {location} (throwaway; its password is in {})",
                password_file.display()
            );
        }
        (Database::Given, Some(location)) => {
            println!("Database: {location} (password, if any, as you configured it)");
        }
        _ => println!("Database: none (postgres-writer is not running)"),
    }
    println!();
    println!("Next, in another terminal:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    if let Database::Throwaway { password_file, .. } = &database {
        println!("  export PGPASSFILE={}", password_file.display());
    }
    println!("  kubectl apply -f config/samples/");
    println!("  kubectl get postgreswriters,voteconfigs,webapps");
    if let Some(location) = &location {
        println!("  psql \"{location}\" -c 'select * from students'");
    }
    println!("Ctrl-C stops everything.");
    let result = manager.run_controllers(client, args.run, shutdown).await;
    server.shutdown().await;
    if let Database::Throwaway { password_file, .. } = &database {
        // The cluster it opens goes with this process.
        let _ = std::fs::remove_file(password_file);
    }
    result
}

/// The webhook server of dev mode.
struct DevWebhooks {
    /// `https://127.0.0.1:<port>`.
    base: String,
    /// Where the API server reaches them, trusting the CA made for this run.
    endpoint: Endpoint,
    /// The certificate and key, removed when dev mode ends.
    _certificate: tempfile::TempDir,
}

/// Serves the webhooks on `--webhook-bind-address` (loopback by default) with a certificate from a
/// CA made for this run.
async fn serve_webhooks(manager: &Manager, args: &DevArgs) -> Result<DevWebhooks> {
    let addr = run::webhook_address(&args.run)?.ok_or_else(|| {
        Error::Config(
            "dev mode serves the webhooks itself (VoteConfig needs its conversion webhook): give \
             --webhook-bind-address an address such as 127.0.0.1:0, not 0"
                .into(),
        )
    })?;
    let mut names = vec!["127.0.0.1".to_owned(), "::1".to_owned(), "localhost".to_owned()];
    if !addr.ip().is_unspecified() {
        names.push(addr.ip().to_string());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ca = ThrowawayCa::generate(&names)?;
    let dir = tempfile::Builder::new()
        .prefix("operator-dev-webhook-")
        .tempdir()?;
    ca.write_to(dir.path())?;
    let server = manager
        .serve_webhooks(addr, tls::server_config(dir.path())?, &args.run)
        .await?;
    let base = format!("https://{}", reachable(server.bound));
    Ok(DevWebhooks {
        endpoint: Endpoint::Url {
            base: base.clone(),
            ca_pem: ca.ca_pem,
        },
        base,
        _certificate: dir,
    })
}

/// The address the API server dials for a listener bound at `bound`: loopback for every interface.
fn reachable(bound: SocketAddr) -> SocketAddr {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bound.port())
}

/// `postgres://user@host:port/dbname` of a configured database: where it is, never its password,
/// however the configuration spells it (URL, key=value string, PSQL_*).
fn location(config: &DatabaseConfig) -> Result<String> {
    let Some(url) = &config.url else {
        return Ok(format!(
            "postgres://{}@{}:{}/{}",
            config.user(),
            config.host(),
            config.port(),
            config.dbname()
        ));
    };
    let (parsed, _tls) = crate::db::parse_connection_string(url)?;
    let host = match parsed.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = parsed.get_ports().first().copied().unwrap_or(5432);
    let user = parsed.get_user().unwrap_or("postgres");
    let dbname = parsed.get_dbname().unwrap_or(user);
    Ok(format!("postgres://{user}@{host}:{port}/{dbname}"))
}

/// A line of a PostgreSQL password file (`PGPASSFILE`), which psql reads without the password ever
/// appearing on a command line, in the environment or in a terminal.
fn pgpass_line(postgres: &ThrowawayPostgres) -> String {
    format!(
        "127.0.0.1:{}:*:{}:{}\n",
        postgres.port(),
        crate::db::throwaway::USER,
        postgres.password()
    )
}

/// Writes `contents` to `path`, readable by this user alone (psql ignores a password file others can
/// read), creating its directory.
fn write_private(path: &Path, contents: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::Config(format!("writing {}: {e}", path.display())))?;
    // `mode` applies to a new file only; one left from an earlier run is narrowed too.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_on_every_interface_is_reached_on_loopback() {
        let reached = |bound: &str| reachable(bound.parse().unwrap()).to_string();
        assert_eq!(reached("0.0.0.0:9443"), "127.0.0.1:9443");
        assert_eq!(reached("[::]:9443"), "[::1]:9443");
        assert_eq!(reached("127.0.0.1:40000"), "127.0.0.1:40000");
        assert_eq!(reached("192.0.2.7:9443"), "192.0.2.7:9443");
    }

    #[test]
    fn a_location_names_host_port_user_and_database_but_never_the_password() {
        let url = DatabaseConfig::from_url("postgres://writer:s3cret@db.example:6543/app?sslmode=disable");
        assert_eq!(location(&url).unwrap(), "postgres://writer@db.example:6543/app");
        let keywords = DatabaseConfig::from_url("host=db user=writer password=s3cret dbname=app");
        assert_eq!(location(&keywords).unwrap(), "postgres://writer@db:5432/app");
        let psql = DatabaseConfig {
            host: Some("db".into()),
            password: Some("s3cret".into()),
            ..Default::default()
        };
        assert_eq!(location(&psql).unwrap(), "postgres://postgres@db:5432/postgres");
    }
}
