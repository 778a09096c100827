//! The upstream Kubernetes e2e suite as a conformance tier: sig-api-machinery's specs of the release
//! the control plane pins, run first against the real control plane (every default controller of
//! kube-controller-manager, no nodes), then, those that passed there, against the embedded server.
//!
//! - [`suite`]: runs `e2e.test` (built by `testenv/e2e/build.sh`) through `ginkgo` against one
//!   control plane, and reads its report ([`outcome`]).
//! - [`skips`]: the specs not run at all (`e2e/skips.yaml`), each with its reason.
//! - [`baseline`]: the specs known to fail on the embedded server (`e2e/baseline.yaml`), each with
//!   the divergence.
//! - [`tier`]: the two servers in turn, in the quick, full or focused [`tier::Mode`].
//! - [`summary`]: what a run found, and whether the tier passes; [`figures`]: the figures in
//!   `docs/conformance.md`.

pub mod baseline;
pub mod figures;
pub mod outcome;
pub mod skips;
pub mod suite;
pub mod summary;
pub mod tier;
