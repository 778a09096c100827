//! What the operator's integration tests share: a control plane (embedded, real, or the cluster tier's
//! shared cluster, see the `testenv` crate) with our CRDs installed and a namespace of the test's own
//! ([`Scene`]), a throwaway PostgreSQL, a controller started in-process or as `operator run`, and
//! polling with a deadline.

#![allow(dead_code)]

pub mod database_access;
pub mod database_tls;
pub mod deployment;
pub mod helm;
pub mod kubelet;
pub mod lifecycles;
pub mod postgres_writer;
pub mod scene;
pub mod scrape;
pub mod serving_operator;
pub mod webhooks;

use std::{future::Future, sync::Arc, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, api::PostParams};
use operator::runtime::{ControllerContext, events::EventRecorder, metrics::Metrics, readiness::Readiness};
use tokio::{sync::watch, task::JoinHandle};

// Not every test binary plays in a scene.
#[allow(unused_imports)]
pub use scene::Scene;
pub use testenv::{Backend, ControlPlane};

/// How long a test waits for the garbage collector to remove the children of a deleted owner. On the
/// real control plane, kube-controller-manager's collector starts watching a kind that a CRD added only
/// at its next discovery sync, every 30 s: an owner of a new kind deleted before then is noticed at
/// that sync. Twice that leaves room for a loaded machine.
pub const COLLECTED_WITHIN: Duration = Duration::from_secs(60);

/// The web server image the cluster tier builds and loads into its node (testenv/cluster/env.sh): it
/// answers every request with `hello from <pod name>` on port 8080. The WebApps of every tier name it,
/// so that their pods run on the cluster tier's node; elsewhere an image is only a name.
pub const WEB_IMAGE: &str = "localhost/operator-test/web:1";

/// How long a WebApp's pods may take to be ready. On the cluster tier's node: scheduled and started
/// from an image already there, on a 2-core machine running the rest of the tier beside them. The
/// embedded server's simulated node and the real tier's kubelet stand-in report them ready at once.
pub const PODS_READY_WITHIN: Duration = Duration::from_secs(120);

/// How long a signalled `operator` may take to exit: the bound it promises, its default drain and the
/// graceful shutdown after it (past it, the process exits anyway, with status 1), and time for the
/// process to end. Exit status 0 tells a shutdown that finished from one cut short at the bound.
pub const EXIT_AFTER_SIGNAL: Duration = Duration::from_secs(
    operator::manager::cli::DEFAULT_SHUTDOWN_DRAIN_SECONDS
        + operator::manager::run::GRACEFUL_SHUTDOWN_TIMEOUT.as_secs()
        + 10,
);

/// A control plane of kind `backend` with our CRDs installed, and a client with every right.
pub async fn cluster(backend: Backend) -> (ControlPlane, kube::Client) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    with_crds(plane).await
}

/// The embedded server configured as `config` says, with our CRDs installed.
pub async fn embedded_cluster_with(config: apiserver::Config) -> (ControlPlane, kube::Client) {
    let plane = ControlPlane::embedded(config).await.expect("API server starts");
    with_crds(plane).await
}

async fn with_crds(plane: ControlPlane) -> (ControlPlane, kube::Client) {
    let client = plane.client();
    install_crds(&client).await;
    (plane, client)
}

/// The embedded API server recording every request in memory (its audit), with our CRDs installed,
/// and a client that sends `agent` as its user agent, so that the audit tells the test's own requests
/// from the operator's.
pub async fn audited_cluster(agent: &'static str) -> (apiserver::ApiServer, kube::Client) {
    let server = apiserver::ApiServer::start(apiserver::Config {
        audit: apiserver::Audit::Memory,
        ..apiserver::Config::default()
    })
    .await
    .expect("API server starts");
    let mut config = server.kube_config();
    config.headers.push((
        axum::http::header::USER_AGENT,
        axum::http::HeaderValue::from_static(agent),
    ));
    let client = kube::Client::try_from(config).expect("client");
    install_crds(&client).await;
    (server, client)
}

/// Creates the namespace `name`.
pub async fn create_namespace(client: &kube::Client, name: &str) {
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
}

/// Installs our CRDs through `client`, and waits until each is Established, as a client of a real
/// API server must before it uses the new resource.
pub async fn install_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("CRD installs");
    }
    wait_established(client).await;
}

/// Our CRDs applied (created, or brought up to date) and Established: on the cluster tier, which tests
/// share, another test may have installed them first.
pub async fn apply_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(
            &name,
            &kube::api::PatchParams::apply("operator-tests").force(),
            &kube::api::Patch::Apply(&crd),
        )
        .await
        .expect("CRD applies");
    }
    wait_established(client).await;
}

/// Waits until each of our CRDs is Established.
pub async fn wait_established(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        let name = crd.metadata.name.unwrap_or_default();
        eventually("the CRD to be established", Duration::from_secs(30), || async {
            let conditions = crds.get(&name).await.ok()?.status?.conditions?;
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        })
        .await;
    }
}

