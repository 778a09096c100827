//! Kinds whose rules of their own are only flags of their kube-apiserver registry: whether
//! `metadata.generation` counts their spec's changes, and whether a DELETE answers with the deleted
//! object (`ReturnDeletedObject` in the registry's storage).

use super::Kind;

/// A kind's registry flags; every other rule is the default.
pub(super) struct RegistryFlags {
    tracks_generation: bool,
    returns_deleted_object: bool,
}

impl Kind for RegistryFlags {
    fn tracks_generation(&self) -> bool {
        self.tracks_generation
    }

    fn returns_deleted_object(&self) -> bool {
        self.returns_deleted_object
    }
}

/// Counts its spec's changes in `metadata.generation`.
pub(super) const TRACKS_GENERATION: RegistryFlags = RegistryFlags {
    tracks_generation: true,
    returns_deleted_object: false,
};

/// Answers a DELETE with the deleted object.
pub(super) const RETURNS_DELETED_OBJECT: RegistryFlags = RegistryFlags {
    tracks_generation: false,
    returns_deleted_object: true,
};

/// Both.
pub(super) const TRACKS_GENERATION_AND_RETURNS_DELETED_OBJECT: RegistryFlags = RegistryFlags {
    tracks_generation: true,
    returns_deleted_object: true,
};
