//! The CEL environment of validation rules: the standard library, the strings extension, and the
//! list functions Kubernetes adds (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), which
//! the `cel` crate lacks and which are therefore written here over its values.

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, Value};

/// The one environment every rule compiles and runs in (it holds no per-rule state).
pub(crate) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build()));

fn build() -> Env {
    let mut env = Env::stdlib();
    // Declarations over names nothing else declares: they fail only on a programming error, which
    // the unit tests would show; the rules then simply lack the function.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = register_list_functions(&mut env);
    env
}

fn register_list_functions(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn values(function: &str, args: Args<'_, '_>) -> Result<Vec<Value>, ExecutionError> {
    args.iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ExecutionError::function_error(function, e))
}

fn list_and_arg(
    function: &str,
    args: Args<'_, '_>,
) -> Result<(Arc<Vec<Value>>, Option<Value>), ExecutionError> {
    let mut values = values(function, args)?.into_iter();
    match values.next() {
        Some(Value::List(list)) => Ok((list, values.next())),
        _ => Err(ExecutionError::function_error(
            function,
            "receiver must be a list",
        )),
    }
}

fn answer<'b, 'v>(value: Value) -> Answer<'b, 'v> {
    let boxed: Box<dyn cel::common::value::Val> = value.try_into()?;
    Ok(CowVal::from(boxed))
}

fn compare(function: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| ExecutionError::function_error(function, "elements are not comparable"))
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let (list, _) = list_and_arg("isSorted", args)?;
    for pair in list.windows(2) {
        if compare("isSorted", &pair[0], &pair[1])? == Ordering::Greater {
            return answer(Value::Bool(false));
        }
    }
    answer(Value::Bool(true))
}

fn sum<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let (list, _) = list_and_arg("sum", args)?;
    let mut total = match list.first() {
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::UInt(_)) => Value::UInt(0),
        _ => Value::Int(0),
    };
    for item in list.iter() {
        total = match (&total, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => {
                return Err(ExecutionError::function_error(
                    "sum",
                    "elements must be numbers of one type",
                ));
            }
        };
    }
    answer(total)
}

fn extreme<'b, 'v>(function: &str, args: Args<'b, 'v>, wanted: Ordering) -> Answer<'b, 'v> {
    let (list, _) = list_and_arg(function, args)?;
    let mut best: Option<&Value> = None;
    for item in list.iter() {
        best = match best {
            Some(current) if compare(function, item, current)? != wanted => Some(current),
            _ => Some(item),
        };
    }
    match best {
        Some(value) => answer(value.clone()),
        None => Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        )),
    }
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    extreme("min", args, Ordering::Less)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    extreme("max", args, Ordering::Greater)
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let (list, wanted) = list_and_arg("indexOf", args)?;
    let found = list.iter().position(|item| Some(item) == wanted.as_ref());
    answer(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Answer<'b, 'v> {
    let (list, wanted) = list_and_arg("lastIndexOf", args)?;
    let found = list.iter().rposition(|item| Some(item) == wanted.as_ref());
    answer(Value::Int(found.map_or(-1, |i| i as i64)))
}
