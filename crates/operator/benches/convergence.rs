//! PostgresWriter at scale, against the embedded API server and then the real control plane (etcd,
//! kube-apiserver and kube-controller-manager built from their Go modules), with a throwaway
//! PostgreSQL. Two operators, each a separate process so that its RSS and CPU are its own: ours (the
//! static binary the image holds, built by `make static-binary`) and the controller-runtime
//! PostgresWriter of `testenv/go-peer`, the operator a user would otherwise write (built by its
//! `build.sh`; each build is skipped when up to date).
//! 1. the bare figure: the API writes the operator cannot avoid made directly by this process for N
//!    resources, no operator running, timed like the operator's phases by a watch that sees every
//!    status Ready / every resource gone. Twice: without Events (create, add finalizer, write status;
//!    delete, remove finalizer), the measure the convergence goal was set against, and with the Event
//!    the operator records per row write and per row delete, the second view (the ratio against the
//!    first cannot go below what the Events alone cost, which is printed too);
//! 2. for each operator, N resources created at once: time until every row is present and every
//!    status Ready, then all deleted: time until every row and every resource is gone, each against
//!    both bare figures; the Events it recorded (one per row written, one per row deleted expected)
//!    when converged and once settled; its CPU and the statements it ran in PostgreSQL per phase;
//! 3. each operator's RSS at steady state with N resources, and its peak;
//! 4. create-to-row latency at a steady 200 creates/s (the row's commit is seen through LISTEN/NOTIFY).
//!
//! Steps 1-3 run in rounds (the machine is shared and noisy; the medians are the figures). In each
//! round the bare writes and each operator get a fresh server of their own (an embedded server
//! starts in milliseconds, the real control plane in seconds): a server that kept the objects and
//! Events of an earlier phase would be slower for whoever comes after, and the operators take turns
//! going first, round by round. Each operator has its own PostgreSQL role and schema, so its tables
//! and ledger are its own and pg_stat_statements counts its statements apart. Step 4 runs once per
//! operator, after its phases of the last round.
//!
//! `cargo bench -p operator --bench convergence` (N=10000, 3 rounds, both servers, both operators).
//! Knobs: `BENCH_SERVERS` (`embedded`, `real` or both, comma-separated), `BENCH_OPERATORS` (`ours`,
//! `go` or both, comma-separated, in the order of the first round), `BENCH_RESOURCES`,
//! `BENCH_ROUNDS`, `BENCH_OPERATOR_LOG=debug` (a log filter for our operator, whose log goes to
//! stderr), `BENCH_GO_PEER_LOG` (the peer's `--zap-log-level`, `error` unless set),
//! `BENCH_STATEMENTS=top` (each operator's most frequent statements over the run, at its end),
//! `BENCH_RSS_AGAIN_AFTER=<seconds>` (the RSS read again that much later), `BENCH_OPERATOR_BIN` (another
//! build of ours to measure, e.g. the bench's own dev-mode binary, `target/release/operator`). The peer needs `go` on the
//! PATH (`bash testenv/go-peer/build.sh` builds it ahead). `cargo bench --profile profiling ...`
//! builds in a fraction of the time, for trying changes.

#[path = "convergence/database.rs"]
mod database;
#[path = "convergence/events.rs"]
mod events;
#[path = "convergence/operators.rs"]
mod operators;
#[path = "support/process.rs"]
mod process;
mod support;

/// The embedded API server runs in this process under jemalloc, the allocator of the binaries that
/// host it (`apiserver`, and `operator` in dev mode). Under glibc's malloc the server slowed down from
/// round to round as the Events of earlier rounds piled up in its heap (malloc's own time rose from 7%
/// to 17% of the process's CPU between the first and the third round, perf). With the binaries'
/// options too: they are linked into every program of this package (serving::allocator).
#[global_allocator]
static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
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
use operators::{Kind, Running, http_get, peak_rss_kib, rss_kib};
use serde_json::json;
use testenv::{Backend, ControlPlane};

