//! What kube-apiserver answers before any resource is looked at: its health endpoints, verbose or
//! one check at a time, and a `timeout` query parameter that is no duration.

mod common;

use common::{Answer, exchange};
use serde_json::json;
use testenv::{Backend, ControlPlane};

async fn get(client: &kube::Client, path: &str) -> Answer {
    exchange(client, "GET", path, "", "", Vec::new()).await
}

/// The checks the e2e suite requires of each of the three endpoints.
const REQUIRED: &[&str] = &[
    "[+]ping ok",
    "[+]log ok",
    "[+]etcd ok",
    "[+]poststarthook/start-apiserver-admission-initializer ok",
    "[+]poststarthook/generic-apiserver-start-informers ok",
    "[+]poststarthook/start-apiextensions-informers ok",
    "[+]poststarthook/start-apiextensions-controllers ok",
    "[+]poststarthook/crd-informer-synced ok",
    "[+]poststarthook/bootstrap-controller ok",
    "[+]poststarthook/start-system-namespaces-controller ok",
    "[+]poststarthook/start-service-ip-repair-controllers ok",
    "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
    "[+]poststarthook/start-cluster-authentication-info-controller ok",
    "[+]poststarthook/start-kube-aggregator-informers ok",
    "[+]poststarthook/apiservice-registration-controller ok",
    "[+]poststarthook/apiservice-status-local-available-controller ok",
    "[+]poststarthook/apiservice-status-remote-available-controller ok",
    "[+]poststarthook/kube-apiserver-autoregistration ok",
    "[+]autoregister-completion ok",
    "[+]poststarthook/apiservice-openapi-controller ok",
];

async fn health_endpoints_list_each_check_when_verbose(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    for endpoint in ["healthz", "livez", "readyz"] {
        let verbose = get(&client, &format!("/{endpoint}?verbose=1")).await;
        assert_eq!(
            (verbose.status, verbose.content_type.as_str()),
            (200, "text/plain; charset=utf-8")
        );
        let lines: Vec<&str> = verbose.text.lines().collect();
        for check in REQUIRED {
            assert!(
                lines.contains(check),
                "/{endpoint} lacks {check}: {}",
                verbose.text
            );
        }
        assert_eq!(lines.last(), Some(&format!("{endpoint} check passed").as_str()));
        // `verbose` counts by its presence, whatever its value.
        let bare_flag = get(&client, &format!("/{endpoint}?verbose")).await;
        assert_eq!(bare_flag.text, verbose.text);
        assert_eq!(get(&client, &format!("/{endpoint}")).await.text, "ok");
    }
    let readyz = get(&client, "/readyz?verbose=true").await;
    assert!(readyz.text.contains("[+]informer-sync ok\n"), "{}", readyz.text);
    assert!(
        readyz.text.contains("[+]shutdown ok\nreadyz check passed\n"),
        "{}",
        readyz.text
    );
    let excluded = get(&client, "/healthz?verbose&exclude=etcd").await;
    assert!(
        excluded.text.contains("[+]etcd excluded: ok\n"),
        "{}",
        excluded.text
    );

    for check in [
        "/healthz/ping",
        "/healthz/etcd",
        "/livez/log",
        "/readyz/informer-sync",
        "/healthz/poststarthook/bootstrap-controller",
    ] {
        let answer = get(&client, check).await;
        assert_eq!((answer.status, answer.text.as_str()), (200, "ok"), "{check}");
    }
    let unknown = get(&client, "/healthz/nope").await;
    assert_eq!(
        (unknown.status, unknown.text.as_str()),
        (404, "404 page not found\n")
    );
}

async fn a_timeout_that_is_no_duration_is_a_bad_request(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let refused = [
        (
            format!("{configmaps}?timeout=invalid"),
            r#"time: invalid duration "invalid""#,
        ),
        (
            format!("{configmaps}/absent?timeout=invalid"),
            r#"time: invalid duration "invalid""#,
        ),
        (
            format!("{configmaps}?timeout=5"),
            r#"time: missing unit in duration "5""#,
        ),
        (
            format!("{configmaps}?timeout=1e3s"),
            r#"time: unknown unit "e" in duration "1e3s""#,
        ),
        (
            "/apis?timeout=soon".to_owned(),
            r#"time: invalid duration "soon""#,
        ),
    ];
    for (path, why) in refused {
        let answer = get(&client, &path).await;
        assert_eq!(
            (answer.status, &answer.body["reason"], &answer.body["message"]),
            (
                400,
                &json!("BadRequest"),
                &json!(format!("invalid timeout specified in the request URL - {why}"))
            ),
            "{path}: {}",
            answer.text
        );
    }
    for path in [
        format!("{configmaps}?timeout=1.5h30m"),
        format!("{configmaps}?timeout=-1s"),
        format!("{configmaps}?timeout=0"),
        // A watch is never timed out, so its timeout is not read.
        format!("{configmaps}?watch=1&timeoutSeconds=1&timeout=invalid"),
    ] {
        assert_eq!(get(&client, &path).await.status, 200, "{path}");
    }
}

testenv::each_control_plane!(
    health_endpoints_list_each_check_when_verbose,
    a_timeout_that_is_no_duration_is_a_bad_request,
);
