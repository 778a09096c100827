//! The strategy of a write, between the endpoints and storage: what the server does to an object on
//! its way in, kind by kind, in stages that each run once per write.
//!
//! 1. decode ([`create::prepare`], [`update::prepare`]): the body checked against the path and the
//!    kind, put in its stored form, pruned, decoded and defaulted, its managedFields entry recorded;
//! 2. mutating admission (the webhooks, in `admission`), when any is configured;
//! 3. validate ([`create::finish`], [`update::finish`]): decoded again if a webhook changed it,
//!    validated, given the server's fields;
//! 4. validating admission (policies and webhooks, in `admission`);
//! 5. commit, by the store, under its lock.
//!
//! Every write runs them on one of two roads, and reaches the store only through its commit: a
//! request's write, its subresources' included, through `admission::Target`; the server's own writes,
//! which pass no admission, through [`writes`] (which says which those are, and why). The store below
//! knows no kind.

pub mod create;
pub mod decode;
mod managed_fields;
pub mod patch;
mod server_fields;
mod typed;
pub mod update;
mod validate;
pub mod writes;

pub(crate) use managed_fields::record_update;
