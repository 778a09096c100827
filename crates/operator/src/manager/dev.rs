//! `operator dev`: the whole product on one machine with nothing configured. The embedded API server,
//! a throwaway PostgreSQL (unless PSQL_* or DATABASE_URL name one), the CRDs, every controller.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use tokio::sync::watch;

use super::{cli::DevArgs, run};
use crate::{
    Error, Result,
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
};

fn database_configured() -> bool {
    [
        "DATABASE_URL",
        "PSQL_HOST",
        "PSQL_PORT",
        "PSQL_DBNAME",
        "PSQL_USER",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

pub async fn dev(mut args: DevArgs, shutdown: watch::Receiver<bool>) -> Result<()> {
    let server = apiserver::ApiServer::start(apiserver::Config {
        addr: args.apiserver_addr,
        ..Default::default()
    })
    .await
    .map_err(|e| Error::Config(format!("embedded API server on {}: {e}", args.apiserver_addr)))?;
    server
        .write_kubeconfig(&args.kubeconfig)
        .map_err(|e| Error::Config(format!("writing {}: {e}", args.kubeconfig.display())))?;
    let client = server.client();
    install_crds(&client).await?;

    // Dropped at the end of this function: the throwaway cluster stops with the process.
    let mut _postgres = None;
    if !database_configured() {
        let postgres = ThrowawayPostgres::start().await?;
        args.run.database = DatabaseConfig::from_url(&postgres.url());
        _postgres = Some(postgres);
    }
    let database_url = args.run.database.url.clone().unwrap_or_else(|| {
        format!(
            "postgres://{}@{}:{}/{}",
            args.run.database.user, args.run.database.host, args.run.database.port, args.run.database.dbname
        )
    });
    let kubeconfig = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    println!("API server: {}", server.url());
    println!("DATABASE_URL={database_url}");
    println!();
    println!("Next, in another terminal:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl apply -f config/samples/");
    println!("  kubectl get postgreswriters,voteconfigs,webapps");
    println!("  psql \"{database_url}\" -c 'select * from students'");
    println!("Ctrl-C stops everything.");
    let result = run::run(client, args.run, shutdown).await;
    server.shutdown().await;
    result
}

/// Applies every CRD by server-side apply and waits until each is established.
pub async fn install_crds(client: &kube::Client) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply("operator").force(),
            &Patch::Apply(&crd),
        )
        .await?;
        let established = kube::runtime::wait::await_condition(
            api.clone(),
            &name,
            kube::runtime::wait::conditions::is_crd_established(),
        );
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .map_err(|_| Error::Config(format!("CRD {name} was not established within 30 s")))?
            .map_err(|e| Error::Config(format!("waiting for CRD {name}: {e}")))?;
    }
    Ok(())
}

pub async fn uninstall_crds(client: &kube::Client) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}
