//! `operator`: see `operator --help`.

use std::{io::Write, process::ExitCode};

use clap::Parser;
use operator::manager::{
    cli::{Cli, Command, DevArgs},
    crds, logs, run,
};
use tokio::sync::watch;

/// jemalloc rather than glibc's malloc, with the options the `apiserver` binary runs it with
/// (serving::allocator says why). After a burst (10,000 resources reconciled at once) glibc kept about
/// 9 MB freed but resident in its arenas; jemalloc, which returns unused pages on its own, did not.
#[global_allocator]
static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;

// Linked for its `memcpy` and `memmove`, which the static musl build uses in place of musl's.
#[cfg(all(target_env = "musl", target_arch = "x86_64"))]
use static_memcpy as _;

/// Turns SIGTERM / Ctrl-C into the shutdown signal every part of the manager watches; a shutdown
/// still running `bound` after the signal ends the process with status 1. Both signals are registered
/// before this returns: a signal that arrived before a spawned task first ran would otherwise meet the
/// default disposition and end the process at once, with no clean shutdown.
fn shutdown_on_signal(bound: std::time::Duration) -> operator::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (sender, receiver) = watch::channel(false);
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("shutting down");
        let _ = sender.send(true);
        tokio::time::sleep(bound).await;
        tracing::error!(timeout = ?bound, "graceful shutdown took too long; exiting");
        std::process::exit(1);
    });
    Ok(receiver)
}

async fn client() -> operator::Result<kube::Client> {
    kube::Client::try_default().await.map_err(|e| {
        operator::Error::Config(format!("no cluster to talk to (KUBECONFIG or in-cluster): {e}"))
    })
}

#[cfg(feature = "dev")]
async fn dev(args: DevArgs) -> operator::Result<()> {
    operator::manager::dev::dev(args, shutdown_on_signal(run::GRACEFUL_SHUTDOWN_TIMEOUT)?).await
}

/// A release build leaves dev mode out (the embedded API server, a throwaway PostgreSQL): say how to
/// get it rather than fail to parse.
#[cfg(not(feature = "dev"))]
async fn dev(_: DevArgs) -> operator::Result<()> {
    Err(operator::Error::Config(
        "this build has no dev mode: run `make dev`, or build with `cargo build -p operator --features dev`"
            .into(),
    ))
}

async fn execute(cli: Cli) -> operator::Result<()> {
    match cli.command {
        Command::Run(args) => {
            let shutdown = shutdown_on_signal(args.shutdown_bound())?;
            run::run(client().await?, args, shutdown).await
        }
        Command::Dev(args) => dev(args).await,
        Command::Install => crds::install(&client().await?, in_cluster_crds()).await,
        Command::Uninstall => {
            // With the CRDs, the admission configurations a killed `operator run` left behind.
            let client = client().await?;
            crds::remove_left_behind(&client).await?;
            crds::uninstall(&client).await
        }
        Command::MigrateStorage => {
            for line in operator::manager::migrate::migrate_storage(&client().await?).await? {
                println!("{line}");
            }
            Ok(())
        }
        Command::Webhooks { out_dir } => {
            write_documents(operator::webhook::configurations::manifests()?, out_dir)
        }
        Command::Crds { out_dir } => {
            let mut documents = Vec::new();
            for crd in in_cluster_crds() {
                let name = crd.metadata.name.clone().unwrap_or_default();
                let yaml = serde_yaml::to_string(&crd).map_err(|e| operator::Error::Config(e.to_string()))?;
                documents.push((format!("{name}.yaml"), yaml));
            }
            write_documents(documents, out_dir)
        }
    }
}

/// The CRDs as deployed: VoteConfig converting through the webhook Service of `config/webhook`.
fn in_cluster_crds()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> {
    operator::webhook::configurations::crds(&operator::webhook::configurations::Endpoint::InCluster)
}

/// Each `(file name, YAML)` into `out_dir`, or all to stdout as one multi-document stream.
fn write_documents(
    documents: Vec<(String, String)>,
    out_dir: Option<std::path::PathBuf>,
) -> operator::Result<()> {
    match out_dir {
        None => {
            let mut out = std::io::stdout().lock();
            for (_, yaml) in documents {
                writeln!(out, "---\n{yaml}")?;
            }
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            for (file, yaml) in documents {
                std::fs::write(dir.join(file), yaml)?;
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = logs::init(cli.log_format, &cli.log_level).and_then(|()| {
        let mut runtime = tokio::runtime::Builder::new_multi_thread();
        if let Some(threads) = cli.command.worker_threads() {
            runtime.worker_threads(threads);
        }
        runtime.enable_all().build()?.block_on(execute(cli))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("operator: {error}");
            ExitCode::FAILURE
        }
    }
}
