//! CRD validation rules (`x-kubernetes-validations`, V4): compiled with the CRD, evaluated on every
//! write of a custom resource, with kube-apiserver's causes.
//!
//! Expressions are parsed and run by the `cel` crate (cel-rust), not by an interpreter of our own.
//! - [`rule`]: one compiled rule; [`compile`]: compiling a node's rules and refusing bad ones.
//! - [`values`]: JSON as CEL values typed by the schema; [`library`]: the functions rules may call.
//! - [`cost`]: the cost limits, estimated with the CRD and enforced while evaluating.
//! - [`evaluate`]: walking an object (and the old one, for transition rules) and checking rules.

pub(crate) mod compile;
pub(crate) mod cost;
pub(crate) mod evaluate;
pub(crate) mod library;
pub(crate) mod rule;
pub(crate) mod values;

#[cfg(test)]
mod tests;
