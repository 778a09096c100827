//! One file per controller. Each reads top-down as observe, compare, act; pure functions compute the
//! desired state and are unit-tested without a server. [`ReconcileRuntime`] is what they share.

mod runtime;

pub use runtime::ReconcileRuntime;
