//! PostgresWriter at scale, against the embedded API server and then the real control plane (etcd,
//! kube-apiserver and kube-controller-manager built from their Go modules), with a throwaway
//! PostgreSQL and the real `operator` binary as a separate process so its RSS is its own:
//! 1. the bare figure: the API writes the operator cannot avoid made directly by this process for N
//!    resources, no operator running, timed like the operator's phases by a watch that sees every
//!    status Ready / every resource gone. Twice: without Events (create, add finalizer, write status;
//!    delete, remove finalizer), the measure the convergence goal was set against, and with the Event
//!    the operator records per row write and per row delete, the second view (the ratio against the
//!    first cannot go below what the Events alone cost, which is printed too);
//! 2. N resources created at once: time until every row is present and every status Ready, then all
//!    deleted: time until every row and every resource is gone, each against both bare figures; then
//!    the Events the operator recorded for them (Written and Deleted, a series counting its repeats),
//!    once written;
//! 3. operator RSS at steady state with N resources;
//! 4. create-to-row latency at a steady 200 creates/s (the row's commit is seen through LISTEN/NOTIFY).
//!
//! Steps 1-3 run in rounds (the machine is shared and noisy; the medians are the figures), each in
//! fresh namespaces with the operator started anew; step 4 runs once, after the last round.
//!
//! `cargo bench -p operator --bench convergence` (N=10000, 3 rounds, both servers). Knobs:
//! `BENCH_SERVERS` (`embedded`, `real` or both, comma-separated), `BENCH_RESOURCES`,
//! `BENCH_ROUNDS`, `BENCH_OPERATOR_LOG=debug` (a log filter for the operator, whose log goes to
//! stderr), `BENCH_RSS_AGAIN_AFTER=<seconds>` (the RSS read again that much later).
//! `cargo bench --profile profiling ...` builds in a fraction of the time, for trying changes.

mod support;

/// The embedded API server runs in this process under jemalloc, the allocator of the binaries that
/// host it (`apiserver`, and `operator` in dev mode). Under glibc's malloc the server slowed down from
/// round to round as the Events of earlier rounds piled up in its heap (malloc's own time rose from 7%
/// to 17% of the process's CPU between the first and the third round, perf).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::{
    collections::{HashMap, HashSet},
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{core::v1::Namespace, events::v1::Event};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use operator::{
    api::postgres_writer::{FINALIZER, PostgresWriter, PostgresWriterSpec},
    db::throwaway::ThrowawayPostgres,
};
use serde_json::json;
use support::{Operator, free_port};
use testenv::{Backend, ControlPlane};

const CREATORS: usize = 32;

fn writer(namespace: &str, name: &str, table: &str) -> PostgresWriter {
    let mut writer = PostgresWriter::new(
        name,
        PostgresWriterSpec {
            table: table.into(),
            name: format!("student {name}"),
            age: 23,
            country: "canada".into(),
        },
    );
    writer.metadata.namespace = Some(namespace.into());
    writer
}

/// Runs `work(i)` for i in 0..n on CREATORS concurrent tasks; returns the elapsed time.
async fn fan_out<F, Fut>(n: usize, work: F) -> Duration
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    futures::stream::iter(0..n)
        .for_each_concurrent(CREATORS, |i| work.clone()(i))
        .await;
    started.elapsed()
}

async fn namespace(client: &kube::Client, name: &str) {
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &body)
        .await
        .expect("namespace created");
}

/// One Event about resource `name`, as the operator records a row write or delete .
async fn record_event(events: &Api<Event>, namespace: &str, name: &str, reason: &str) {
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let body: Event = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}.{:x}", now.0.as_nanosecond()), "namespace": namespace},
        "action": "Reconcile", "eventTime": now, "reason": reason, "type": "Normal",
        "note": format!("row {namespace}/{name} {reason}"),
        "regarding": {"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter", "name": name, "namespace": namespace},
        "reportingController": "bench", "reportingInstance": "bench",
    }))
    .expect("event");
    events
        .create(&PostParams::default(), &body)
        .await
        .expect("event created");
}

