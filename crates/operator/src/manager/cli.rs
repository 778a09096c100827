//! The `operator` command line. Flags follow controller-runtime's names where it has them; every flag
//! also reads an environment variable.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::{controllers::postgres_writer, db::DatabaseConfig};

#[derive(Parser, Debug)]
#[command(
    name = "operator",
    version,
    about = "Operators for PostgresWriter, VoteConfig and WebApp"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Log filter: a level (trace, debug, info, warn, error, off) or `target=level` pairs, e.g.
    /// `operator=debug,kube=info`.
    #[arg(long, env = "LOG_LEVEL", default_value = "info", global = true, value_parser = log_filter)]
    pub log_level: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controllers against the cluster in KUBECONFIG (or in-cluster configuration).
    Run(RunArgs),
    /// Print every CRD as multi-document YAML, or write one file per CRD with --out-dir.
    Crds {
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Apply the CRDs to the cluster and wait until they are established.
    Install,
    /// Delete the CRDs (and with them every resource of these kinds) from the cluster.
    Uninstall,
    /// After an upgrade that changed a storage version: rewrite every object in it, then drop the old
    /// versions from the CRDs' status.storedVersions.
    MigrateStorage,
    /// Print the webhook Service and configurations (in-cluster) as multi-document YAML, or write them
    /// into --out-dir.
    Webhooks {
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Everything on this machine: the embedded API server, every controller, and a throwaway
    /// PostgreSQL unless --database-url/--psql-* (or their environment variables) name one.
    #[command(hide = cfg!(not(feature = "dev")))]
    Dev(DevArgs),
}

impl Command {
    /// The runtime's worker threads: `--worker-threads`, else one; for `dev`, whose embedded API
    /// server serves from the same runtime, `None` unless given: tokio's default, one per core.
    pub fn worker_threads(&self) -> Option<usize> {
        match self {
            Command::Run(args) => Some(args.worker_threads.map_or(1, usize::from)),
            Command::Dev(args) => args.run.worker_threads.map(usize::from),
            _ => Some(1),
        }
    }
}

/// Where `operator dev` serves /metrics and the probes unless told otherwise: loopback.
pub const DEV_METRICS_BIND_ADDRESS: &str = "127.0.0.1:8080";
pub const DEV_HEALTH_PROBE_BIND_ADDRESS: &str = "127.0.0.1:8081";
/// Where `operator dev` serves the webhooks unless told otherwise: a free loopback port, which it
/// registers with its embedded API server.
pub const DEV_WEBHOOK_BIND_ADDRESS: &str = "127.0.0.1:0";

/// Where controller-runtime's webhook server looks for its certificate, and so where ours does.
pub const DEFAULT_WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// How long a stopping replica keeps serving the webhooks by default: a few kube-proxy syncs (its
/// minimum sync period is 1 s) after the EndpointSlice update, with room for a loaded node.
pub const DEFAULT_SHUTDOWN_DRAIN_SECONDS: u64 = 5;

/// Which controllers to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ControllerName {
    PostgresWriter,
    VoteConfig,
    WebApp,
}

