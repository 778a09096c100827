//! Ages as kubectl and kube-apiserver print them.

use serde_json::Value;

/// `duration.HumanDuration` of the Kubernetes libraries: "5s", "5m3s", "3h4m", "2d3h", "45d", "3y45d".
/// A moment up to a second in the future counts as now (clocks drift); further is `<invalid>`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let seconds = seconds.max(0);
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        with_remainder(minutes, "m", seconds % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        with_remainder(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        with_remainder(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        with_remainder(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

fn with_remainder(whole: i64, unit: &str, remainder: i64, remainder_unit: &str) -> String {
    if remainder == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}{unit}{remainder}{remainder_unit}")
    }
}

/// The time since the RFC 3339 timestamp `value`, humanised; `<unknown>` when there is none.
pub fn since(value: Option<&Value>, now: jiff::Timestamp) -> String {
    match timestamp(value) {
        Some(at) => human_duration(now.as_second() - at.as_second()),
        None => "<unknown>".into(),
    }
}

/// The RFC 3339 timestamp in `value`; `None` when it is missing, not a string or not a timestamp.
pub fn timestamp(value: Option<&Value>) -> Option<jiff::Timestamp> {
    value?.as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_human_durations_match_kubectl() {
        for (seconds, text) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (5, "5s"),
            (119, "119s"),
            (303, "5m3s"),
            (1800, "30m"),
            (11040, "3h4m"),
            (183600, "2d3h"),
            (45 * 86400, "45d"),
            ((3 * 365 + 45) * 86400, "3y45d"),
        ] {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
    }
}