/// A controller running in this process until the returned handle is dropped or stopped.
pub struct Running {
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops as a crash would: the task is aborted mid-flight.
    pub fn kill(self) {
        self.task.abort();
    }

    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }

    /// The values of the samples whose name and labels start with `prefix`, from the metrics text.
    fn sample_values(&self, prefix: &str) -> Vec<f64> {
        self.metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .collect()
    }

    /// The controller's `workqueue_depth`: objects that changed and wait for a reconcile.
    pub fn workqueue_depth(&self, controller: &str) -> Option<f64> {
        let sample = format!("workqueue_depth{{name=\"{controller}\"}} ");
        self.sample_values(&sample).first().copied()
    }

    /// The controller's `controller_backoff_objects`: objects waiting to retry after a failure.
    pub fn backoff_objects(&self, controller: &str) -> Option<f64> {
        let sample = format!("controller_backoff_objects{{controller=\"{controller}\"}} ");
        self.sample_values(&sample).first().copied()
    }

    /// How many orphan sweeps completed without error so far.
    pub fn sweeps(&self) -> u64 {
        self.sample_values("postgres_writer_orphan_sweeps_total{result=\"success\"}")
            .iter()
            .sum::<f64>() as u64
    }

    /// How many reconciles of `controller` failed so far.
    pub fn reconcile_errors(&self, controller: &str) -> u64 {
        let sample = format!("controller_runtime_reconcile_errors_total{{controller=\"{controller}\"}} ");
        self.sample_values(&sample).iter().sum::<f64>() as u64
    }

    /// How many Events were dropped so far, by every controller.
    pub fn events_dropped(&self) -> u64 {
        self.sample_values("controller_events_dropped_total{")
            .iter()
            .sum::<f64>() as u64
    }

    /// How many reconciles finished so far.
    pub fn reconciles(&self) -> u64 {
        self.sample_values("controller_runtime_reconcile_total{")
            .iter()
            .sum::<f64>() as u64
    }
}

pub fn context(client: &kube::Client, resync: Duration) -> (ControllerContext, watch::Sender<bool>) {
    context_with_concurrency(client, resync, 4)
}

/// A context whose controllers run up to `concurrency` reconciles at once, as
/// `--max-concurrent-reconciles` sets it.
pub fn context_with_concurrency(
    client: &kube::Client,
    resync: Duration,
    concurrency: u16,
) -> (ControllerContext, watch::Sender<bool>) {
    let (shutdown, receiver) = watch::channel(false);
    let metrics = Arc::new(Metrics::new());
    let ctx = ControllerContext {
        events: EventRecorder::start(client.clone(), &metrics, 16 << 20),
        client: client.clone(),
        metrics,
        readiness: Arc::new(Readiness::default()),
        namespace: "default".into(),
        watch_namespace: None,
        concurrency,
        resync,
        shutdown: receiver,
    };
    (ctx, shutdown)
}

pub fn spawn<F>(
    ctx: ControllerContext,
    shutdown: watch::Sender<bool>,
    run: impl FnOnce(ControllerContext) -> F,
) -> Running
where
    F: Future<Output = operator::Result<()>> + Send + 'static,
{
    let metrics = ctx.metrics.clone();
    let readiness = ctx.readiness.clone();
    let future = run(ctx);
    let task = tokio::spawn(async move {
        if let Err(error) = future.await {
            panic!("controller failed: {error}");
        }
    });
    Running {
        metrics,
        readiness,
        shutdown,
        task,
    }
}

/// The repository's root: relative paths given to [`kubectl`] start there.
pub fn repository() -> &'static std::path::Path {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `kubectl args` (the kubectl on PATH) against the cluster in `kubeconfig`, run in the repository's
/// root with its cache beside the kubeconfig; fails the test with kubectl's output if kubectl fails.
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    kubectl_with_input(kubeconfig, args, "")
}

/// `kubectl args` with `input` on its standard input; fails the test with kubectl's output if it fails.
pub fn kubectl_with_input(kubeconfig: &std::path::Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let home = kubeconfig.parent().unwrap_or(std::path::Path::new("."));
    let mut child = std::process::Command::new("kubectl")
        .args(args)
        .arg("--request-timeout=20s")
        .current_dir(repository())
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("kubectl reads its input");
    let output = child.wait_with_output().expect("kubectl ends");
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The commands of the README's deploy section, comments dropped.
pub fn readme_deploy_steps() -> Vec<String> {
    let readme = std::fs::read_to_string(repository().join("README.md")).expect("README.md");
    let section = readme
        .split("## Deploying to a real cluster")
        .nth(1)
        .expect("a deploy section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a sh block in the deploy section");
    block
        .lines()
        .map(|line| line.split(" #").next().unwrap_or_default().trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// `make args...` in the repository against the cluster in `kubeconfig`, failing the test with its
/// output if it fails.
pub fn make(kubeconfig: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("make")
        .args(args)
        .current_dir(repository())
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().unwrap_or(std::path::Path::new(".")))
        .output()
        .expect("make runs");
    assert!(
        output.status.success(),
        "make {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Polls `check` until it yields `Some`, failing the test after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The Events in `namespace` about the object named `regarding` with reason `reason`.
pub async fn events(
    client: &kube::Client,
    namespace: &str,
    regarding: &str,
    reason: &str,
) -> kube::Result<Vec<k8s_openapi::api::events::v1::Event>> {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), namespace);
    Ok(api
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
        })
        .collect())
}

