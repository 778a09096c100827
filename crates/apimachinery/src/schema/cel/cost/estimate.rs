//! The worst-case cost of one expression, in CEL's cost units, as kube-apiserver estimates it when
//! a CRD is written.
//!
//! The `cel` crate has no cost model, so this walk over its parsed expression reproduces the rules
//! of cel-go's estimator with Kubernetes' size estimates: an identifier or a field selection costs
//! 1, a comprehension (`all`, `exists`, `map`, `filter`, ...) its loop body times the largest size
//! of what it ranges over, string operations a tenth of a unit per character, `matches` the string
//! times a quarter of the pattern, equality the smaller of both sizes. Sizes come from the schema
//! through [`Sizes`] (the bounds of [`super::bounds`], or a value's actual sizes at run time).
//!
//! Where it approximates: without a type checker, an expression's type is inferred from the schema
//! and the function's name, so an operator whose operand types cannot be told (`dyn`,
//! `x-kubernetes-int-or-string`, results of unknown functions) is costed as a constant-time call;
//! and functions of the strings extension that Kubernetes does not cost (`charAt`, `format`, ...)
//! count 1, as cel-go counts them.

use std::collections::HashMap;

use cel::common::ast::operators as op;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::super::super::node::{Additional, JsonType, Node};

/// A range of sizes or costs; every operation saturates rather than overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    const UNKNOWN: Self = Self {
        min: 0,
        max: u64::MAX,
    };

    fn fixed(n: u64) -> Self {
        Self { min: n, max: n }
    }
    fn add(self, other: Self) -> Self {
        Self {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }
    fn times(self, other: Self) -> Self {
        Self {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }
    /// Multiplied by a per-unit cost, rounded up as cel-go rounds.
    fn factor(self, per_unit: f64) -> Self {
        let scale = |n: u64| {
            let product = (n as f64 * per_unit).ceil();
            if product >= 18_446_744_073_709_551_616.0 {
                u64::MAX
            } else {
                product as u64
            }
        };
        Self {
            min: scale(self.min),
            max: scale(self.max),
        }
    }
    fn union(self, other: Self) -> Self {
        Self {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_PER_CHARACTER: f64 = 0.25;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;

/// Where an estimate takes the most elements a schema node's value can have.
pub(crate) trait Sizes {
    fn max_elements(&self, node: &Node) -> u64;
}

/// What the estimator knows of an expression's value.
#[derive(Debug, Clone)]
struct Info<'n> {
    kind: Kind<'n>,
    size: Option<Range>,
}

#[derive(Debug, Clone)]
enum Kind<'n> {
    /// A value the schema describes, reached by a path from `self`.
    Node(&'n Node),
    /// `metadata` at the root of a resource: its `name` and `generateName`.
    Metadata,
    Bool,
    Number,
    String,
    List(Option<Box<Info<'n>>>),
    Map,
    Unknown,
}

impl<'n> Info<'n> {
    fn of(kind: Kind<'n>, size: Option<Range>) -> Self {
        Self { kind, size }
    }
    fn scalar(kind: Kind<'n>) -> Self {
        Self::of(kind, Some(Range::fixed(1)))
    }
    fn unknown() -> Self {
        Self::of(Kind::Unknown, None)
    }
    fn is_string(&self) -> bool {
        match self.kind {
            Kind::String => true,
            Kind::Node(n) => n.ty == Some(JsonType::String) && !n.int_or_string,
            _ => false,
        }
    }
    fn is_list(&self) -> bool {
        match self.kind {
            Kind::List(_) => true,
            Kind::Node(n) => n.ty == Some(JsonType::Array),
            _ => false,
        }
    }
    /// Selecting a field costs 1 on maps and objects (and values of unknown type), nothing else.
    fn is_selectable(&self) -> bool {
        match self.kind {
            Kind::Node(n) => n.ty == Some(JsonType::Object) || n.int_or_string || n.ty.is_none(),
            Kind::Metadata | Kind::Map | Kind::Unknown => true,
            _ => false,
        }
    }
    fn size_or_unknown(&self) -> Range {
        self.size.unwrap_or(Range::UNKNOWN)
    }
}

/// Estimates `expr`, a rule at `node` (`self`, and `oldSelf` for transition rules), `is_root` for
/// the root of a resource (where `apiVersion`, `kind` and `metadata.name` are always readable).
pub(crate) fn estimate(expr: &IdedExpr, node: &Node, is_root: bool, sizes: &dyn Sizes) -> Range {
    let mut estimator = Estimator {
        node,
        is_root,
        sizes,
        scopes: HashMap::new(),
    };
    estimator.cost(expr).0
}

struct Estimator<'n, 's> {
    node: &'n Node,
    is_root: bool,
    sizes: &'s dyn Sizes,
    /// Comprehension variables in scope, innermost last.
    scopes: HashMap<String, Vec<Info<'n>>>,
}

impl<'n> Estimator<'n, '_> {
    fn described(&self, node: &'n Node) -> Info<'n> {
        let max = self.sizes.max_elements(node);
        Info::of(Kind::Node(node), Some(Range { min: 0, max }))
    }

    fn cost(&mut self, expr: &IdedExpr) -> (Range, Info<'n>) {
        match &expr.expr {
            Expr::Literal(literal) => (Range::default(), literal_info(literal)),
            Expr::Ident(name) => (Range::fixed(1), self.ident(name)),
            Expr::Select(select) => {
                let (operand_cost, operand) = self.cost(&select.operand);
                if select.test {
                    // Kubernetes counts `has()` as free, as cel-go did before 0.17.7.
                    return (operand_cost, Info::scalar(Kind::Bool));
                }
                let select_cost = if operand.is_selectable() { 1 } else { 0 };
                (
                    operand_cost.add(Range::fixed(select_cost)),
                    self.field(&operand, &select.field),
                )
            }
            Expr::Call(call) => {
                let target = call.target.as_deref().map(|t| self.cost(t));
                let args: Vec<(Range, Info<'n>)> = call.args.iter().map(|a| self.cost(a)).collect();
                self.call(&call.func_name, target, args)
            }
            Expr::List(list) => {
                let mut sum = Range::default();
                let mut item: Option<Info<'n>> = None;
                for element in &list.elements {
                    let (cost, info) = self.cost(element);
                    sum = sum.add(cost);
                    item = Some(match item {
                        None => info,
                        Some(previous) => union_info(previous, info),
                    });
                }
                let size = Range::fixed(list.elements.len() as u64);
                (
                    sum.add(Range::fixed(LIST_CREATE)),
                    Info::of(Kind::List(item.map(Box::new)), Some(size)),
                )
            }
            Expr::Map(map) => {
                let mut sum = Range::default();
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        sum = sum.add(self.cost(&entry.key).0).add(self.cost(&entry.value).0);
                    }
                }
                let size = Range::fixed(map.entries.len() as u64);
                (sum.add(Range::fixed(MAP_CREATE)), Info::of(Kind::Map, Some(size)))
            }
            Expr::Comprehension(comprehension) => {
                let (range_cost, range) = self.cost(&comprehension.iter_range);
                let (init_cost, init) = self.cost(&comprehension.accu_init);
                let element = self.element(&range);
                let accumulator = match init.kind {
                    Kind::Bool => Info::scalar(Kind::Bool),
                    _ => init.clone(),
                };
                self.push(&comprehension.accu_var, accumulator);
                self.push(&comprehension.iter_var, element);
                let (loop_cost, _) = self.cost(&comprehension.loop_cond);
                let (step_cost, step) = self.cost(&comprehension.loop_step);
                self.pop(&comprehension.iter_var);
                let (result_cost, result) = self.cost(&comprehension.result);
                self.pop(&comprehension.accu_var);
                let iterations = range.size_or_unknown();
                let loop_total = iterations.times(step_cost.add(loop_cost));
                let info = match comprehension.accu_init.expr {
                    Expr::List(_) => Info::of(
                        match step.kind {
                            Kind::List(item) => Kind::List(item),
                            _ => Kind::List(None),
                        },
                        Some(iterations),
                    ),
                    Expr::Map(_) => Info::of(Kind::Map, Some(iterations)),
                    _ => result,
                };
                (range_cost.add(init_cost).add(result_cost).add(loop_total), info)
            }
            Expr::Struct(_) | Expr::Unspecified => (Range::default(), Info::unknown()),
        }
    }

    fn ident(&self, name: &str) -> Info<'n> {
        if let Some(info) = self.scopes.get(name).and_then(|s| s.last()) {
            return info.clone();
        }
        match name {
            "self" | "oldSelf" => self.described(self.node),
            _ => Info::unknown(),
        }
    }

    fn push(&mut self, name: &str, info: Info<'n>) {
        self.scopes.entry(name.to_owned()).or_default().push(info);
    }

    fn pop(&mut self, name: &str) {
        if let Some(stack) = self.scopes.get_mut(name) {
            stack.pop();
        }
    }

    fn field(&self, operand: &Info<'n>, name: &str) -> Info<'n> {
        let fill = Some(Range {
            min: 0,
            max: super::bounds::MAX_REQUEST_BYTES - 2,
        });
        match operand.kind {
            Kind::Node(node) => {
                if let Some(property) = node.properties.get(name) {
                    return self.described(property);
                }
                if let Additional::Schema(values) = &node.additional {
                    return self.described(values);
                }
                let at_root = std::ptr::eq(node, self.node) && self.is_root || node.embedded_resource;
                match name {
                    "apiVersion" | "kind" if at_root => Info::of(Kind::String, fill),
                    "metadata" if at_root => Info::of(Kind::Metadata, Some(Range::default())),
                    _ => Info::unknown(),
                }
            }
            Kind::Metadata if matches!(name, "name" | "generateName") => Info::of(Kind::String, fill),
            _ => Info::unknown(),
        }
    }

    /// What a comprehension's variable holds: an item of a list, a key of a map.
    fn element(&self, range: &Info<'n>) -> Info<'n> {
        match &range.kind {
            Kind::Node(node) => match (node.ty, node.items.as_deref()) {
                (Some(JsonType::Array), Some(items)) => self.described(items),
                // A map's keys are strings whose declared size is 0.
                _ => Info::of(Kind::String, Some(Range::default())),
            },
            Kind::List(Some(item)) => {
                // cel-go looks a path-less item up from the rule's own node first.
                let max = self.sizes.max_elements(self.node);
                Info::of(item.kind.clone(), Some(Range { min: 0, max }))
            }
            _ => Info::of(
                Kind::Unknown,
                Some(Range {
                    min: 0,
                    max: self.sizes.max_elements(self.node),
                }),
            ),
        }
    }

    fn call(
        &self,
        function: &str,
        target: Option<(Range, Info<'n>)>,
        args: Vec<(Range, Info<'n>)>,
    ) -> (Range, Info<'n>) {
        let arg_sum = args
            .iter()
            .fold(Range::default(), |sum, (cost, _)| sum.add(*cost));
        let target_cost = target.as_ref().map_or(Range::default(), |(cost, _)| *cost);
        let target = target.map(|(_, info)| info);
        let arg = |i: usize| args.get(i).map(|(_, info)| info.clone());
        let size_of = |info: Option<&Info<'n>>| info.map_or(Range::UNKNOWN, Info::size_or_unknown);
        let one = Range::fixed(1);
        let (call_cost, info) = match (function, target.as_ref(), args.len()) {
            ("dyn", None, 1) => (one, arg(0).unwrap_or_else(Info::unknown)),
            (op::LOGICAL_AND | op::LOGICAL_OR, None, 2) => {
                let (lhs, rhs) = (args[0].0, args[1].0);
                let cost = Range {
                    min: lhs.min,
                    max: lhs.max.saturating_add(rhs.max),
                };
                return (cost, Info::scalar(Kind::Bool));
            }
            (op::CONDITIONAL, None, 3) => {
                let cost = args[0].0.add(args[1].0.union(args[2].0));
                return (cost, union_info(args[1].1.clone(), args[2].1.clone()));
            }
            (op::ADD, None, 2) if args[0].1.is_string() || args[1].1.is_string() => {
                let size = args[0].1.size_or_unknown().add(args[1].1.size_or_unknown());
                (size.factor(STRING_TRAVERSAL), Info::of(Kind::String, Some(size)))
            }
            (op::ADD, None, 2) if args[0].1.is_list() || args[1].1.is_list() => {
                let size = args[0].1.size_or_unknown().add(args[1].1.size_or_unknown());
                let item = match (&args[0].1.kind, &args[1].1.kind) {
                    (Kind::List(item), _) | (_, Kind::List(item)) => item.clone(),
                    _ => None,
                };
                (one, Info::of(Kind::List(item), Some(size)))
            }
            (op::EQUALS | op::NOT_EQUALS, None, 2) => {
                (comparison(&args[0].1, &args[1].1), Info::scalar(Kind::Bool))
            }
            (op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS, None, 2)
                if args[0].1.is_string() || args[1].1.is_string() =>
            {
                (comparison(&args[0].1, &args[1].1), Info::scalar(Kind::Bool))
            }
            (op::IN, None, 2) => (size_of(arg(1).as_ref()), Info::scalar(Kind::Bool)),
            (op::INDEX, None, 2) => (one, self.element_at(&args[0].1)),
            ("startsWith" | "endsWith", Some(_), 1) => (
                size_of(arg(0).as_ref()).factor(STRING_TRAVERSAL),
                Info::scalar(Kind::Bool),
            ),
            ("matches", Some(text), 1) => {
                let text_cost = size_of(Some(text)).add(one).factor(STRING_TRAVERSAL);
                let pattern_cost = size_of(arg(0).as_ref()).factor(REGEX_PER_CHARACTER);
                (text_cost.times(pattern_cost), Info::scalar(Kind::Bool))
            }
            ("contains", Some(text), 1) => {
                let text_cost = size_of(Some(text)).factor(STRING_TRAVERSAL);
                let part_cost = size_of(arg(0).as_ref()).factor(STRING_TRAVERSAL);
                (text_cost.times(part_cost), Info::scalar(Kind::Bool))
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(text), _) => {
                let size = size_of(Some(text));
                (size.factor(STRING_TRAVERSAL), Info::of(Kind::String, Some(size)))
            }
            ("replace", Some(text), 2 | 3) => {
                let size = size_of(Some(text));
                let result = replaced_size(size, size_of(arg(0).as_ref()), size_of(arg(1).as_ref()));
                (
                    size.factor(2.0 * STRING_TRAVERSAL),
                    Info::of(Kind::String, Some(result)),
                )
            }
            ("split", Some(text), _) => {
                let size = size_of(Some(text));
                let item = Info::of(Kind::String, None);
                let result = Info::of(
                    Kind::List(Some(Box::new(item))),
                    Some(Range {
                        min: 0,
                        max: size.max,
                    }),
                );
                (size.factor(2.0 * STRING_TRAVERSAL), result)
            }
            ("join", Some(list), _) => {
                let count = size_of(Some(list));
                let item = self.element(list);
                let mut size = count.times(item.size_or_unknown());
                if let Some(separator) = arg(0) {
                    let separators = Range {
                        min: count.min.saturating_sub(1),
                        max: count.max.saturating_sub(1),
                    };
                    size = size.add(separator.size_or_unknown().times(separators));
                }
                (size.factor(STRING_TRAVERSAL), Info::of(Kind::String, Some(size)))
            }
            ("isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", Some(list), _)
                if list.is_list() =>
            {
                let item = self.element(list);
                let mut per_item = one;
                if item.is_string() {
                    per_item = per_item.add(item.size_or_unknown().factor(STRING_TRAVERSAL));
                }
                let result = match function {
                    "min" | "max" => scalar_or(item),
                    _ => Info::scalar(Kind::Number),
                };
                (size_of(Some(list)).times(per_item), result)
            }
            ("indexOf" | "lastIndexOf", Some(text), _) => (
                size_of(Some(text)).factor(STRING_TRAVERSAL),
                Info::scalar(Kind::Number),
            ),
            ("bytes", None, 1) if args[0].1.is_string() => {
                let size = args[0].1.size_or_unknown();
                let result = Range {
                    min: size.min,
                    max: size.max.saturating_mul(4),
                };
                (
                    size.factor(STRING_TRAVERSAL),
                    Info::of(Kind::Unknown, Some(result)),
                )
            }
            ("string", None, 1) => (one, Info::of(Kind::String, None)),
            (
                "size"
                | "int"
                | "uint"
                | "double"
                | op::NEGATE
                | op::SUBSTRACT
                | op::MULTIPLY
                | op::DIVIDE
                | op::MODULO
                | op::ADD,
                _,
                _,
            ) => (one, Info::scalar(Kind::Number)),
            (
                op::LOGICAL_NOT
                | op::NOT_STRICTLY_FALSE
                | op::LESS
                | op::LESS_EQUALS
                | op::GREATER
                | op::GREATER_EQUALS,
                _,
                _,
            ) => (one, Info::scalar(Kind::Bool)),
            _ => (one, Info::unknown()),
        };
        (target_cost.add(call_cost).add(arg_sum), info)
    }

    fn element_at(&self, container: &Info<'n>) -> Info<'n> {
        match &container.kind {
            Kind::Node(node) => match (node.items.as_deref(), &node.additional) {
                (Some(items), _) => self.described(items),
                (None, Additional::Schema(values)) => self.described(values),
                _ => Info::unknown(),
            },
            Kind::List(Some(item)) => (**item).clone(),
            _ => Info::unknown(),
        }
    }
}

/// Equality and ordering of strings (and equality of anything) cost the smaller size times a tenth.
fn comparison(lhs: &Info, rhs: &Info) -> Range {
    let smallest = lhs.size_or_unknown().max.min(rhs.size_or_unknown().max);
    Range {
        min: u64::from(smallest > 0),
        max: smallest,
    }
    .factor(STRING_TRAVERSAL)
}

/// The size of `text.replace(old, new)`: each shortest `old` replaced by the longest `new`.
fn replaced_size(text: Range, old: Range, new: Range) -> Range {
    let (count_max, kept_max) = if old.min == 0 {
        (text.max.saturating_add(1), text.max)
    } else if new.max <= old.min {
        (0, text.max)
    } else {
        ((text.max as f64 / old.min as f64).ceil() as u64, 0)
    };
    let (count_min, kept_min) = if old.max == 0 {
        (text.min.saturating_add(1), text.min)
    } else if old.max <= new.min {
        (0, text.min)
    } else {
        ((text.min as f64 / old.max as f64).ceil() as u64, 0)
    };
    Range {
        min: count_min,
        max: count_max,
    }
    .times(new)
    .add(Range {
        min: kept_min,
        max: kept_max,
    })
}

fn scalar_or(info: Info) -> Info {
    match info.kind {
        Kind::Node(node) if node.ty != Some(JsonType::String) => Info::scalar(Kind::Number),
        _ => info,
    }
}

fn union_info<'n>(a: Info<'n>, b: Info<'n>) -> Info<'n> {
    let size = match (a.size, b.size) {
        (Some(x), Some(y)) => Some(x.union(y)),
        _ => None,
    };
    Info::of(a.kind, size)
}

fn literal_info<'n>(literal: &LiteralValue) -> Info<'n> {
    match literal {
        LiteralValue::String(text) => {
            let size = Range::fixed(text.inner().chars().count() as u64);
            Info::of(Kind::String, Some(size))
        }
        LiteralValue::Bytes(bytes) => Info::of(Kind::Unknown, Some(Range::fixed(bytes.inner().len() as u64))),
        LiteralValue::Boolean(_) => Info::scalar(Kind::Bool),
        _ => Info::scalar(Kind::Number),
    }
}
