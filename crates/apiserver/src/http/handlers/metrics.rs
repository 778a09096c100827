//! `/metrics`, in Prometheus' text format: the API Priority and Fairness gauges clients read to see
//! that a priority level has been taken into account (upstream's e2e specs among them), and the
//! embedded server's own count of the stages its writes ran. kube-apiserver's request and storage
//! metrics are not reported.

use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};
use serde_json::Value;

use crate::http::Shared;
use crate::store::Origin;

/// The seats kube-apiserver shares among priority levels: its default `--max-requests-inflight`
/// (400) plus `--max-mutating-requests-inflight` (200).
const SERVER_CONCURRENCY_LIMIT: u64 = 600;
/// A limited priority level's `nominalConcurrencyShares` when it names none.
const DEFAULT_SHARES: u64 = 30;

/// Each priority level's nominal share of the server's seats: its shares over everyone's, rounded
/// up, as kube-apiserver's APF controller computes `apiserver_flowcontrol_nominal_limit_seats`.
fn nominal_limits(levels: &[Value]) -> Vec<(String, u64)> {
    let shares: Vec<(String, u64)> = levels
        .iter()
        .map(|level| {
            let name = level
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let given = level
                .pointer("/spec/limited/nominalConcurrencyShares")
                .or_else(|| level.pointer("/spec/exempt/nominalConcurrencyShares"))
                .and_then(Value::as_u64);
            let limited = level.pointer("/spec/type").and_then(Value::as_str) == Some("Limited");
            (
                name.to_owned(),
                given.unwrap_or(if limited { DEFAULT_SHARES } else { 0 }),
            )
        })
        .collect();
    let total: u64 = shares.iter().map(|(_, s)| s).sum();
    shares
        .into_iter()
        .map(|(name, share)| {
            let seats = match total {
                0 => 0,
                total => (SERVER_CONCURRENCY_LIMIT * share).div_ceil(total),
            };
            (name, seats)
        })
        .collect()
}

pub fn answer(shared: &Shared) -> Response {
    let store = &shared.store;
    let levels = crate::flowcontrol::priority_levels(store);
    let mut text = String::from(
        "# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level\n\
         # TYPE apiserver_flowcontrol_nominal_limit_seats gauge\n",
    );
    for (name, seats) in nominal_limits(&levels) {
        text.push_str(&format!(
            "apiserver_flowcontrol_nominal_limit_seats{{priority_level={name:?}}} {seats}\n"
        ));
    }
    let families = [
        (
            "embedded_apiserver_write_stages_total",
            "Runs of each stage of the writes requests made",
            Origin::Request,
        ),
        (
            "embedded_apiserver_server_write_stages_total",
            "Runs of each stage of the writes the server made itself (its emulated controllers')",
            Origin::Server,
        ),
    ];
    for (family, help, origin) in families {
        text.push_str(&format!("# HELP {family} {help}\n# TYPE {family} counter\n"));
        for (stage, runs) in shared.store.write_stages().counts(origin) {
            text.push_str(&format!("{family}{{stage={stage:?}}} {runs}\n"));
        }
    }
    let mut response = Response::new(Body::from(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seats_are_shared_by_nominal_shares_rounded_up() {
        let levels = [
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}}),
            json!({"metadata": {"name": "catch-all"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5}}}),
            json!({"metadata": {"name": "default"}, "spec": {"type": "Limited", "limited": {}}}),
        ];
        assert_eq!(
            nominal_limits(&levels),
            [
                ("exempt".to_owned(), 0),
                ("catch-all".to_owned(), 86),
                ("default".to_owned(), 515)
            ]
        );
    }
}