/// `--local-webhooks`: whether `operator run` outside a cluster serves the webhooks itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LocalWebhooks {
    /// When VoteConfig's CRD converts through a Service that does not exist (as `make install` leaves
    /// it) or through a URL (an earlier run's).
    Auto,
    /// Whenever VoteConfig's CRD is installed, even if a deployed operator serves it (debugging one).
    Always,
    /// Never: the webhooks are served only with a certificate in --webhook-cert-dir.
    Never,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Controllers to run (comma-separated); all by default. Without postgres-writer no database is needed.
    #[arg(long, env = "CONTROLLERS", value_enum, value_delimiter = ',', default_values_t = [ControllerName::PostgresWriter, ControllerName::VoteConfig, ControllerName::WebApp])]
    pub controllers: Vec<ControllerName>,
    /// Where /metrics is served (`:8443` means every interface; `0` turns it off). `dev` serves it on
    /// loopback by default.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8443")]
    pub metrics_bind_address: String,
    /// Serve /metrics over HTTPS, only to a bearer token the API server authenticates (TokenReview)
    /// and authorizes for `get` on the URL /metrics (SubjectAccessReview), as controller-runtime's
    /// secure metrics; `false`: plain HTTP to anyone who reaches the port. Unset: secure, except on a
    /// loopback address (`dev`'s default), which only this machine reaches.
    #[arg(long, env = "METRICS_SECURE", action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub metrics_secure: Option<bool>,
    /// The directory with tls.crt and tls.key for secure metrics (read again when they change);
    /// without it, a self-signed certificate made at start, as controller-runtime makes one.
    #[arg(long, env = "METRICS_CERT_DIR")]
    pub metrics_cert_dir: Option<PathBuf>,
    /// Where /healthz and /readyz are served (`:8081` means every interface; `0` turns them off). `dev`
    /// serves them on loopback by default.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Where the webhooks (conversion, defaulting, validation) are served over HTTPS, on every replica
    /// (`0` turns them off). Served only when --webhook-cert-dir holds a certificate. `dev` serves them
    /// on a free loopback port by default, always.
    #[arg(long, env = "WEBHOOK_BIND_ADDRESS", default_value = ":9443")]
    pub webhook_bind_address: String,
    /// The directory with the webhook server's tls.crt and tls.key (cert-manager's Secret in a
    /// cluster). Without them at the default place the webhooks are off; a directory given explicitly
    /// must hold them. `dev` makes its own, under a CA made for the run, and does not read this.
    #[arg(long, env = "WEBHOOK_CERT_DIR", default_value = DEFAULT_WEBHOOK_CERT_DIR)]
    pub webhook_cert_dir: PathBuf,
    /// Issue the webhook certificate in the operator itself and keep it in this Secret of its
    /// namespace (shared by the replicas, renewed before it expires), and put its CA into the webhook
    /// configurations and CRDs that call --webhook-service. Empty: serve from --webhook-cert-dir.
    #[arg(long, env = "WEBHOOK_CERT_SECRET", default_value = "")]
    pub webhook_cert_secret: String,
    /// The Service in front of the webhook port, in the operator's namespace: the self-issued
    /// certificate is for its DNS names.
    #[arg(long, env = "WEBHOOK_SERVICE", default_value = crate::webhook::configurations::SERVICE_NAME)]
    pub webhook_service: String,
    /// Seconds a self-issued webhook certificate is valid (90 days); it is renewed with a third left.
    #[arg(long = "webhook-cert-validity", env = "WEBHOOK_CERT_VALIDITY", default_value_t = 90 * 24 * 3600, value_parser = webhook_cert_validity_seconds)]
    pub webhook_cert_validity_seconds: u64,
    /// Outside a cluster (`make run`) with no certificate configured: serve the webhooks on this
    /// machine under a CA made for the run, and point VoteConfig's conversion and the admission
    /// configurations at them until the run ends. `auto`: when the conversion calls a Service that does
    /// not exist (as after `make install`) or an earlier run's URL; `always`: also instead of a deployed
    /// operator; `never`. `dev` wires its own.
    #[arg(long, env = "LOCAL_WEBHOOKS", value_enum, default_value_t = LocalWebhooks::Auto)]
    pub local_webhooks: LocalWebhooks,
    /// With local webhooks: the address (IP or DNS name) at which the API server reaches this machine.
    /// Empty: loopback, which only an API server on this machine reaches.
    #[arg(long, env = "WEBHOOK_HOST", default_value = "")]
    pub webhook_host: String,
    /// Watch and reconcile the resources of this one namespace only (every namespace when empty), as
    /// with controller-runtime's cache restricted to a namespace; the RBAC can then be a Role there.
    #[arg(long, env = "WATCH_NAMESPACE", default_value = "")]
    pub watch_namespace: String,
    /// Hold a Lease so that only one replica reconciles at a time.
    #[arg(long, env = "LEADER_ELECT", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    #[arg(long, env = "LEADER_ELECTION_ID", default_value = "operator.demo.yash.com")]
    pub leader_election_id: String,
    /// The operator's own namespace (the pod's in a cluster): the Lease of leader election, and the
    /// ConfigMap of row releases waiting for the database (postgres-writer-pending-releases), live there.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub leader_election_namespace: String,
    /// Seconds a Lease is valid without renewal (controller-runtime: 15; at least 3).
    #[arg(long, env = "LEASE_DURATION", default_value_t = 15, value_parser = lease_duration_seconds)]
    pub lease_duration_seconds: u64,
    /// Seconds between reconciles of every unchanged resource, in every controller (repairs children and
    /// rows edited by hand), and between orphan sweeps when --orphan-sweep is on.
    #[arg(long = "resync-interval", env = "RESYNC_INTERVAL", default_value_t = 300, value_parser = resync_interval_seconds)]
    pub resync_interval_seconds: u64,
    /// Reconciles each controller may run at once. postgres-writer groups the row writes of
    /// concurrent reconciles into one statement per table, so this also bounds its batch size: with
    /// 4, a burst of 10,000 resources converged 2.8x slower than with 64 (convergence bench, 2026-11-23).
    #[arg(long, env = "MAX_CONCURRENT_RECONCILES", default_value_t = 64)]
    pub max_concurrent_reconciles: u16,
    /// Memory, in MiB, for Events waiting to be written to the API server. Repeats of an Event are
    /// counted in its series and take none; past this, new Events are dropped, counted in
    /// controller_events_dropped_total and logged. 16 MiB holds about 20,000 Events.
    #[arg(long, env = "EVENT_BACKLOG_MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub event_backlog_mib: u64,
    /// Threads running the manager's tasks. One by default: the controllers mostly wait on the API
    /// server and PostgreSQL, and a second thread costs more in wake-ups between the threads than it
    /// gains (10,000 PostgresWriters took a quarter less CPU with one, and converged sooner; convergence
    /// bench, 2026-11-26). `operator dev` defaults to one per core: its embedded API server shares them.
    #[arg(long, env = "WORKER_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    /// Seconds a replica told to stop keeps serving the webhooks, already not ready, before it stops
    /// them: the time for its Service to stop sending it connections (the EndpointSlice controller
    /// drops a deleted pod at once, kube-proxy applies that within a second or two, more on a busy
    /// node). The controllers stop at the signal. `dev` does not drain.
    #[arg(long = "shutdown-drain-seconds", env = "SHUTDOWN_DRAIN_SECONDS", default_value_t = DEFAULT_SHUTDOWN_DRAIN_SECONDS, value_parser = clap::value_parser!(u64).range(0..=300))]
    pub shutdown_drain_seconds: u64,
    #[command(flatten)]
    pub database: DatabaseConfig,
    #[command(flatten)]
    pub postgres_writer: postgres_writer::Settings,
}

