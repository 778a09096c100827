//! Status conditions, one of the two ways every controller tells users what happened (Events, published
//! through [`crate::runtime::Toolkit`], are the other). Each kind's status carries one condition,
//! Ready; [`ReadyStatus`] is how the runtime's not-ready report sets it.

use crate::{
    api::{
        postgres_writer::{Condition, PostgresWriterStatus},
        vote_config::VoteConfigStatus,
        web_app::WebAppStatus,
    },
    runtime::ReadyStatus,
};

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
        Some(p) if *p.status == *status => p.last_transition_time.clone(),
        _ => now_rfc3339().into(),
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
    conditions.iter().find(|c| &*c.type_ == "Ready")
}

/// Every kind's status holds its Ready condition in `conditions`, alone, and the generation it
/// describes in `observed_generation`.
macro_rules! ready_status {
    ($($status:ty),*) => {$(
        impl ReadyStatus for $status {
            fn not_ready(mut self, reason: &str, message: &str, generation: Option<i64>) -> Self {
                let previous = find_ready(&self.conditions);
                self.conditions = vec![ready_condition(false, reason, message, previous, generation)];
                self.observed_generation = generation;
                self
            }
        }
    )*};
}

ready_status!(PostgresWriterStatus, VoteConfigStatus, WebAppStatus);

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
        assert_eq!(&*same.last_transition_time, "then");
        let flipped = ready_condition(false, "DatabaseUnavailable", "down", Some(&same), Some(1));
        assert_ne!(&*flipped.last_transition_time, "then");
    }

    #[test]
    fn a_not_ready_status_keeps_the_rest_and_the_time_it_turned_false() {
        let synced = PostgresWriterStatus {
            table: Some("students".into()),
            conditions: vec![ready_condition(true, "Synced", "ok", None, Some(1))],
            observed_generation: Some(1),
            ..Default::default()
        };
        let down = synced.clone().not_ready("DatabaseUnavailable", "down", Some(2));
        assert_eq!(down.table.as_deref(), Some("students"));
        assert_eq!(down.observed_generation, Some(2));
        let ready = find_ready(&down.conditions).unwrap();
        assert_eq!(
            (&*ready.status, &*ready.reason, &*ready.message),
            ("False", "DatabaseUnavailable", "down")
        );
        let mut earlier = down.clone();
        earlier.conditions[0].last_transition_time = "then".into();
        let again = earlier.not_ready("DatabaseUnavailable", "still down", Some(2));
        assert_eq!(
            &*find_ready(&again.conditions).unwrap().last_transition_time,
            "then"
        );
    }
}
