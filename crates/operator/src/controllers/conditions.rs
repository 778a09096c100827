//! Status conditions, one of the two ways every controller tells users what happened (Events, published
//! through [`crate::runtime::Toolkit`], are the other).

use crate::api::postgres_writer::Condition;

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The Ready condition, keeping the previous transition time when the status did not flip.
pub fn ready_condition(
    ready: bool,
    reason: &str,
    message: &str,
    previous: Option<&Condition>,
    generation: Option<i64>,
) -> Condition {
    let status = if ready { "True" } else { "False" };
    let last_transition_time = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => now_rfc3339(),
    };
    Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time,
        observed_generation: generation,
    }
}

pub fn find_ready(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == "Ready")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_condition_keeps_its_transition_time_until_the_status_flips() {
        let first = ready_condition(true, "Synced", "ok", None, Some(1));
        let previous = Condition {
            last_transition_time: "then".into(),
            ..first.clone()
        };
        let same = ready_condition(true, "Synced", "ok", Some(&previous), Some(1));
        assert_eq!(same.last_transition_time, "then");
        let flipped = ready_condition(false, "DatabaseUnavailable", "down", Some(&same), Some(1));
        assert_ne!(flipped.last_transition_time, "then");
    }
}
