//! A namespace's subresources served by an endpoint of their own: [`finalize`].

pub(super) mod finalize;
