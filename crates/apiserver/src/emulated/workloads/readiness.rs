//! What the controllers read off a Pod: whether it still counts (active), whether it is ready, and
//! whether it has been ready long enough to be available.

use apimachinery::meta;
use serde_json::Value;

/// A Pod that is neither finished (Succeeded, Failed) nor being deleted.
pub(crate) fn is_active(pod: &Value) -> bool {
    !meta::is_deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

pub(crate) fn phase(pod: &Value) -> &str {
    meta::str_at(pod, "/status/phase").unwrap_or("Pending")
}

fn ready_condition(pod: &Value) -> Option<&Value> {
    pod.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

pub(crate) fn is_ready(pod: &Value) -> bool {
    ready_condition(pod).is_some_and(|c| c["status"] == "True")
}

/// Since when the Pod has been ready (seconds since the epoch), if it is.
pub(crate) fn ready_since(pod: &Value) -> Option<i64> {
    let condition = ready_condition(pod).filter(|c| c["status"] == "True")?;
    let time = condition.get("lastTransitionTime")?.as_str()?;
    time.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Ready for at least `min_ready_seconds` by `now`: available, in the controllers' words. Otherwise
/// the time it will be, if it is ready at all.
pub(crate) fn availability(pod: &Value, min_ready_seconds: i64, now: i64) -> Availability {
    match ready_since(pod) {
        None => Availability::Unready,
        Some(_) if min_ready_seconds <= 0 => Availability::Available,
        Some(since) if since + min_ready_seconds <= now => Availability::Available,
        Some(since) => Availability::At(since + min_ready_seconds),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Availability {
    Unready,
    Available,
    /// Ready, and available at this time (seconds since the epoch).
    At(i64),
}
