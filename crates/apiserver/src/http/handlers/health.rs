//! `/healthz`, `/livez` and `/readyz`: the embedded server is healthy whenever it answers, so every
//! check passes. They are the checks kube-apiserver runs, by the same names, so that what reads the
//! verbose list (the e2e suite, monitoring) finds each; a check is also served alone by its path.

use std::collections::HashMap;

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};

/// What `/healthz` and `/livez` check on kube-apiserver 1.33, in its order.
const CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
];

/// `/readyz` checks the storage's readiness and the informers' sync after etcd, and whether the
/// server is shutting down last.
fn checks(endpoint: &str) -> Vec<&'static str> {
    let mut checks = CHECKS.to_vec();
    if endpoint == "readyz" {
        checks.splice(3..3, ["etcd-readiness", "informer-sync"]);
        checks.push("shutdown");
    }
    checks
}

/// The answer to `/<endpoint>` (`check` none) or `/<endpoint>/<check>`.
pub fn answer(endpoint: &str, check: Option<&str>, query: &HashMap<String, String>) -> Response {
    let known = checks(endpoint);
    let Some(check) = check else {
        return text(report(endpoint, &known, query), true);
    };
    if known.contains(&check) {
        // A check alone answers like Go's plain handler: no content-type options header.
        text("ok".into(), false)
    } else {
        let mut response = text("404 page not found\n".into(), true);
        *response.status_mut() = StatusCode::NOT_FOUND;
        response
    }
}

/// `ok`, or with `verbose` (any value) each check and the verdict; a check named by `exclude` is
/// reported as excluded.
fn report(endpoint: &str, checks: &[&str], query: &HashMap<String, String>) -> String {
    if !query.contains_key("verbose") {
        return "ok".into();
    }
    let excluded = query.get("exclude").map(String::as_str);
    let mut lines = String::new();
    for check in checks {
        if excluded == Some(*check) {
            lines.push_str(&format!("[+]{check} excluded: ok\n"));
        } else {
            lines.push_str(&format!("[+]{check} ok\n"));
        }
    }
    if let Some(unknown) = excluded.filter(|name| !checks.contains(name)) {
        lines.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {unknown:?}\n"
        ));
    }
    lines.push_str(&format!("{endpoint} check passed\n"));
    lines
}

fn text(body: String, no_sniff: bool) -> Response {
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if no_sniff {
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn verbose_lists_every_check_then_the_verdict() {
        let readyz = report("readyz", &checks("readyz"), &query(&[("verbose", "")]));
        let lines: Vec<&str> = readyz.lines().collect();
        assert_eq!(
            &lines[..5],
            [
                "[+]ping ok",
                "[+]log ok",
                "[+]etcd ok",
                "[+]etcd-readiness ok",
                "[+]informer-sync ok"
            ]
        );
        assert_eq!(
            &lines[lines.len() - 2..],
            ["[+]shutdown ok", "readyz check passed"]
        );
        assert_eq!(report("livez", &checks("livez"), &query(&[])), "ok");
        let excluded = report(
            "healthz",
            &checks("healthz"),
            &query(&[("verbose", "1"), ("exclude", "etcd")]),
        );
        assert!(excluded.contains("[+]etcd excluded: ok\n"), "{excluded}");
    }
}