/// The unavoidable API writes for n resources, made directly in namespace `ns`, each phase timed until
/// the same watch that times the operator's phases has seen every status Ready, then every resource
/// gone: (create phase, delete phase). With `events`, one Event per resource and phase too.
async fn bare_api_writes(client: &kube::Client, n: usize, ns: &str, events: bool) -> (Duration, Duration) {
    namespace(client, ns).await;
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), ns);
    let recorder: Api<Event> = Api::namespaced(client.clone(), ns);
    let seen = track(client, ns);
    let cpu = CpuSplit::now(None);
    let started = Instant::now();
    fan_out(n, {
        let (api, recorder, ns) = (api.clone(), recorder.clone(), ns.to_owned());
        move |i| {
            let (api, recorder, ns) = (api.clone(), recorder.clone(), ns.clone());
            async move {
                let name = format!("w{i}");
                api.create(&PostParams::default(), &writer(&ns, &name, "bare"))
                    .await
                    .expect("create");
                let finalizer = json!([{"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}]);
                api.patch(&name, &PatchParams::default(), &Patch::Json::<()>(serde_json::from_value(finalizer).expect("patch")))
                    .await
                    .expect("finalizer");
                if events {
                    record_event(&recorder, &ns, &name, "Written").await;
                }
                let status = json!({"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
                    "status": {"observedGeneration": 1, "table": "bare", "conditions": [{"type": "Ready", "status": "True",
                    "reason": "Synced", "message": "row is in table bare", "lastTransitionTime": "2026-11-22T00:00:00Z", "observedGeneration": 1}]}});
                api.patch_status(&name, &PatchParams::apply("bench").force(), &Patch::Apply(status))
                    .await
                    .expect("status");
            }
        }
    })
    .await;
    until("every bare status Ready", Duration::from_secs(600), async || {
        seen.lock().expect("lock").ready.len() == n
    })
    .await;
    let create = started.elapsed();
    println!("bare ({ns}) create phase {}", cpu.since(None));
    let cpu = CpuSplit::now(None);
    let started = Instant::now();
    fan_out(n, {
        let (api, recorder, ns) = (api.clone(), recorder.clone(), ns.to_owned());
        move |i| {
            let (api, recorder, ns) = (api.clone(), recorder.clone(), ns.clone());
            async move {
                let name = format!("w{i}");
                api.delete(&name, &DeleteParams::default()).await.expect("delete");
                if events {
                    record_event(&recorder, &ns, &name, "Deleted").await;
                }
                let remove = json!([{"op": "remove", "path": "/metadata/finalizers"}]);
                api.patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Json::<()>(serde_json::from_value(remove).expect("patch")),
                )
                .await
                .expect("finalizer removed");
            }
        }
    })
    .await;
    until("every bare resource gone", Duration::from_secs(600), async || {
        seen.lock().expect("lock").present.is_empty()
    })
    .await;
    let delete = started.elapsed();
    println!("bare ({ns}) delete phase {}", cpu.since(None));
    (create, delete)
}

/// Which resources of a namespace exist and which are Ready, kept current by a watch.
#[derive(Default)]
struct Seen {
    present: HashSet<String>,
    ready: HashSet<String>,
}

fn track(client: &kube::Client, namespace: &str) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), namespace);
    let state = seen.clone();
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).default_backoff().boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let mut seen = state.lock().expect("lock");
            match event {
                watcher::Event::Apply(w) | watcher::Event::InitApply(w) => {
                    let ready = w.status.as_ref().is_some_and(|s| {
                        s.conditions
                            .iter()
                            .any(|c| c.type_ == "Ready" && c.status == "True")
                    });
                    seen.present.insert(w.name_any());
                    if ready {
                        seen.ready.insert(w.name_any());
                    } else {
                        seen.ready.remove(&w.name_any());
                    }
                }
                watcher::Event::Delete(w) => {
                    seen.present.remove(&w.name_any());
                    seen.ready.remove(&w.name_any());
                }
                watcher::Event::Init | watcher::Event::InitDone => {}
            }
        }
    });
    seen
}

