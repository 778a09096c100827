//! How many times each stage of a request's write ran, reported on `/metrics` as
//! `embedded_apiserver_write_stages_total{stage}`: each runs once per write (a conflict with a
//! concurrent write runs them all again), which a client can see by reading the counts around one.

use std::sync::atomic::{AtomicU64, Ordering};

/// The stages of a request's write, in the order they run.
#[derive(Debug, Clone, Copy)]
pub enum Stage {
    /// The body checked, decoded, pruned and defaulted (`strategy::{create,update}::prepare`).
    Decode,
    /// The mutating webhooks, when any is configured.
    MutatingAdmission,
    /// Validation (`strategy::{create,update}::finish`).
    Validate,
    /// The admission policies and validating webhooks, when any is configured.
    ValidatingAdmission,
    /// The conversion to the storage version, through the CRD's conversion webhook.
    Conversion,
    /// The store's commit.
    Commit,
}

impl Stage {
    const ALL: [Stage; 6] = [
        Stage::Decode,
        Stage::MutatingAdmission,
        Stage::Validate,
        Stage::ValidatingAdmission,
        Stage::Conversion,
        Stage::Commit,
    ];

    fn label(self) -> &'static str {
        match self {
            Stage::Decode => "decode",
            Stage::MutatingAdmission => "mutating_admission",
            Stage::Validate => "validate",
            Stage::ValidatingAdmission => "validating_admission",
            Stage::Conversion => "conversion",
            Stage::Commit => "commit",
        }
    }
}

/// The counts, one per stage.
#[derive(Debug, Default)]
pub struct WriteStages {
    runs: [AtomicU64; Stage::ALL.len()],
}

impl WriteStages {
    /// Counts one run of `stage`.
    pub fn ran(&self, stage: Stage) {
        self.runs[stage as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Each stage's label and count, in order.
    pub fn counts(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Stage::ALL
            .iter()
            .map(|stage| (stage.label(), self.runs[*stage as usize].load(Ordering::Relaxed)))
    }
}
