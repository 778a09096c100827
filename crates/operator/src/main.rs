//! `operator`: see `operator --help`.

use std::{io::Write, process::ExitCode};

use clap::Parser;
use operator::manager::{
    cli::{Cli, Command, LogFormat},
    dev, run,
};
use tokio::sync::watch;

fn init_logs(cli: &Cli) {
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log_level).unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// Turns SIGTERM / Ctrl-C into the shutdown signal every part of the manager watches.
fn shutdown_on_signal() -> watch::Receiver<bool> {
    let (sender, receiver) = watch::channel(false);
    tokio::spawn(async move {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match terminate.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        tracing::info!("shutting down");
        let _ = sender.send(true);
        // controller-runtime's GracefulShutdownTimeout: in-flight reconciles get 30 s, then the process goes.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        tracing::error!("graceful shutdown took longer than 30 s; exiting");
        std::process::exit(1);
    });
    receiver
}

async fn client() -> operator::Result<kube::Client> {
    kube::Client::try_default().await.map_err(|e| {
        operator::Error::Config(format!("no cluster to talk to (KUBECONFIG or in-cluster): {e}"))
    })
}

async fn execute(cli: Cli) -> operator::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(client().await?, args, shutdown_on_signal()).await,
        Command::Dev(args) => dev::dev(args, shutdown_on_signal()).await,
        Command::Install => dev::install_crds(&client().await?).await,
        Command::Uninstall => dev::uninstall_crds(&client().await?).await,
        Command::Crds { out_dir } => {
            let crds = operator::api::crds();
            match out_dir {
                None => {
                    let mut out = std::io::stdout().lock();
                    for crd in crds {
                        writeln!(
                            out,
                            "---\n{}",
                            serde_yaml::to_string(&crd)
                                .map_err(|e| operator::Error::Config(e.to_string()))?
                        )?;
                    }
                }
                Some(dir) => {
                    std::fs::create_dir_all(&dir)?;
                    for crd in crds {
                        let name = crd.metadata.name.clone().unwrap_or_default();
                        let yaml = serde_yaml::to_string(&crd)
                            .map_err(|e| operator::Error::Config(e.to_string()))?;
                        std::fs::write(dir.join(format!("{name}.yaml")), yaml)?;
                    }
                }
            }
            Ok(())
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(&cli);
    match execute(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("operator: {error}");
            ExitCode::FAILURE
        }
    }
}