async fn count_rows(sql: &tokio_postgres::Client, table: &str) -> i64 {
    match sql
        .query_one(&format!("SELECT count(*) FROM \"{table}\""), &[])
        .await
    {
        Ok(row) => row.get(0),
        Err(_) => 0,
    }
}

/// Polls `done` every 10 ms; returns when it holds.
async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done().await {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) used so far by process `pid`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th (in ticks).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The throwaway cluster's postmaster, whose processes are the bench's PostgreSQL.
static POSTMASTER: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// The parent of process `pid`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds used so far by each process of the bench's PostgreSQL cluster (the postmaster and its
/// children, not other clusters on a shared machine), by pid.
fn postgres_cpu_seconds() -> HashMap<u32, f64> {
    let Some(&postmaster) = POSTMASTER.get() else {
        return HashMap::new();
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid == postmaster || parent(pid) == Some(postmaster))
        .map(|pid| (pid, cpu_seconds(pid)))
        .collect()
}

/// CPU seconds the hypervisor gave to others while this machine wanted them (`steal` in /proc/stat):
/// a phase with much of it ran on a busy host, and its times are not comparable.
fn stolen_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu = stat.lines().next().unwrap_or_default();
    cpu.split_whitespace()
        .nth(8)
        .and_then(|ticks| ticks.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 100.0
}

/// The real control plane's processes (etcd, kube-apiserver, kube-controller-manager); none for the
/// embedded server, which runs inside this process.
static SERVER_PIDS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn server_cpu_seconds() -> f64 {
    SERVER_PIDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|pid| cpu_seconds(*pid))
        .sum()
}

/// Where the CPU went during a phase: (this process: clients, and the API server when embedded; the
/// real control plane's processes; the operator; PostgreSQL).
struct CpuSplit {
    bench: f64,
    server: f64,
    operator: f64,
    postgres: HashMap<u32, f64>,
    stolen: f64,
}

impl CpuSplit {
    fn now(operator: Option<u32>) -> Self {
        CpuSplit {
            bench: cpu_seconds(std::process::id()),
            server: server_cpu_seconds(),
            operator: operator.map_or(0.0, cpu_seconds),
            postgres: postgres_cpu_seconds(),
            stolen: stolen_seconds(),
        }
    }

    fn since(&self, operator: Option<u32>) -> String {
        let now = CpuSplit::now(operator);
        format!(
            "CPU s: bench process (clients, embedded server) {:.2}, real control plane {:.2}, operator {:.2}, PostgreSQL {:.2} (stolen by the host {:.2})",
            now.bench - self.bench,
            now.server - self.server,
            now.operator - self.operator,
            // A backend that exited in between is not counted; one that started counts whole.
            now.postgres
                .iter()
                .map(|(pid, used)| used - self.postgres.get(pid).copied().unwrap_or(0.0))
                .sum::<f64>(),
            now.stolen - self.stolen
        )
    }
}