impl RunArgs {
    /// The Lease leader election holds.
    pub fn lease(&self) -> super::leader::LeaseSettings {
        super::leader::LeaseSettings {
            name: self.leader_election_id.clone(),
            namespace: self.leader_election_namespace.clone(),
            duration_seconds: self.lease_duration_seconds,
        }
    }

    /// Whether /metrics on `addr` is served securely: `--metrics-secure`, or unset, unless on loopback.
    pub fn metrics_secure_at(&self, addr: SocketAddr) -> bool {
        self.metrics_secure.unwrap_or(!addr.ip().is_loopback())
    }

    /// `--shutdown-drain-seconds`.
    pub fn shutdown_drain(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.shutdown_drain_seconds)
    }

    /// How long the process may take to stop after SIGTERM: the drain, then the graceful shutdown.
    pub fn shutdown_bound(&self) -> std::time::Duration {
        self.shutdown_drain() + super::shutdown::GRACEFUL_SHUTDOWN_TIMEOUT
    }

    /// `--event-backlog-mib` in bytes.
    pub fn event_backlog_bytes(&self) -> usize {
        usize::try_from(self.event_backlog_mib << 20).unwrap_or(usize::MAX)
    }
}

/// Dev mode serves metrics, probes and webhooks on loopback only: a laptop on a shared network should
/// not publish them. `--metrics-bind-address :8080` still opens them to every interface.
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("metrics_bind_address", |arg| arg.default_value(DEV_METRICS_BIND_ADDRESS)),
    mut_arg("health_probe_bind_address", |arg| arg.default_value(DEV_HEALTH_PROBE_BIND_ADDRESS)),
    mut_arg("webhook_bind_address", |arg| arg.default_value(DEV_WEBHOOK_BIND_ADDRESS)),
)]
pub struct DevArgs {
    /// Where to write the kubeconfig of the embedded API server.
    #[arg(long, env = "DEV_KUBECONFIG", default_value = ".dev/kubeconfig")]
    pub kubeconfig: PathBuf,
    /// Address of the embedded API server (loopback).
    #[arg(long, env = "DEV_APISERVER_ADDR", default_value = "127.0.0.1:0")]
    pub apiserver_addr: SocketAddr,
    /// Simulate one ready node in the embedded API server, so that a WebApp's Deployment gets Pods
    /// that run and become ready. `false`: no node, Pods stay Pending.
    #[arg(long, env = "DEV_SIMULATED_NODE", default_value_t = true, action = clap::ArgAction::Set)]
    pub simulated_node: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// A tracing filter in which every directive names a level. `EnvFilter` alone would take a bare word
/// such as `verbose` as a target to log at every level, and so log almost nothing.
fn log_filter(text: &str) -> Result<String, String> {
    const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];
    let names_a_level = |directive: &str| {
        let level = directive.rsplit_once('=').map_or(directive, |(_, level)| level);
        LEVELS.iter().any(|l| l.eq_ignore_ascii_case(level.trim()))
    };
    if let Some(bad) = text.split(',').find(|d| !names_a_level(d)) {
        return Err(format!(
            "{bad:?} names no level: use one of {} or `target=level` pairs such as operator=debug,kube=info",
            LEVELS.join(", ")
        ));
    }
    tracing_subscriber::EnvFilter::try_new(text)
        .map(|_| text.to_owned())
        .map_err(|e| e.to_string())
}

