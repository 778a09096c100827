//! The runtime cost budgets: one rule's evaluation may cost [`RUNTIME_PER_CALL_LIMIT`], all of an
//! object's [`RUNTIME_PER_OBJECT_BUDGET`].
//!
//! The `cel` crate does not count cost while it evaluates, and its comprehensions are not
//! functions we could wrap to count their iterations. So the cost of an evaluation is bounded
//! before it runs: by the estimate with the schema's bounds, and where that exceeds the per-call
//! limit, by the same estimate over the actual sizes of the values the rule reads (the longest
//! string and the longest list found under each schema node). kube-apiserver counts what the
//! evaluation really does, which is at most that bound: an expression that stops early (an `all`
//! that meets a `false`) may be refused here where it passes there, and only then.

use std::collections::HashMap;

use serde_json::Value;

use super::super::super::node::Node;
use super::super::values::field_node;
use super::estimate::{self, Sizes};
use super::{RUNTIME_PER_CALL_LIMIT, RUNTIME_PER_OBJECT_BUDGET, bounds};
use crate::schema::cel::rule::Rule;

/// What is left of an object's budget while its rules are evaluated.
#[derive(Debug)]
pub(crate) struct Budget {
    remaining: u64,
}

/// Why a rule may not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// The rule alone would exceed the per-call limit.
    PerCall,
    /// The object's budget is spent.
    PerObject,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            remaining: RUNTIME_PER_OBJECT_BUDGET,
        }
    }
}

impl Budget {
    /// Charges the cost of evaluating `rule` at `node` over `values` (the value, and the old one
    /// for a transition rule), or says which limit it would exceed.
    pub(crate) fn charge(
        &mut self,
        rule: &Rule,
        node: &Node,
        is_root: bool,
        values: &[&Value],
    ) -> Result<(), Exceeded> {
        let mut cost = rule.estimated_cost;
        if cost > RUNTIME_PER_CALL_LIMIT || cost > self.remaining {
            let sizes = ActualSizes::of(node, values);
            cost = cost.min(estimate::estimate(rule.program.expression(), node, is_root, &sizes).max);
        }
        // kube-apiserver stops an evaluation just past the per-call limit, and compares what it
        // spent with the object's budget before it looks at why the evaluation stopped.
        let spent = cost.min(RUNTIME_PER_CALL_LIMIT + 1);
        if spent > self.remaining {
            return Err(Exceeded::PerObject);
        }
        if cost > RUNTIME_PER_CALL_LIMIT {
            return Err(Exceeded::PerCall);
        }
        self.remaining -= cost;
        Ok(())
    }
}

/// The largest size found under each schema node of the values a rule reads; nodes no value
/// reaches keep the schema's bound.
struct ActualSizes {
    largest: HashMap<*const Node, u64>,
}

impl ActualSizes {
    fn of(node: &Node, values: &[&Value]) -> Self {
        let mut sizes = Self {
            largest: HashMap::new(),
        };
        for value in values {
            sizes.record(node, value);
        }
        sizes
    }

    fn record(&mut self, node: &Node, value: &Value) {
        let size = match value {
            Value::String(text) => text.len() as u64,
            Value::Array(items) => {
                if let Some(item_node) = node.items.as_deref() {
                    for item in items {
                        self.record(item_node, item);
                    }
                }
                items.len() as u64
            }
            Value::Object(map) => {
                for (name, field) in map {
                    if let Some(field_schema) = field_node(Some(node), name) {
                        self.record(field_schema, field);
                    }
                }
                map.len() as u64
            }
            _ => 0,
        };
        let largest = self.largest.entry(node as *const Node).or_insert(0);
        *largest = (*largest).max(size);
    }
}

impl Sizes for ActualSizes {
    fn max_elements(&self, node: &Node) -> u64 {
        let bound = bounds::max_elements(node);
        match self.largest.get(&(node as *const Node)) {
            // Scalars and objects keep the declared 0; a size never grows past the schema's bound.
            Some(&size) if bound > 0 => size.min(bound),
            Some(_) => bound,
            // A node the value does not reach holds nothing in this object.
            None => 0,
        }
    }
}