const CREATORS: usize = 32;

fn writer(namespace: &str, name: &str, table: &str) -> PostgresWriter {
    let mut writer = PostgresWriter::new(
        name,
        PostgresWriterSpec {
            table: table.into(),
            name: format!("student {name}").into(),
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
                    let ready = w
                        .status
                        .as_ref()
                        .is_some_and(|s| s.conditions.iter().any(|c| c.is("Ready", "True")));
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

/// Polls `done` every 10 ms until it holds.
async fn until(what: &str, limit: Duration, done: impl AsyncFnMut() -> bool) {
    support::until_every(what, limit, Duration::from_millis(10), done).await
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

    /// The operator's CPU seconds since then.
    fn operator_since(&self, operator: u32) -> f64 {
        cpu_seconds(operator) - self.operator
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

/// Statements and rows of one database operation so far, from our operator's metrics.
async fn batch_rows(metrics: u16, operation: &str) -> (f64, f64) {
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
    let (count, rows) = batch_rows(metrics, operation).await;
    let (count, rows) = (count - before.0, rows - before.1);
    format!(
        "{operation}: {count} statements, {:.1} rows each",
        rows / count.max(1.0)
    )
}

/// Creates `n` resources at `rate`/s into `kind`'s table `latency`, whose inserts NOTIFY; returns
/// per-resource latency from sending the create to the row's commit being announced.
async fn create_to_row_latency(
    client: &kube::Client,
    database_url: &str,
    sql: &tokio_postgres::Client,
    kind: Kind,
    n: usize,
    rate: u32,
) -> Vec<Duration> {
    let schema = kind.role();
    sql.batch_execute(&format!(
        // Each operator's run measures this once per server, in the same PostgreSQL: start from
        // nothing, in the operator's own schema and owned by its role.
        "DROP TABLE IF EXISTS {schema}.latency; \
         CREATE TABLE {schema}.latency (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL); \
         ALTER TABLE {schema}.latency OWNER TO {schema}; \
         CREATE OR REPLACE FUNCTION public.announce() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_notify('rows', NEW.id); RETURN NEW; END $$; \
         CREATE TRIGGER announce AFTER INSERT ON {schema}.latency FOR EACH ROW EXECUTE FUNCTION public.announce();"
    ))
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

/// A fresh server of kind `backend` with the operator's CRDs installed; the CPU split counts its
/// processes from now on.
async fn fresh_server(backend: Backend, n: usize) -> ControlPlane {
    let server = start_server(backend, n).await;
    *SERVER_PIDS.lock().unwrap_or_else(|e| e.into_inner()) =
        server.as_real().map(|real| real.pids()).unwrap_or_default();
    install_crds(&server.client()).await;
    server
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
    let kinds = Kind::from_env();
    let servers = backends();
    let binaries: HashMap<Kind, PathBuf> = kinds
        .iter()
        .map(|&kind| match kind {
            Kind::Ours => (kind, operators::build_ours()),
            Kind::Go => (kind, operators::build_go_peer()),
        })
        .collect();
    let pg = ThrowawayPostgres::start().await.expect("throwaway PostgreSQL");
    database::track_statements(&pg).await;
    let postmaster = std::fs::read_to_string(pg.path().join("data/postmaster.pid"))
        .ok()
        .and_then(|pids| pids.lines().next()?.trim().parse().ok())
        .expect("the postmaster's pid");
    let _ = POSTMASTER.set(postmaster);
    let sql = database::connect(&pg.url()).await;
    let mut urls = HashMap::new();
    for &kind in &kinds {
        urls.insert(kind, database::role(&sql, &pg, kind).await);
    }
    let bench = Bench {
        n,
        rounds,
        kinds,
        binaries,
        pg: &pg,
        sql: &sql,
        urls,
    };
    let mut summaries = Vec::new();
    for backend in servers {
        summaries.push((backend, bench.against(backend).await));
    }
    if std::env::var("BENCH_STATEMENTS").as_deref() == Ok("top") {
        for &kind in &bench.kinds {
            println!(
                "{}: the statements it ran most often, with their calls and execution time (ms):",
                kind.label()
            );
            for (calls, exec_ms, statement) in database::top_statements(&sql, kind).await {
                println!("{calls:>10} {exec_ms:>10.0}  {statement}");
            }
        }
    }
    if let [(_, embedded), (_, real)] = summaries.as_slice() {
        for kind in &bench.kinds {
            let (embedded, real) = (&embedded[kind], &real[kind]);
            println!(
                "side by side: {} converges {n} resources in {:.2} s on the embedded server, {:.2} s on the real control plane ({:.2}x); deletes them in {:.2} s and {:.2} s ({:.2}x)",
                kind.label(),
                embedded.converged,
                real.converged,
                real.converged / embedded.converged,
                embedded.deleted,
                real.deleted,
                real.deleted / embedded.deleted,
            );
        }
    }
}

/// What every phase of a run shares.
struct Bench<'a> {
    n: usize,
    rounds: usize,
    /// The operators to run, in the order of the first round.
    kinds: Vec<Kind>,
    /// Each operator's binary.
    binaries: HashMap<Kind, PathBuf>,
    pg: &'a ThrowawayPostgres,
    sql: &'a tokio_postgres::Client,
    /// Each operator's DATABASE_URL (its own role).
    urls: HashMap<Kind, String>,
}

/// The medians of one operator's rounds on one server, in seconds.
struct Summary {
    converged: f64,
    deleted: f64,
}

impl Bench<'_> {
    /// Every round against servers of kind `backend`, and each operator's medians.
    async fn against(&self, backend: Backend) -> HashMap<Kind, Summary> {
        let (n, rounds) = (self.n, self.rounds);
        let name = backend_name(backend);
        println!(
            "PostgresWriter convergence against the {name}, {n} resources, {CREATORS} concurrent client tasks, {rounds} rounds"
        );
        println!(
            "operators: {} (each round on a fresh server of its own; the bare writes on another)",
            self.kinds
                .iter()
                .map(|k| k.label())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut bares: Vec<Bare> = Vec::new();
        let mut seen: HashMap<Kind, Vec<Phases>> = HashMap::new();
        for round in 1..=rounds {
            let bare = bare_round(backend, n, round).await;
            // Turns: neither operator always meets the machine (PostgreSQL's tables, the page
            // cache, the host) as the other left it.
            let mut order = self.kinds.clone();
            if round % 2 == 0 {
                order.reverse();
            }
            for kind in order {
                let phases = self.operator_round(backend, kind, round, &bare).await;
                seen.entry(kind).or_default().push(phases);
            }
            bares.push(bare);
        }
        let [events_create, events_delete] =
            [0, 1].map(|phase| median(bares.iter().map(|b| b.events_alone()[phase]).collect()));
        // What the Events alone cost: the floor of the ratio without them for any operator recording them.
        println!(
            "{name}: median of {rounds} rounds: the Events alone make the bare {events_create:.2}x slower in the create phase, {events_delete:.2}x in the delete phase"
        );
        let mut summaries = HashMap::new();
        for &kind in &self.kinds {
            let phases = &seen[&kind];
            let prefix = kind.prefix();
            let ratios = |of: fn(&Bare, &Phases) -> [f64; 2]| {
                [0, 1].map(|phase| median(bares.iter().zip(phases).map(|(b, p)| of(b, p)[phase]).collect()))
            };
            let ([create_events, delete_events], [create, delete]) =
                (ratios(Bare::with_events), ratios(Bare::without_events));
            println!(
                "{name}: {prefix}median of {rounds} rounds: create {create_events:.2}x the bare with Events ({create:.2}x without), delete {delete_events:.2}x ({delete:.2}x without)"
            );
            let worst = phases.iter().map(|p| p.steady_rss_kib).max().unwrap_or(0);
            println!(
                "{name}: {prefix}operator RSS: {:.1} MiB idle, {:.1} MiB at steady state with {n} resources (highest of {rounds} rounds)",
                phases[0].idle_rss_kib as f64 / 1024.0,
                worst as f64 / 1024.0
            );
            let [converged, deleted] =
                [0, 1].map(|phase| median(phases.iter().map(|p| p.times[phase].as_secs_f64()).collect()));
            summaries.insert(kind, Summary { converged, deleted });
        }
        self.side_by_side(name, &seen);
        summaries
    }

    /// One operator's phases of round `round`, on a fresh server, reported against the round's bare
    /// figures; in the last round its latency too.
    async fn operator_round(&self, backend: Backend, kind: Kind, round: usize, bare: &Bare) -> Phases {
        let server = fresh_server(backend, self.n).await;
        let client = server.client();
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let operator = operators::start(kind, &self.binaries[&kind], &kubeconfig, &self.urls[&kind]).await;
        let phases = operator_phases(
            &client,
            self.sql,
            kind,
            &operator,
            self.n,
            &format!("bench-{round}"),
        )
        .await;
        report_round(kind, round, self.n, bare, &phases);
        if round == self.rounds {
            let latencies = create_to_row_latency(&client, &self.pg.url(), self.sql, kind, 2_000, 200).await;
            println!(
                "{}create-to-row at 200/s over {} creates: p50 {:?}, p99 {:?}, max {:?}",
                kind.prefix(),
                latencies.len(),
                percentile(&latencies, 0.50),
                percentile(&latencies, 0.99),
                latencies.last().copied().unwrap_or_default()
            );
        }
        // The operator goes before its server, so that it never sees the server gone.
        drop(operator);
        drop(server);
        phases
    }

    /// The operators' medians in one table: time, Events, CPU, statements and memory.
    fn side_by_side(&self, name: &str, seen: &HashMap<Kind, Vec<Phases>>) {
        let (n, rounds) = (self.n, self.rounds);
        println!("{name}: side by side, {n} resources, medians of {rounds} rounds");
        let labels: String = self.kinds.iter().map(|k| format!("{:>30}", k.label())).collect();
        println!("{:<62}{labels}", "");
        let row = |what: &str, of: &dyn Fn(&[Phases]) -> String| {
            let cells: String = self
                .kinds
                .iter()
                .map(|kind| format!("{:>30}", of(&seen[kind])))
                .collect();
            println!("{what:<62}{cells}");
        };
        for (phase, what) in [
            "create: every row present and every status Ready, s",
            "delete: every row and every resource gone, s",
        ]
        .into_iter()
        .enumerate()
        {
            row(what, &|p| {
                let time = median(p.iter().map(|p| p.times[phase].as_secs_f64()).collect());
                format!("{time:.2}")
            });
        }
        row("Written Events at convergence / settled", &|p| {
            pair(p, |p| p.written_events.map(|e| e as f64), 0)
        });
        row("Deleted Events at convergence / settled", &|p| {
            pair(p, |p| p.deleted_events.map(|e| e as f64), 0)
        });
        row("operator CPU s, create / delete phase", &|p| {
            pair(p, |p| p.cpu, 2)
        });
        row("PostgreSQL statements, create / delete phase", &|p| {
            pair(p, |p| p.statements.map(|s| s as f64), 0)
        });
        row("operator RSS peak, MiB (highest of the rounds)", &|p| {
            let peak = p.iter().map(|p| p.peak_rss_kib).max().unwrap_or(0);
            format!("{:.1}", peak as f64 / 1024.0)
        });
        println!("(expected: {n} Written and {n} Deleted Events, one per row written and per row deleted)");
    }
}

/// The medians over rounds of a [create phase, delete phase] figure, as "create / delete".
fn pair(phases: &[Phases], of: impl Fn(&Phases) -> [f64; 2], digits: usize) -> String {
    let [create, delete] = [0, 1].map(|i| median(phases.iter().map(|p| of(p)[i]).collect()));
    format!("{create:.digits$} / {delete:.digits$}")
}

/// The bare API writes of round `round`, without and with Events, on a fresh server.
async fn bare_round(backend: Backend, n: usize, round: usize) -> Bare {
    let server = fresh_server(backend, n).await;
    let client = server.client();
    let (bare_create, bare_delete) = bare_api_writes(&client, n, &format!("bare-{round}"), false).await;
    println!(
        "round {round}: bare API writes: create+finalizer+status {bare_create:?}, delete+finalizer removal {bare_delete:?}"
    );
    let (evented_create, evented_delete) =
        bare_api_writes(&client, n, &format!("events-{round}"), true).await;
    let bare = Bare {
        without: [bare_create, bare_delete],
        with: [evented_create, evented_delete],
    };
    let [events_create, events_delete] = bare.events_alone();
    println!(
        "round {round}: bare API writes and the Events the operator records: create {evented_create:?}, delete {evented_delete:?} = {events_create:.2}x / {events_delete:.2}x the bare"
    );
    bare
}

/// What one operator did in one round, beside that round's bare figures.
fn report_round(kind: Kind, round: usize, n: usize, bare: &Bare, phases: &Phases) {
    let prefix = kind.prefix();
    let ([create_events, delete_events], [create, delete]) =
        (bare.with_events(phases), bare.without_events(phases));
    println!(
        "round {round}: {prefix}create {n}: every row + Ready in {:?} = {create_events:.2}x the bare with Events ({create:.2}x without)",
        phases.times[0]
    );
    println!(
        "round {round}: {prefix}delete {n}: every row + resource gone in {:?} = {delete_events:.2}x the bare with Events ({delete:.2}x without)",
        phases.times[1]
    );
    println!(
        "round {round}: {prefix}Events: Written {} at convergence, {} settled; Deleted {} at convergence, {} settled (of {n} each)",
        phases.written_events[0],
        phases.written_events[1],
        phases.deleted_events[0],
        phases.deleted_events[1]
    );
    println!(
        "round {round}: {prefix}operator CPU {:.2} s create, {:.2} s delete; PostgreSQL statements {} create, {} delete; RSS peak {:.1} MiB",
        phases.cpu[0],
        phases.cpu[1],
        phases.statements[0],
        phases.statements[1],
        phases.peak_rss_kib as f64 / 1024.0
    );
}

/// One round's bare figures, each as [create phase, delete phase].
struct Bare {
    without: [Duration; 2],
    with: [Duration; 2],
}

fn ratios(a: [Duration; 2], b: [Duration; 2]) -> [f64; 2] {
    [0, 1].map(|phase| a[phase].as_secs_f64() / b[phase].as_secs_f64())
}

impl Bare {
    /// The goal's ratio: against the writes the operator cannot avoid, the Events included.
    fn with_events(&self, phases: &Phases) -> [f64; 2] {
        ratios(phases.times, self.with)
    }

    fn without_events(&self, phases: &Phases) -> [f64; 2] {
        ratios(phases.times, self.without)
    }

    fn events_alone(&self) -> [f64; 2] {
        ratios(self.with, self.without)
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// What one round of an operator's phases measured, each pair as [create phase, delete phase].
struct Phases {
    times: [Duration; 2],
    idle_rss_kib: u64,
    steady_rss_kib: u64,
    /// The highest RSS of the operator's life up to the end of the delete phase.
    peak_rss_kib: u64,
    /// The operator's CPU seconds from the start of a phase to its convergence.
    cpu: [f64; 2],
    /// Statements the operator's role ran in PostgreSQL, likewise.
    statements: [i64; 2],
    /// `Written` Events, counted at convergence and once settled.
    written_events: [usize; 2],
    /// `Deleted` Events, likewise.
    deleted_events: [usize; 2],
}

/// Our operator's Warning Events in namespace `ns` (a series counts its repeats).
async fn warning_events(client: &kube::Client, ns: &str) -> i64 {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let listed = events.list(&Default::default()).await.expect("events").items;
    listed
        .iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("postgres-writer"))
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| i64::from(e.series.as_ref().map_or(1, |s| s.count)))
        .sum()
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

/// N resources created at once in namespace `ns` until every row is present and every status Ready,
/// the operator's RSS at that steady state, then all deleted until every row and resource is gone.
async fn operator_phases(
    client: &kube::Client,
    sql: &tokio_postgres::Client,
    kind: Kind,
    operator: &Running,
    n: usize,
    ns: &str,
) -> Phases {
    let pid = operator.process.0.id();
    let metrics = operator.metrics;
    let prefix = kind.prefix();
    let idle_rss_kib = rss_kib(pid);
    // A table per round: the last round's deleted rows would leave the next one autovacuum's work.
    let table = ns.replace('-', "_");
    namespace(client, ns).await;
    let seen = track(client, ns);
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), ns);
    let started = Instant::now();
    let cpu = CpuSplit::now(Some(pid));
    let statements = database::statements(sql, kind).await;
    let row_writes = if kind == Kind::Ours {
        Some((
            batch_rows(metrics, "insert").await,
            batch_rows(metrics, "upsert").await,
        ))
    } else {
        None
    };
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
        async || {
            seen.lock().expect("lock").ready.len() == n
                && database::count_rows(sql, kind, &table).await == n as i64
        },
    )
    .await;
    let converged = started.elapsed();
    let create_cpu = cpu.operator_since(pid);
    let create_statements = database::statements(sql, kind).await - statements;
    println!("{prefix}{ns} create phase {}", cpu.since(Some(pid)));
    if let Some((inserts, upserts)) = row_writes {
        println!(
            "{ns} create phase rows {}; {}",
            batching(metrics, "insert", inserts).await,
            batching(metrics, "upsert", upserts).await
        );
    }
    let written_at_convergence = events::count(client, ns, "Written").await;
    let written_settled = events::settled(client, ns, "Written", n).await;
    // Steady state: nothing left to reconcile; let the allocator settle for a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let steady_rss_kib = rss_kib(pid);
    if let Some(later) = std::env::var("BENCH_RSS_AGAIN_AFTER")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        tokio::time::sleep(Duration::from_secs(later)).await;
        println!(
            "{prefix}operator RSS {later} s later: {:.1} MiB",
            rss_kib(pid) as f64 / 1024.0
        );
    }

    let started = Instant::now();
    let cpu = CpuSplit::now(Some(pid));
    let statements = database::statements(sql, kind).await;
    let deletes = if kind == Kind::Ours {
        Some(batch_rows(metrics, "delete").await)
    } else {
        None
    };
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
        async || {
            seen.lock().expect("lock").present.is_empty()
                && database::count_rows(sql, kind, &table).await == 0
        },
    )
    .await;
    let deleted = started.elapsed();
    let delete_cpu = cpu.operator_since(pid);
    let delete_statements = database::statements(sql, kind).await - statements;
    println!("{prefix}{ns} delete phase {}", cpu.since(Some(pid)));
    if let Some(before) = deletes {
        println!(
            "{ns} delete phase rows {}",
            batching(metrics, "delete", before).await
        );
    }
    let deleted_at_convergence = events::count(client, ns, "Deleted").await;
    let deleted_settled = events::settled(client, ns, "Deleted", n).await;
    if deletes.is_some() {
        // Ours counts what its recorder had to give up on; every one missing above should be here.
        let warnings = warning_events(client, ns).await;
        println!(
            "{ns} Events dropped {} (controller_events_dropped_total), Warning {warnings}",
            dropped_events(metrics).await
        );
    }
    Phases {
        times: [converged, deleted],
        idle_rss_kib,
        steady_rss_kib,
        peak_rss_kib: peak_rss_kib(pid),
        cpu: [create_cpu, delete_cpu],
        statements: [create_statements, delete_statements],
        written_events: [written_at_convergence, written_settled],
        deleted_events: [deleted_at_convergence, deleted_settled],
    }
}
