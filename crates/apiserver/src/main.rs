//! `apiserver`: serve the embedded Kubernetes API until SIGTERM or Ctrl-C.

use std::{ffi::OsString, io::IsTerminal, net::SocketAddr, path::PathBuf};

use clap::Parser;

/// jemalloc rather than glibc's malloc, as in the `operator` binary that hosts this server in dev mode,
/// with the options both run it with (serving::allocator says why). The server holds many small
/// allocations (each object's JSON, index entries, watch events) that live and die at different times;
/// under glibc's malloc its writes slowed as the heap grew, under jemalloc they did not.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;

#[derive(Parser, Debug)]
#[command(
    name = "apiserver",
    about = "An embedded Kubernetes-compatible API server, in memory or kept in --data-dir"
)]
struct Args {
    /// Address to listen on. Loopback by default: the bearer token travels in plain HTTP.
    #[arg(long, env = "APISERVER_ADDR", default_value = "127.0.0.1:6443")]
    addr: SocketAddr,
    /// Where to write a kubeconfig for kubectl and client libraries.
    #[arg(long, env = "APISERVER_KUBECONFIG", default_value = "kubeconfig")]
    kubeconfig: PathBuf,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "APISERVER_MAX_BODY_BYTES", default_value_t = 3 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Watch events remembered for resuming watches.
    #[arg(long, env = "APISERVER_HISTORY", default_value_t = 10_000)]
    history: usize,
    /// Bytes of watch events (their objects' JSON) remembered at most.
    #[arg(long, env = "APISERVER_HISTORY_BYTES", default_value_t = 64 * 1024 * 1024)]
    history_bytes: usize,
    /// Serve without authentication: anyone who reaches the address may read and write everything.
    #[arg(long, env = "APISERVER_INSECURE_NO_AUTH", value_parser = clap::builder::FalseyValueParser::new())]
    insecure_no_auth: bool,
    /// Require the bearer token in this file instead of a random one generated at start-up.
    #[arg(long, env = "APISERVER_TOKEN_FILE", conflicts_with = "insecure_no_auth")]
    token_file: Option<PathBuf>,
    /// How requests are authorized, as kube-apiserver's flag: `RBAC` (kube-apiserver's bootstrap
    /// roles, the kubeconfig's token in `system:masters`) or `AlwaysAllow`.
    #[arg(long, env = "APISERVER_AUTHORIZATION_MODE", default_value = "RBAC", value_parser = parse_authorization_mode)]
    authorization_mode: apiserver::Authorization,
    /// Admission plugins to enable beyond the default ones, as kube-apiserver's flag (comma-separated).
    /// The one known is `OwnerReferencesPermissionEnforcement`, which hardened clusters enable.
    #[arg(long, env = "APISERVER_ENABLE_ADMISSION_PLUGINS", value_parser = parse_admission_plugins, default_value = "")]
    enable_admission_plugins: OwnerReferencePermissions,
    /// Keep every object in this directory (created when missing) across restarts; a write is answered
    /// only once it is on disk. Without it everything lives in memory and is gone at exit.
    #[arg(long, env = "APISERVER_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Append every request's authorization attributes (verb, group, resource, namespace, name, user
    /// agent, code) to this file, one JSON object a line: what an RBAC role for a client must allow.
    #[arg(long, env = "APISERVER_AUDIT_LOG")]
    audit_log: Option<PathBuf>,
    /// kube-apiserver's feature gates, as `Name=true,Other=false`. The one known is `WatchList`
    /// (streaming lists through `sendInitialEvents`), off by default as in kube-apiserver 1.33.
    #[arg(long, env = "APISERVER_FEATURE_GATES", value_parser = parse_feature_gates, default_value = "")]
    feature_gates: FeatureGates,
    /// Simulate one ready node, on which Pods are scheduled and reported running and ready at once
    /// (as a kubelet would report them), so that Deployments become available. `false`: no node,
    /// Pods stay Pending, as on a control plane without nodes.
    #[arg(long, env = "APISERVER_SIMULATED_NODE", default_value_t = true, action = clap::ArgAction::Set)]
    simulated_node: bool,
    /// Log filter (tracing EnvFilter syntax); `debug` logs every request.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    log: String,
}

