//! Test-only: differential conformance of the embedded API server against the real kube-apiserver.
//!
//! A corpus of scenarios (`corpus/*.yaml`: API requests, watches and kubectl runs, see [`scenario`]) is
//! played against both servers, side by side. Each answer is normalized ([`normalize`]: uids,
//! resourceVersions, timestamps, addresses and ages masked) and compared ([`compare`]); every
//! difference is a [`compare::Divergence`] with a stable key. `baseline.yaml` lists the divergences the
//! project accepts, each with its reason ([`baseline`]); the `corpus` test fails on any other, and on a
//! baseline entry that no longer diverges, so that fixing a difference shrinks the baseline.
//! Some scenarios are recorded from real clients' traffic rather than written ([`recording`]).
//! `docs/conformance.md` carries the figures, kept in step by the same test ([`report`]).
//!
//! A second tier runs a suite nobody here wrote: the upstream e2e tests of sig-api-machinery, against
//! the real control plane and then against the embedded server ([`e2e`], the `e2e` test).

pub mod baseline;
pub mod compare;
pub mod e2e;
pub mod error;
pub mod normalize;
pub mod recording;
pub mod report;
pub mod runner;
pub mod scenario;

pub use error::{Error, Result};
