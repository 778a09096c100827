//! The tutorial's local workflow, as the Makefile runs it: `make install` (`operator install`), `make
//! run` (`operator run`, outside the cluster, with no certificate), then `kubectl apply` of the
//! v1alpha1 sample. The run serves VoteConfig's conversion itself, so the sample applies and reads
//! back as both versions, and its ConfigMap is made; when the run ends, the conversion points where
//! `make install` left it, and what a killed run leaves, `make uninstall` removes. Against an API
//! server elsewhere, the run says at start that it cannot serve it, and what to do; against one that
//! cannot call the address it serves on, it says so too.

mod support;

use std::{path::Path, process::Command, time::Duration};

use k8s_openapi::{
    api::{admissionregistration::v1::MutatingWebhookConfiguration, core::v1::ConfigMap},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::Api;
use serde_json::Value;
use support::{Backend, ControlPlane, EXIT_AFTER_SIGNAL, OperatorProcess};

const OPERATOR: &str = env!("CARGO_BIN_EXE_operator");

/// How long `operator run` may take to wire its webhooks: a certificate, a CRD applied and
/// Established, two configurations.
const WIRED_WITHIN: Duration = Duration::from_secs(60);
/// How long the API server may take to call a webhook it was just pointed at (it learns of new
/// configurations through a watch), and the controller to make the ConfigMap.
const CONVERTED_WITHIN: Duration = Duration::from_secs(30);

/// `operator <args>` against the cluster in `kubeconfig`, to its end; fails the test if it fails.
fn operator(kubeconfig: &Path, args: &[&str]) {
    let output = Command::new(OPERATOR)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("operator runs");
    assert!(
        output.status.success(),
        "operator {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `make run`'s `operator run`, with its servers on free loopback ports (tests run side by side), and
/// only the controller the sample needs (no database).
fn make_run(kubeconfig: &Path, extra: &[&str]) -> OperatorProcess {
    let args = [
        &[
            "run",
            "--controllers",
            "vote-config",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--webhook-bind-address",
            "127.0.0.1:0",
        ][..],
        extra,
    ]
    .concat();
    OperatorProcess::spawn(kubeconfig, &args, &[])
}

/// `kubectl get <resource> <name> -o json` in the default namespace.
fn get_json(kubeconfig: &Path, resource: &str, name: &str) -> Value {
    let output = support::kubectl(
        kubeconfig,
        &["get", resource, name, "-n", "default", "-o", "json"],
    );
    serde_json::from_str(&output).expect("kubectl prints JSON")
}

/// Where VoteConfig's CRD sends conversion requests.
async fn conversion_client(client: &kube::Client) -> Value {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get("voteconfigs.voting.schoolofdevops.com")
        .await
        .expect("VoteConfig's CRD");
    serde_json::to_value(crd.spec.conversion).expect("JSON")["webhook"]["clientConfig"].clone()
}

async fn make_install_and_make_run_serve_the_v1alpha1_sample_as_both_versions(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = home.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();

    operator(&kubeconfig, &["install"]);
    let installed = conversion_client(&client).await;
    assert_eq!(
        installed["service"]["name"], "webhook-service",
        "make install points the conversion at the in-cluster Service: {installed}"
    );

    let mut run = make_run(&kubeconfig, &[]);
    let wired = run
        .wait_for_log("serving the webhooks on this machine", WIRED_WITHIN)
        .await;
    assert!(wired.contains("webhooks=https://127.0.0.1:"), "{wired}");
    let during = conversion_client(&client).await;
    let url = during["url"].as_str().unwrap_or_default().to_owned();
    assert!(
        url.starts_with("https://127.0.0.1:") && url.ends_with("/convert"),
        "{during}"
    );
    assert!(during["caBundle"].is_string(), "the run's CA: {during}");
    run.wait_for_log("the API server calls the webhooks here", CONVERTED_WITHIN)
        .await;

    // The tutorial's step.
    support::kubectl(
        &kubeconfig,
        &["apply", "-f", "config/samples/voting_v1alpha1_voteconfig.yaml"],
    );
    let old = get_json(
        &kubeconfig,
        "voteconfigs.v1alpha1.voting.schoolofdevops.com",
        "polls",
    );
    assert_eq!(old["apiVersion"], "voting.schoolofdevops.com/v1alpha1");
    let new = get_json(&kubeconfig, "voteconfigs.v1.voting.schoolofdevops.com", "polls");
    assert_eq!(new["apiVersion"], "voting.schoolofdevops.com/v1");
    assert_eq!(new["spec"]["options"], old["spec"]["options"]);
    assert_eq!(new["spec"]["options"][1]["label"], "Spaces");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let options = support::eventually("the sample's ConfigMap", CONVERTED_WITHIN, || async {
        config_maps
            .get_opt("polls-config")
            .await
            .ok()??
            .data?
            .remove("options.txt")
    })
    .await;
    assert_eq!(options, "a:Tabs:#FF6B6B\nb:Spaces:#4ECDC4\n");

    // Leaving `make run`: the conversion goes back where `make install` pointed it, the admission
    // webhooks are unregistered, and v1 still reads.
    run.signal("INT");
    let status = run.exit_within(EXIT_AFTER_SIGNAL).await;
    let log = run.log_after_exit().await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
    assert!(log.contains("points where it did before this run"), "{log}");
    assert_eq!(conversion_client(&client).await, installed);
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    assert!(
        mutating
            .get_opt("mutating-webhook-configuration")
            .await
            .unwrap()
            .is_none(),
        "the run's defaulting webhook is unregistered"
    );
    let new = get_json(&kubeconfig, "voteconfigs.v1.voting.schoolofdevops.com", "polls");
    assert_eq!(new["spec"]["options"][0]["label"], "Tabs");

    // The next run wires it again.
    let mut again = make_run(&kubeconfig, &[]);
    again
        .wait_for_log("the API server calls the webhooks here", WIRED_WITHIN)
        .await;
    let old = get_json(
        &kubeconfig,
        "voteconfigs.v1alpha1.voting.schoolofdevops.com",
        "polls",
    );
    assert_eq!(old["apiVersion"], "voting.schoolofdevops.com/v1alpha1");
    // Killed, it cannot put anything back: its URL and configurations stay until `make uninstall`.
    again.signal("KILL");
    assert!(again.exit_within(EXIT_AFTER_SIGNAL).await.is_some());
    let stale = conversion_client(&client).await;
    assert!(stale["url"].is_string(), "{stale}");
    assert!(
        mutating
            .get_opt("mutating-webhook-configuration")
            .await
            .unwrap()
            .is_some()
    );

    operator(&kubeconfig, &["uninstall"]);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    support::until_gone(
        &crds,
        "voteconfigs.voting.schoolofdevops.com",
        "make uninstall to delete the CRD",
        Duration::from_secs(60),
    )
    .await;
    for configuration in [
        "mutating-webhook-configuration",
        "validating-webhook-configuration",
    ] {
        let listed = support::kubectl(
            &kubeconfig,
            &[
                "get",
                "mutatingwebhookconfigurations,validatingwebhookconfigurations",
                "-o",
                "name",
            ],
        );
        assert!(
            !listed.contains(configuration),
            "make uninstall removes {configuration}: {listed}"
        );
    }
}

testenv::each_control_plane!(make_install_and_make_run_serve_the_v1alpha1_sample_as_both_versions);

/// A kubeconfig for an API server at `server` that this machine is not (nothing answers there).
fn kubeconfig_for(dir: &Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: remote\n\
         clusters:\n- name: remote\n  cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}\n\
         users:\n- name: admin\n  user: {{token: not-a-real-token}}\n\
         contexts:\n- name: remote\n  context: {{cluster: remote, user: admin}}\n"
    );
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn make_run_against_an_api_server_elsewhere_says_at_start_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    // TEST-NET-1 (RFC 5737): an address of no machine, as a remote cluster's is not this one's.
    let kubeconfig = kubeconfig_for(home.path(), "https://192.0.2.1:6443");
    let mut run = make_run(&kubeconfig, &[]);
    let said = run
        .wait_for_log("the API server is not on this machine", Duration::from_secs(30))
        .await;
    assert!(said.contains("api_server=https://192.0.2.1:6443"), "{said}");
    assert!(
        said.contains("make deploy") && said.contains("--webhook-host"),
        "says what to do: {said}"
    );
    assert!(!run.log_so_far().contains("serving webhooks"), "none are served");
}

#[tokio::test(flavor = "multi_thread")]
async fn make_run_says_when_the_api_server_cannot_call_the_address_it_was_given() {
    let plane = ControlPlane::start(Backend::Embedded)
        .await
        .expect("API server starts");
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = home.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    operator(&kubeconfig, &["install"]);
    // Listening on 127.0.0.1 only, announced at 127.0.0.2: the API server's calls are refused, as
    // those of an API server in a container that dials its own loopback.
    let mut run = make_run(&kubeconfig, &["--webhook-host", "127.0.0.2"]);
    let said = run
        .wait_for_log(
            "the API server cannot call the webhooks served here",
            WIRED_WITHIN,
        )
        .await;
    assert!(said.contains("webhooks=https://127.0.0.2:"), "{said}");
    assert!(said.contains("--webhook-host"), "says what to do: {said}");
    run.signal("INT");
    let status = run.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let restored = conversion_client(&plane.client()).await;
    assert_eq!(restored["service"]["name"], "webhook-service", "{restored}");
}