/// Waits up to `limit` for a Warning Event about `regarding` with reason `reason`: the operator's
/// recorder writes Events in the background, after the status that reports the same.
pub async fn warning_event(
    client: &kube::Client,
    namespace: &str,
    regarding: &str,
    reason: &str,
    limit: Duration,
) {
    eventually(
        &format!("a Warning Event {reason} about {regarding}"),
        limit,
        || async {
            let events = events(client, namespace, regarding, reason).await.ok()?;
            events
                .iter()
                .any(|e| e.type_.as_deref() == Some("Warning"))
                .then_some(())
        },
    )
    .await;
}

/// How many times those Events were reported: a repeat is counted in its Event's series.
pub async fn times_reported(
    client: &kube::Client,
    namespace: &str,
    regarding: &str,
    reason: &str,
) -> kube::Result<i32> {
    Ok(events(client, namespace, regarding, reason)
        .await?
        .iter()
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum())
}

/// Waits, up to `limit`, until `api` no longer has an object named `name`.
pub async fn until_gone<K>(api: &Api<K>, name: &str, what: &str, limit: Duration)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(what, limit, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await
}

// The `operator` binary as a child process, and plain HTTP to its metrics and probe servers.

/// An `operator` child whose stderr is read line by line; killed if the test ends without stopping it.
pub struct OperatorProcess {
    child: std::process::Child,
    log: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl OperatorProcess {
    /// `operator <args>` against the cluster in `kubeconfig`, with text logs.
    pub fn spawn(kubeconfig: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_operator"))
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("LOG_FORMAT", "text")
            .env("NO_COLOR", "1")
            .env_remove("DATABASE_URL")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("operator starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (sender, log) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            log,
            seen: Vec::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The first log line from now on that contains `needle`.
    pub async fn wait_for_log(&mut self, needle: &str, limit: Duration) -> String {
        match self.find_log(needle, limit).await {
            Some(line) => line,
            None => panic!(
                "no log line containing {needle:?} within {limit:?}; the log so far:\n{}",
                self.seen.join("\n")
            ),
        }
    }

    /// The first log line from now on that contains `needle`, if one comes within `limit`.
    pub async fn find_log(&mut self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.log.recv()).await {
                Ok(Some(line)) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return Some(line);
                    }
                }
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Log lines not read yet, without waiting.
    pub fn drain_log(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(line) = self.log.try_recv() {
            self.seen.push(line.clone());
            lines.push(line);
        }
        lines
    }

    /// Where a server announced by `message` (e.g. `serving /metrics`) listens: its loopback port.
    pub async fn bound_address(&mut self, message: &str) -> std::net::SocketAddr {
        let line = self.wait_for_log(message, Duration::from_secs(60)).await;
        let port: String = line
            .split("127.0.0.1:")
            .nth(1)
            .unwrap_or_else(|| panic!("no loopback address in {line:?}"))
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        format!("127.0.0.1:{port}").parse().expect("a socket address")
    }

    /// Sends `signal` (`INT`, `TERM`, `KILL`).
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {}", self.child.id());
    }

    /// The exit status within `limit`, or `None` if the process is still running then.
    pub async fn exit_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every log line of a process that has exited: what is left in the pipe read to its end (the
    /// reader thread may still be behind the exit), within 10 s.
    pub async fn log_after_exit(&mut self) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.log.recv()).await {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    /// Every log line read so far (for failure messages), after reading what is left.
    pub fn log_so_far(&mut self) -> String {
        self.drain_log();
        self.seen.join("\n")
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response read to its end.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `GET path` over HTTP/1.0 (one request per connection, the body runs to the close), within 10 s.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<HttpResponse> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("GET {path}")))??;
    read_response(&raw, path)
}

/// An HTTP/1.x response read to its end (`raw`), for the request of `path`.
pub fn read_response(raw: &[u8], path: &str) -> std::io::Result<HttpResponse> {
    let text = String::from_utf8_lossy(raw);
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("GET {path}: {text}"));
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(invalid)?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(invalid)?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok(HttpResponse {
        status,
        headers,
        body: body.to_owned(),
    })
}