/// Whether `--enable-admission-plugins` named OwnerReferencesPermissionEnforcement.
#[derive(Clone, Copy, Debug)]
struct OwnerReferencePermissions(bool);

fn parse_admission_plugins(text: &str) -> Result<OwnerReferencePermissions, String> {
    let mut enforced = false;
    for plugin in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match plugin {
            "OwnerReferencesPermissionEnforcement" => enforced = true,
            other => {
                return Err(format!(
                    "admission plugin {other:?} is not one this server can enable: OwnerReferencesPermissionEnforcement"
                ));
            }
        }
    }
    Ok(OwnerReferencePermissions(enforced))
}

fn parse_authorization_mode(text: &str) -> Result<apiserver::Authorization, String> {
    match text {
        "RBAC" => Ok(apiserver::Authorization::Rbac),
        "AlwaysAllow" => Ok(apiserver::Authorization::AlwaysAllow),
        other => Err(format!(
            "authorization mode {other:?} is not one of RBAC, AlwaysAllow"
        )),
    }
}

/// The feature gates the server knows.
#[derive(Debug, Clone, Default)]
struct FeatureGates {
    watch_list: bool,
}

fn parse_feature_gates(text: &str) -> Result<FeatureGates, String> {
    let mut gates = FeatureGates::default();
    for gate in text.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        let (name, value) = gate
            .split_once('=')
            .ok_or_else(|| format!("missing bool value for {gate}"))?;
        let enabled = value.parse::<bool>().map_err(|_| {
            format!(
                "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
            )
        })?;
        match name {
            "WatchList" => gates.watch_list = enabled,
            other => return Err(format!("unrecognized feature gate: {other}")),
        }
    }
    Ok(gates)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    // Logs go to stderr, coloured only for a person at a terminal: escape codes in a file or a pipe
    // are noise every reader must strip.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&args.log))
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .init();
    let auth = match (&args.token_file, args.insecure_no_auth) {
        (_, true) => apiserver::Auth::None,
        (Some(path), false) => match read_token(path) {
            Ok(token) => apiserver::Auth::Token(token),
            Err(message) => {
                eprintln!("apiserver: {message}");
                return std::process::ExitCode::FAILURE;
            }
        },
        (None, false) => apiserver::Auth::GeneratedToken,
    };
    let config = apiserver::Config {
        addr: args.addr,
        max_body_bytes: args.max_body_bytes,
        history_capacity: args.history,
        history_bytes: args.history_bytes,
        auth,
        authorization: args.authorization_mode,
        owner_reference_permissions: args.enable_admission_plugins.0,
        data_dir: args.data_dir,
        audit: match args.audit_log {
            Some(path) => apiserver::Audit::MemoryAndFile(path),
            None => apiserver::Audit::Off,
        },
        watch_list: args.feature_gates.watch_list,
        simulated_node: args.simulated_node,
    };
    let server = match apiserver::ApiServer::start(config).await {
        Ok(server) => server,
        Err(error) => {
            // The message says what failed (the data dir or the address); "io error:" adds nothing.
            match error {
                apiserver::Error::Io(error) => eprintln!("apiserver: {error}"),
                error => eprintln!("apiserver: {error}"),
            }
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Err(error) = server.write_kubeconfig(&args.kubeconfig) {
        eprintln!("apiserver: cannot write {}: {error}", args.kubeconfig.display());
        return std::process::ExitCode::FAILURE;
    }
    if args.insecure_no_auth {
        eprintln!("apiserver: --insecure-no-auth: every request is served without authentication");
    }
    println!(
        "serving on {}; kubeconfig written to {}",
        server.url(),
        args.kubeconfig.display()
    );
    wait_for_signal().await;
    server.shutdown().await;
    std::process::ExitCode::SUCCESS
}

/// Colour on a terminal, unless NO_COLOR is set to anything but the empty string (no-color.org).
fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

/// The token in `path`, surrounding whitespace removed; it must be sendable in an HTTP header.
fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() || !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "{} must hold one token of printable ASCII characters without spaces",
            path.display()
        ));
    }
    Ok(token.to_owned())
}

async fn wait_for_signal() {
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
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
    }
}
