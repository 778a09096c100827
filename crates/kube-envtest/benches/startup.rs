//! `cargo bench -p kube-envtest --bench startup`: what a test pays for an [`Environment`], in time and
//! memory. `--profile dev` measures the build `cargo test` makes, which is what users' tests run.
//!
//! 1. A fresh process per server, as nextest runs each test: from `main` to a server with one CRD
//!    Established and a first request answered, and the process's resident memory before the server,
//!    once it is ready, and at its peak. The bench runs itself as a child `BENCH_RUNS` times (15).
//! 2. One process, a server after another, as `cargo test` runs a test binary's tests: the start-up
//!    of each (the process's one-time costs already paid), and the memory each server holds while
//!    `BENCH_HELD` of them (20) run at once.
//!
//! Medians, with the range: the machine is shared, so single runs say little.

#[path = "support/proc_status.rs"]
mod proc_status;

use std::{
    process::Command,
    time::{Duration, Instant},
};

use kube::{Api, CustomResource, api::ListParams};
use kube_envtest::Environment;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Set in the child processes of part 1.
const CHILD: &str = "KUBE_ENVTEST_BENCH_CHILD";

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "bench.example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    pub size: u32,
}

/// `VmRSS` or `VmHWM` of this process, in KiB, from /proc.
fn status_kib(field: &str) -> u64 {
    proc_status::status_kib("/proc/self/status", field)
}

/// A server with the Widget CRD Established, and its first list answered.
async fn ready_environment() -> Environment {
    let env = Environment::builder()
        .crd_for::<Widget>()
        .start()
        .await
        .expect("start");
    let widgets: Api<Widget> = Api::default_namespaced(env.client());
    widgets.list(&ListParams::default()).await.expect("first request");
    env
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median_and_range<T: Copy + PartialOrd>(values: &mut [T]) -> (T, T, T) {
    values.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::var_os(CHILD).is_some() {
        let started = Instant::now();
        let before = status_kib("VmRSS");
        let env = ready_environment().await;
        let ready = started.elapsed();
        println!(
            "{} {before} {} {}",
            ready.as_micros(),
            status_kib("VmRSS"),
            status_kib("VmHWM")
        );
        drop(env);
        return;
    }
    let runs = env_number("BENCH_RUNS", 15);

    // 1. A fresh process per server.
    let exe = std::env::current_exe().expect("own path");
    let (mut ready, mut baseline, mut rss, mut peak, mut whole) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let spawned = Instant::now();
        let output = Command::new(&exe).env(CHILD, "1").output().expect("child runs");
        whole.push(spawned.elapsed());
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = String::from_utf8_lossy(&output.stdout);
        let numbers: Vec<u64> = line
            .split_whitespace()
            .map(|n| n.parse().expect("a number"))
            .collect();
        ready.push(Duration::from_micros(numbers[0]));
        baseline.push(numbers[1]);
        rss.push(numbers[2]);
        peak.push(numbers[3]);
    }
    let (ready, ready_min, ready_max) = median_and_range(&mut ready);
    let (whole, whole_min, whole_max) = median_and_range(&mut whole);
    let (baseline, _, _) = median_and_range(&mut baseline);
    let (rss, rss_min, rss_max) = median_and_range(&mut rss);
    let (peak, _, peak_max) = median_and_range(&mut peak);
    println!("fresh process, {runs} runs (median, range):");
    println!(
        "  main to ready (server, CRD Established, first list): {ready:?} ({ready_min:?}-{ready_max:?})"
    );
    println!(
        "  whole process (exec to exit):                        {whole:?} ({whole_min:?}-{whole_max:?})"
    );
    println!(
        "  RSS: {:.1} MiB before the server, {:.1} MiB ready ({:.1}-{:.1}), peak {:.1} MiB (max {:.1})",
        mib(baseline),
        mib(rss),
        mib(rss_min),
        mib(rss_max),
        mib(peak),
        mib(peak_max)
    );

    // 2. One process, servers one after another, then many held at once.
    drop(ready_environment().await);
    let mut later = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let env = ready_environment().await;
        later.push(started.elapsed());
        drop(env);
    }
    let (later, later_min, later_max) = median_and_range(&mut later);
    println!("same process, {runs} servers one after another:");
    println!("  start to ready: {later:?} ({later_min:?}-{later_max:?})");
    let held = env_number("BENCH_HELD", 20);
    let before = status_kib("VmRSS");
    let mut environments = Vec::with_capacity(held);
    for _ in 0..held {
        environments.push(ready_environment().await);
    }
    let after = status_kib("VmRSS");
    println!(
        "  {held} servers held at once: RSS {:.1} -> {:.1} MiB, {:.2} MiB per server",
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)) / held as f64
    );
}