fn lease_duration_seconds(text: &str) -> Result<u64, String> {
    let seconds = text.parse().map_err(|e| format!("{e}"))?;
    super::leader::check_lease_duration(seconds)
}

fn webhook_cert_validity_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>().map_err(|e| format!("{e}"))? {
        seconds if seconds < 30 => Err("must be at least 30 seconds".into()),
        seconds => Ok(seconds),
    }
}

fn resync_interval_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>().map_err(|e| format!("{e}"))? {
        0 => Err("must be at least 1 second".into()),
        seconds => Ok(seconds),
    }
}

/// `:8080` -> 0.0.0.0:8080, `127.0.0.1:8080` as is, `0` or empty -> off.
pub fn bind_address(text: &str) -> Result<Option<SocketAddr>, String> {
    match text.trim() {
        "" | "0" => Ok(None),
        t if t.starts_with(':') => format!("0.0.0.0{t}")
            .parse()
            .map(Some)
            .map_err(|e| format!("{text}: {e}")),
        t => t.parse().map(Some).map_err(|e| format!("{text}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn bind_addresses_follow_controller_runtime_conventions() {
        assert_eq!(
            bind_address(":8080").unwrap(),
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            bind_address("127.0.0.1:9").unwrap(),
            Some("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(bind_address("0").unwrap(), None);
        assert!(bind_address("nope").is_err());
    }

    #[test]
    fn run_defaults_to_every_controller_and_accepts_a_subset() {
        let cli = Cli::parse_from(["operator", "run"]);
        let Command::Run(args) = cli.command else {
            panic!("run")
        };
        assert_eq!(args.controllers.len(), 3);
        assert!(!args.leader_elect);
        let cli = Cli::parse_from([
            "operator",
            "run",
            "--controllers",
            "vote-config,web-app",
            "--leader-elect",
        ]);
        let Command::Run(args) = cli.command else {
            panic!("run")
        };
        assert_eq!(
            args.controllers,
            [ControllerName::VoteConfig, ControllerName::WebApp]
        );
        assert!(args.leader_elect);
    }

    #[test]
    fn run_takes_one_worker_thread_unless_told_and_dev_one_per_core() {
        let threads = |args: &[&str]| Cli::try_parse_from(args).map(|cli| cli.command.worker_threads());
        assert_eq!(threads(&["operator", "run"]).unwrap(), Some(1));
        assert_eq!(
            threads(&["operator", "run", "--worker-threads", "3"]).unwrap(),
            Some(3)
        );
        assert_eq!(threads(&["operator", "install"]).unwrap(), Some(1));
        // tokio's default: one per core.
        assert_eq!(threads(&["operator", "dev"]).unwrap(), None);
        assert_eq!(
            threads(&["operator", "dev", "--worker-threads", "1"]).unwrap(),
            Some(1)
        );
        let zero = threads(&["operator", "run", "--worker-threads", "0"])
            .unwrap_err()
            .to_string();
        assert!(zero.contains("--worker-threads") && zero.contains("0"), "{zero}");
    }

    fn run_args(flags: &[&str]) -> Result<RunArgs, clap::Error> {
        let cli = Cli::try_parse_from(["operator", "run"].iter().chain(flags))?;
        let Command::Run(args) = cli.command else {
            panic!("run")
        };
        Ok(args)
    }

    #[test]
    fn a_bare_boolean_flag_means_true_and_each_still_takes_false() {
        let args = run_args(&["--orphan-sweep", "--auto-create-tables", "--leader-elect"]).unwrap();
        assert!(args.postgres_writer.orphan_sweep);
        assert!(args.postgres_writer.auto_create_tables);
        assert!(args.leader_elect);
        let args = run_args(&[
            "--orphan-sweep=false",
            "--auto-create-tables=false",
            "--leader-elect=false",
        ])
        .unwrap();
        assert!(!args.postgres_writer.orphan_sweep);
        assert!(!args.postgres_writer.auto_create_tables);
        assert!(!args.leader_elect);
        let args = run_args(&["--orphan-sweep"]).unwrap();
        assert!(args.postgres_writer.orphan_sweep);
    }

    #[test]
    fn the_resync_interval_is_the_managers_and_at_least_a_second() {
        assert_eq!(run_args(&[]).unwrap().resync_interval_seconds, 300);
        assert_eq!(
            run_args(&["--resync-interval", "7"])
                .unwrap()
                .resync_interval_seconds,
            7
        );
        assert!(run_args(&["--resync-interval", "0"]).is_err());
        let help = Cli::command()
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        let resync = help
            .split("--resync-interval")
            .nth(1)
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        assert!(resync.contains("every controller"), "{resync}");
    }

    #[test]
    fn the_event_backlog_is_sized_in_mib_and_never_zero() {
        let run = run_args(&[]).unwrap();
        assert_eq!((run.event_backlog_mib, run.event_backlog_bytes()), (16, 16 << 20));
        assert_eq!(
            run_args(&["--event-backlog-mib", "64"])
                .unwrap()
                .event_backlog_bytes(),
            64 << 20
        );
        for bad in ["0", "-1", "lots"] {
            assert!(run_args(&["--event-backlog-mib", bad]).is_err(), "{bad}");
        }
        let command = Cli::command();
        let env = command
            .find_subcommand("run")
            .unwrap()
            .get_arguments()
            .find(|a| a.get_id() == "event_backlog_mib")
            .and_then(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned());
        assert_eq!(env.as_deref(), Some("EVENT_BACKLOG_MIB"));
    }

    #[test]
    fn a_stopping_replica_drains_for_seconds_and_exits_within_the_drain_and_the_graceful_timeout() {
        let run = run_args(&[]).unwrap();
        assert_eq!(run.shutdown_drain_seconds, 5);
        assert_eq!(run.shutdown_bound(), std::time::Duration::from_secs(35));
        assert_eq!(
            run_args(&["--shutdown-drain-seconds", "0"])
                .unwrap()
                .shutdown_drain(),
            std::time::Duration::ZERO
        );
        for bad in ["-1", "301", "soon"] {
            assert!(run_args(&["--shutdown-drain-seconds", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_lease_shorter_than_its_floor_is_refused() {
        assert_eq!(
            run_args(&["--lease-duration-seconds", "3"])
                .unwrap()
                .lease_duration_seconds,
            3
        );
        let error = run_args(&["--lease-duration-seconds", "2"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(error.to_string().contains("at least 3 seconds"), "{error}");
    }

    #[test]
    fn a_log_filter_must_name_a_level() {
        for good in [
            "info",
            "WARN",
            "operator=debug,kube=info",
            "off",
            "operator[reconcile]=trace",
        ] {
            let cli = Cli::try_parse_from(["operator", "--log-level", good, "crds"]);
            assert_eq!(cli.unwrap().log_level, good);
        }
        for bad in ["verbose", "operator=loud", "info,", "operator"] {
            let error = Cli::try_parse_from(["operator", "--log-level", bad, "crds"]).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation, "{bad}");
            assert!(error.to_string().contains("names no level"), "{error}");
        }
    }

    #[test]
    fn dev_serves_metrics_and_probes_on_loopback_and_run_on_every_interface() {
        let Command::Dev(dev) = Cli::try_parse_from(["operator", "dev"]).unwrap().command else {
            panic!("dev")
        };
        for address in [
            &dev.run.metrics_bind_address,
            &dev.run.health_probe_bind_address,
            &dev.run.webhook_bind_address,
        ] {
            let bound = bind_address(address).unwrap().unwrap();
            assert!(bound.ip().is_loopback(), "{address}");
        }
        assert_eq!(dev.run.metrics_bind_address, "127.0.0.1:8080");
        assert_eq!(dev.run.health_probe_bind_address, "127.0.0.1:8081");
        let run = run_args(&[]).unwrap();
        assert_eq!(run.metrics_bind_address, ":8443");
        assert_eq!(run.health_probe_bind_address, ":8081");
        let Command::Dev(dev) = Cli::try_parse_from(["operator", "dev", "--metrics-bind-address", ":9090"])
            .unwrap()
            .command
        else {
            panic!("dev")
        };
        assert_eq!(dev.run.metrics_bind_address, ":9090");
    }

    #[test]
    fn metrics_are_secure_unless_on_loopback_or_told_otherwise() {
        let at =
            |flags: &[&str], addr: &str| run_args(flags).unwrap().metrics_secure_at(addr.parse().unwrap());
        assert!(at(&[], "0.0.0.0:8443"));
        assert!(at(&[], "192.0.2.7:8443"));
        assert!(!at(&[], "127.0.0.1:8080"), "loopback: this machine only");
        assert!(!at(&[], "[::1]:8080"));
        assert!(at(&["--metrics-secure"], "127.0.0.1:8080"));
        assert!(at(&["--metrics-secure=true"], "127.0.0.1:8080"));
        assert!(!at(&["--metrics-secure=false"], "0.0.0.0:8443"));
        let Command::Dev(dev) = Cli::try_parse_from(["operator", "dev"]).unwrap().command else {
            panic!("dev")
        };
        let addr = bind_address(&dev.run.metrics_bind_address).unwrap().unwrap();
        assert!(!dev.run.metrics_secure_at(addr), "dev: plain HTTP on loopback");
    }

    #[test]
    fn webhooks_are_served_where_controller_runtime_serves_them() {
        let run = run_args(&[]).unwrap();
        assert_eq!(run.webhook_bind_address, ":9443");
        assert_eq!(
            bind_address(&run.webhook_bind_address).unwrap(),
            Some("0.0.0.0:9443".parse().unwrap())
        );
        assert_eq!(
            run.webhook_cert_dir,
            PathBuf::from("/tmp/k8s-webhook-server/serving-certs")
        );
        let run = run_args(&[
            "--webhook-bind-address",
            "127.0.0.1:10443",
            "--webhook-cert-dir",
            "/certs",
        ])
        .unwrap();
        assert_eq!(
            bind_address(&run.webhook_bind_address).unwrap(),
            Some("127.0.0.1:10443".parse().unwrap())
        );
        assert_eq!(run.webhook_cert_dir, PathBuf::from("/certs"));
        assert_eq!(
            bind_address(
                &run_args(&["--webhook-bind-address", "0"])
                    .unwrap()
                    .webhook_bind_address
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn webhook_flags_read_the_environment() {
        // Parsed from explicit values rather than the process environment, which tests share: clap
        // names the variable in the argument's definition.
        let command = Cli::command();
        let run = command.find_subcommand("run").unwrap();
        let env = |id: &str| {
            run.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_env())
                .map(|e| e.to_string_lossy().into_owned())
        };
        assert_eq!(
            env("webhook_bind_address").as_deref(),
            Some("WEBHOOK_BIND_ADDRESS")
        );
        assert_eq!(env("webhook_cert_dir").as_deref(), Some("WEBHOOK_CERT_DIR"));
    }
}