/// The operator, its probe port and its metrics port.
async fn start_operator(kubeconfig: &std::path::Path, database_url: &str) -> (Operator, u16, u16) {
    let probes = free_port();
    let metrics = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_operator"))
        .args(["run", "--controllers", "postgres-writer"])
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .env("KUBECONFIG", kubeconfig)
        .env("DATABASE_URL", database_url)
        .env(
            "LOG_LEVEL",
            std::env::var("BENCH_OPERATOR_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .spawn()
        .expect("operator starts");
    let operator = Operator(child);
    until("operator ready", Duration::from_secs(30), async || {
        readyz(probes).await
    })
    .await;
    (operator, probes, metrics)
}

async fn readyz(port: u16) -> bool {
    http_get(port, "/readyz")
        .await
        .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
}

/// The whole response to `GET path` on a loopback port, or `None` when nothing answers.
async fn http_get(port: u16, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    Some(response)
}

/// Statements and rows of one database operation so far, from the operator's metrics.
async fn statements(metrics: u16, operation: &str) -> (f64, f64) {
    let text = http_get(metrics, "/metrics").await.unwrap_or_default();
    let value = |name: &str| {
        let series = format!("postgres_writer_batch_rows_{name}{{operation=\"{operation}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(series.as_str())?.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (value("count"), value("sum"))
}

/// How the operator's row writes of a phase were batched.
async fn batching(metrics: u16, operation: &str, before: (f64, f64)) -> String {
    let (count, rows) = statements(metrics, operation).await;
    let (count, rows) = (count - before.0, rows - before.1);
    format!(
        "{operation}: {count} statements, {:.1} rows each",
        rows / count.max(1.0)
    )
}

/// Creates `n` resources at `rate`/s into a table whose inserts NOTIFY; returns per-resource latency
/// from sending the create to the row's commit being announced.
async fn create_to_row_latency(
    client: &kube::Client,
    database_url: &str,
    sql: &tokio_postgres::Client,
    n: usize,
    rate: u32,
) -> Vec<Duration> {
    sql.batch_execute(
        // Each server's run measures this once, in the same PostgreSQL: start from nothing.
        "DROP TABLE IF EXISTS latency; DROP FUNCTION IF EXISTS announce() CASCADE; \
         CREATE TABLE latency (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL); \
         CREATE FUNCTION announce() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_notify('rows', NEW.id); RETURN NEW; END $$; \
         CREATE TRIGGER announce AFTER INSERT ON latency FOR EACH ROW EXECUTE FUNCTION announce();",
    )
    .await
    .expect("latency table");
    let (listener, mut connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls)
        .await
        .expect("listener connects");
    let arrived: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let record = arrived.clone();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                record
                    .lock()
                    .expect("lock")
                    .insert(n.payload().to_owned(), Instant::now());
            }
        }
    });
    listener.batch_execute("LISTEN rows").await.expect("LISTEN");
    namespace(client, "latency").await;
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), "latency");
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / rate);
    let mut creates = Vec::new();
    for i in 0..n {
        ticker.tick().await;
        let (api, sent) = (api.clone(), sent.clone());
        creates.push(tokio::spawn(async move {
            let name = format!("l{i}");
            sent.lock()
                .expect("lock")
                .insert(format!("latency/{name}"), Instant::now());
            api.create(&PostParams::default(), &writer("latency", &name, "latency"))
                .await
                .expect("create");
        }));
    }
    futures::future::join_all(creates).await;
    until("every latency row", Duration::from_secs(60), async || {
        arrived.lock().expect("lock").len() >= n
    })
    .await;
    let sent = sent.lock().expect("lock");
    let arrived = arrived.lock().expect("lock");
    let mut latencies: Vec<Duration> = sent
        .iter()
        .filter_map(|(id, at)| Some(arrived.get(id)?.duration_since(*at)))
        .collect();
    latencies.sort();
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The servers the bench runs against, from `BENCH_SERVERS` (`embedded,real` unless set).
fn backends() -> Vec<Backend> {
    std::env::var("BENCH_SERVERS")
        .unwrap_or_else(|_| "embedded,real".into())
        .split(',')
        .map(|name| match name.trim() {
            "embedded" => Backend::Embedded,
            "real" => Backend::Real,
            other => panic!("BENCH_SERVERS: unknown server {other:?} (embedded or real)"),
        })
        .collect()
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Embedded => "embedded API server",
        Backend::Real => "etcd + kube-apiserver + kube-controller-manager",
        Backend::Cluster => "the cluster tier's node",
    }
}

/// Starts `backend`: the embedded server with a watch history every phase fits in (so no watcher has
/// to relist mid-run), or the real control plane.
async fn start_server(backend: Backend, n: usize) -> ControlPlane {
    match backend {
        Backend::Embedded => ControlPlane::embedded(apiserver::Config {
            history_capacity: 16 * n + 10_000,
            ..Default::default()
        })
        .await
        .expect("the embedded API server starts"),
        Backend::Real => ControlPlane::start(Backend::Real)
            .await
            .expect("the real control plane starts"),
        // BENCH_SERVERS names only these two: the bench compares servers, not nodes.
        Backend::Cluster => {
            panic!("the convergence bench runs on the embedded server or the real control plane")
        }
    }
}

