//! The CEL cost limits of kube-apiserver: rules too expensive to admit with the CRD, and the budget
//! an evaluation may spend on one object.
//!
//! - [`estimate`]: the worst-case cost of one expression; [`bounds`]: the sizes it assumes.
//! - [`limits`]: refusing a CRD whose rules exceed the per-expression or per-schema limit.
//! - [`runtime`]: the per-expression and per-object budgets while custom resources are validated.

pub(crate) mod bounds;
pub(crate) mod estimate;
pub(crate) mod limits;
pub(crate) mod runtime;

/// What one rule may cost at most, estimated when the CRD is written (times how often it can run).
pub(crate) const ESTIMATED_PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// What all the rules of one schema may cost together, estimated when the CRD is written.
pub(crate) const ESTIMATED_PER_SCHEMA_LIMIT: u64 = 100_000_000;
/// What one evaluation of one rule may cost.
pub(crate) const RUNTIME_PER_CALL_LIMIT: u64 = 1_000_000;
/// What all the evaluations for one object may cost together.
pub(crate) const RUNTIME_PER_OBJECT_BUDGET: u64 = 10_000_000;

/// The sizes the schema allows: its bounds, or what fills a request where it has none.
pub(crate) struct SchemaSizes;

impl estimate::Sizes for SchemaSizes {
    fn max_elements(&self, node: &super::super::node::Node) -> u64 {
        bounds::max_elements(node)
    }
}

/// The worst-case cost of a rule at `node` with the schema's bounds.
pub(crate) fn estimated_cost(program: &cel::Program, node: &super::super::node::Node, is_root: bool) -> u64 {
    estimate::estimate(program.expression(), node, is_root, &SchemaSizes).max
}

#[cfg(test)]
mod tests;
