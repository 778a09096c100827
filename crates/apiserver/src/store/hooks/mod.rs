//! The seam between storage and what others add to a write. The store knows objects,
//! resourceVersions and events; what the rest of the server adds comes through five small traits,
//! one per concern, called at fixed points of every write under the store's lock:
//!
//! - [`Lifecycle`]: what a store holds when it opens, and a fresh start after a panic;
//! - [`KindRules`]: what a kind's own rules do to its objects (defaults, server-set fields,
//!   whether it may be deleted);
//! - [`AdmissionPlugins`]: the built-in admission plugins that see every write (NamespaceLifecycle,
//!   ResourceQuota);
//! - [`Indexes`]: what is kept beside the objects, current with every write;
//! - [`WriteReactions`]: the controllers' follow-up writes, and the deletes they take over.
//!
//! The store calls no kind and no controller by name, and each of its files uses only the concern
//! it calls. The server hands it one value per concern ([`Hooks`]).

mod admission;
mod indexes;
mod kind_rules;
mod lifecycle;
mod reactions;

use std::sync::Arc;

pub(crate) use admission::AdmissionPlugins;
pub(crate) use indexes::Indexes;
pub(crate) use kind_rules::{KindRules, Preparing};
pub(crate) use lifecycle::Lifecycle;
pub(crate) use reactions::WriteReactions;

/// The five concerns, each behind its own trait object: a caller names the one it uses
/// (`hooks.indexes.indexed(..)`).
#[derive(Clone)]
pub(crate) struct Hooks {
    pub lifecycle: Arc<dyn Lifecycle>,
    pub kind_rules: Arc<dyn KindRules>,
    pub admission: Arc<dyn AdmissionPlugins>,
    pub indexes: Arc<dyn Indexes>,
    pub reactions: Arc<dyn WriteReactions>,
}
