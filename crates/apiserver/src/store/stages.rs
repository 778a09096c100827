//! How many times each stage of a write ran, by who wrote: reported on `/metrics` as
//! `embedded_apiserver_write_stages_total{stage}` for requests and
//! `embedded_apiserver_server_write_stages_total{stage}` for the server's own writes (its emulated
//! controllers'). Each stage runs once per write (a conflict with a concurrent write runs them all
//! again), which a client can see by reading the counts around one. The store keeps the counts, as
//! every write ends in its commit; the layers above count the stages they run.

use std::sync::atomic::{AtomicU64, Ordering};

/// The stages of a write, in the order they run.
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

/// Who wrote.
#[derive(Debug, Clone, Copy)]
pub enum Origin {
    /// A client's request, through a resource or one of its subresources.
    Request,
    /// The server itself: its emulated controllers, its start-up.
    Server,
}

/// The counts, one per origin and stage.
#[derive(Debug, Default)]
pub struct WriteStages {
    runs: [[AtomicU64; Stage::ALL.len()]; 2],
}

impl WriteStages {
    /// Counts one run of `stage` of a write by `origin`.
    pub fn ran(&self, origin: Origin, stage: Stage) {
        self.runs[origin as usize][stage as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Each stage's label and count for writes by `origin`, in order.
    pub fn counts(&self, origin: Origin) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Stage::ALL.iter().map(move |stage| {
            let runs = &self.runs[origin as usize][*stage as usize];
            (stage.label(), runs.load(Ordering::Relaxed))
        })
    }
}