/// Installs the operator's CRDs and waits until each is Established, as a client of any server must.
async fn install_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        crds.create(&PostParams::default(), &crd).await.expect("CRD");
        let name = crd.name_any();
        until("the CRD is Established", Duration::from_secs(60), async || {
            crds.get(&name)
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .await;
    }
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("BENCH_RESOURCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let pg = ThrowawayPostgres::start().await.expect("throwaway PostgreSQL");
    let postmaster = std::fs::read_to_string(pg.path().join("data/postmaster.pid"))
        .ok()
        .and_then(|pids| pids.lines().next()?.trim().parse().ok())
        .expect("the postmaster's pid");
    let _ = POSTMASTER.set(postmaster);
    let (sql, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("psql");
    tokio::spawn(connection);
    let mut summaries = Vec::new();
    for backend in backends() {
        let server = start_server(backend, n).await;
        *SERVER_PIDS.lock().unwrap_or_else(|e| e.into_inner()) =
            server.as_real().map(|real| real.pids()).unwrap_or_default();
        let summary = against(&server, backend, &pg, &sql, n, rounds).await;
        summaries.push((backend, summary));
    }
    if let [(_, embedded), (_, real)] = summaries.as_slice() {
        println!(
            "side by side: the operator converges {n} resources in {:.2} s on the embedded server, {:.2} s on the real control plane ({:.2}x); deletes them in {:.2} s and {:.2} s ({:.2}x)",
            embedded.converged,
            real.converged,
            real.converged / embedded.converged,
            embedded.deleted,
            real.deleted,
            real.deleted / embedded.deleted,
        );
    }
}

/// The medians of one server's rounds, in seconds.
struct Summary {
    converged: f64,
    deleted: f64,
}

/// Every round against `server`, and its medians.
async fn against(
    server: &ControlPlane,
    backend: Backend,
    pg: &ThrowawayPostgres,
    sql: &tokio_postgres::Client,
    n: usize,
    rounds: usize,
) -> Summary {
    let name = backend_name(backend);
    let client = server.client();
    install_crds(&client).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    println!(
        "PostgresWriter convergence against the {name}, {n} resources, {CREATORS} concurrent client tasks, {rounds} rounds"
    );
    let mut rounds_seen: Vec<Round> = Vec::new();
    let mut rss = Vec::new();
    for round in 1..=rounds {
        // Each round in fresh namespaces, the operator stopped while the bare writes run (it would
        // reconcile them) and started anew for its own phases.
        let (bare_create, bare_delete) = bare_api_writes(&client, n, &format!("bare-{round}"), false).await;
        println!(
            "round {round}: bare API writes: create+finalizer+status {bare_create:?}, delete+finalizer removal {bare_delete:?}"
        );
        let (evented_create, evented_delete) =
            bare_api_writes(&client, n, &format!("events-{round}"), true).await;
        let [events_create, events_delete] =
            ratios([evented_create, evented_delete], [bare_create, bare_delete]);
        println!(
            "round {round}: bare API writes and the Events the operator records: create {evented_create:?}, delete {evented_delete:?} = {events_create:.2}x / {events_delete:.2}x the bare"
        );
        let (operator, _probes, metrics) = start_operator(&kubeconfig, &pg.url()).await;
        let phases = operator_phases(&client, sql, &operator, metrics, n, &format!("bench-{round}")).await;
        let seen = Round {
            bare: [bare_create, bare_delete],
            evented: [evented_create, evented_delete],
            operator: [phases.converged, phases.deleted],
        };
        let ([create_events, delete_events], [create, delete]) = (seen.with_events(), seen.without_events());
        println!(
            "round {round}: create {n}: every row + Ready in {:?} = {create_events:.2}x the bare with Events ({create:.2}x without)",
            phases.converged
        );
        println!(
            "round {round}: delete {n}: every row + resource gone in {:?} = {delete_events:.2}x the bare with Events ({delete:.2}x without)",
            phases.deleted
        );
        rounds_seen.push(seen);
        rss.push((phases.idle_rss_kib, phases.steady_rss_kib));
        if round == rounds {
            let latencies = create_to_row_latency(&client, &pg.url(), sql, 2_000, 200).await;
            println!(
                "create-to-row at 200/s over {} creates: p50 {:?}, p99 {:?}, max {:?}",
                latencies.len(),
                percentile(&latencies, 0.50),
                percentile(&latencies, 0.99),
                latencies.last().copied().unwrap_or_default()
            );
        }
        drop(operator);
    }
    let medians = |of: fn(&Round) -> [f64; 2]| {
        [0, 1].map(|phase| median(rounds_seen.iter().map(|r| of(r)[phase]).collect()))
    };
    let ([create_events, delete_events], [create, delete]) =
        (medians(Round::with_events), medians(Round::without_events));
    let [events_create, events_delete] = medians(Round::events_alone);
    println!(
        "{name}: median of {rounds} rounds: create {create_events:.2}x the bare with Events ({create:.2}x without), delete {delete_events:.2}x ({delete:.2}x without)"
    );
    // What the Events alone cost: the floor of the ratio without them for any operator recording them.
    println!(
        "{name}: median of {rounds} rounds: the Events alone make the bare {events_create:.2}x slower in the create phase, {events_delete:.2}x in the delete phase"
    );
    let worst = rss.iter().map(|(_, steady)| *steady).max().unwrap_or(0);
    println!(
        "{name}: operator RSS: {:.1} MiB idle, {:.1} MiB at steady state with {n} resources (highest of {rounds} rounds)",
        rss[0].0 as f64 / 1024.0,
        worst as f64 / 1024.0
    );
    let operator_medians = [0, 1].map(|phase| {
        median(
            rounds_seen
                .iter()
                .map(|r| r.operator[phase].as_secs_f64())
                .collect(),
        )
    });
    Summary {
        converged: operator_medians[0],
        deleted: operator_medians[1],
    }
}

/// One round's times, each as [create phase, delete phase].
struct Round {
    bare: [Duration; 2],
    evented: [Duration; 2],
    operator: [Duration; 2],
}

fn ratios(a: [Duration; 2], b: [Duration; 2]) -> [f64; 2] {
    [0, 1].map(|phase| a[phase].as_secs_f64() / b[phase].as_secs_f64())
}

impl Round {
    /// The goal's ratio: against the writes the operator cannot avoid, the Events included.
    fn with_events(&self) -> [f64; 2] {
        ratios(self.operator, self.evented)
    }

    fn without_events(&self) -> [f64; 2] {
        ratios(self.operator, self.bare)
    }

    fn events_alone(&self) -> [f64; 2] {
        ratios(self.evented, self.bare)
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// What one round of the operator's phases measured.
struct Phases {
    converged: Duration,
    deleted: Duration,
    idle_rss_kib: u64,
    steady_rss_kib: u64,
}

/// N resources created at once in namespace `ns` until every row is present and every status Ready,
/// the operator's RSS at that steady state, then all deleted until every row and resource is gone.
/// The operator's Events in a namespace: each reason's occurrences (a series counts its repeats).
struct EventCounts {
    written: i64,
    deleted: i64,
    warnings: i64,
}

async fn event_counts(client: &kube::Client, ns: &str) -> EventCounts {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let listed = events.list(&Default::default()).await.expect("events").items;
    let occurrences = |keep: &dyn Fn(&Event) -> bool| -> i64 {
        listed
            .iter()
            .filter(|e| e.reporting_controller.as_deref() == Some("postgres-writer") && keep(e))
            .map(|e| i64::from(e.series.as_ref().map_or(1, |s| s.count)))
            .sum()
    };
    EventCounts {
        written: occurrences(&|e| e.reason.as_deref() == Some("Written")),
        deleted: occurrences(&|e| e.reason.as_deref() == Some("Deleted")),
        warnings: occurrences(&|e| e.type_.as_deref() == Some("Warning")),
    }
}

/// The operator's `controller_events_dropped_total`, all controllers.
async fn dropped_events(metrics: u16) -> u64 {
    let text = http_get(metrics, "/metrics").await.unwrap_or_default();
    text.lines()
        .filter(|line| line.starts_with("controller_events_dropped_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.trim().parse::<f64>().ok())
        .map(|dropped| dropped as u64)
        .sum()
}

async fn operator_phases(
    client: &kube::Client,
    sql: &tokio_postgres::Client,
    operator: &Operator,
    metrics: u16,
    n: usize,
    ns: &str,
) -> Phases {
    let pid = operator.0.id();
    let idle_rss_kib = rss_kib(pid);
    // A table per round: the last round's deleted rows would leave the next one autovacuum's work.
    let table = ns.replace('-', "_");
    namespace(client, ns).await;
    let seen = track(client, ns);
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    let cpu = CpuSplit::now(Some(pid));
    let upserts = statements(metrics, "upsert").await;
    fan_out(n, {
        let (api, ns, table) = (api.clone(), ns.to_owned(), table.clone());
        move |i| {
            let (api, ns, table) = (api.clone(), ns.clone(), table.clone());
            async move {
                api.create(&PostParams::default(), &writer(&ns, &format!("w{i}"), &table))
                    .await
                    .expect("create");
            }
        }
    })
    .await;
    until(
        "every row and every Ready status",
        Duration::from_secs(600),
        async || seen.lock().expect("lock").ready.len() == n && count_rows(sql, &table).await == n as i64,
    )
    .await;
    let converged = started.elapsed();
    println!("{ns} create phase {}", cpu.since(Some(pid)));
    println!(
        "{ns} create phase rows {}",
        batching(metrics, "upsert", upserts).await
    );
    // Steady state: nothing left to reconcile; let the allocator settle for a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let steady_rss_kib = rss_kib(pid);
    if let Some(later) = std::env::var("BENCH_RSS_AGAIN_AFTER")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        tokio::time::sleep(Duration::from_secs(later)).await;
        println!(
            "operator RSS {later} s later: {:.1} MiB",
            rss_kib(pid) as f64 / 1024.0
        );
    }

    let started = Instant::now();
    let cpu = CpuSplit::now(Some(pid));
    let deletes = statements(metrics, "delete").await;
    fan_out(n, {
        let api = api.clone();
        move |i| {
            let api = api.clone();
            async move {
                api.delete(&format!("w{i}"), &DeleteParams::default())
                    .await
                    .expect("delete");
            }
        }
    })
    .await;
    until(
        "every row and every resource gone",
        Duration::from_secs(600),
        async || seen.lock().expect("lock").present.is_empty() && count_rows(sql, &table).await == 0,
    )
    .await;
    let deleted = started.elapsed();
    println!("{ns} delete phase {}", cpu.since(Some(pid)));
    println!(
        "{ns} delete phase rows {}",
        batching(metrics, "delete", deletes).await
    );
    // Every row written and deleted has its Event (or a repeat counted in a series), written after
    // the phases that made them; not part of the phases' times.
    let mut events = event_counts(client, ns).await;
    let deadline = Instant::now() + Duration::from_secs(300);
    while events.written + events.deleted < 2 * n as i64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        events = event_counts(client, ns).await;
    }
    println!(
        "{ns} Events: Written {} for {n} rows written, Deleted {} for {n} rows deleted, Warning {}, dropped {} (controller_events_dropped_total); all written {:?} after the delete phase began",
        events.written,
        events.deleted,
        events.warnings,
        dropped_events(metrics).await,
        started.elapsed()
    );
    Phases {
        converged,
        deleted,
        idle_rss_kib,
        steady_rss_kib,
    }
}
