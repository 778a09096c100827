//! Field causes worded exactly as kube-apiserver words them.
//!
//! kube-apiserver builds a cause from `k8s.io/apimachinery/pkg/util/validation/field`: the message is
//! `<Type>[: <bad value>][: <detail>]`, where the bad value is printed with Go's `%v` (numbers,
//! booleans), `%q` (strings) or `json.Marshal` (anything else). CRD schema failures come from
//! kube-openapi, whose details read `<path> in body should ...`. Clients and people grep these
//! strings, so they are reproduced here byte for byte where we know them.

use serde_json::Value;

use crate::FieldCause;

pub(crate) const REQUIRED: &str = "FieldValueRequired";
pub(crate) const INVALID: &str = "FieldValueInvalid";
pub(crate) const TYPE_INVALID: &str = "FieldValueTypeInvalid";
pub(crate) const NOT_SUPPORTED: &str = "FieldValueNotSupported";
pub(crate) const DUPLICATE: &str = "FieldValueDuplicate";
pub(crate) const TOO_LONG: &str = "FieldValueTooLong";
pub(crate) const TOO_MANY: &str = "FieldValueTooMany";
pub(crate) const FORBIDDEN: &str = "FieldValueForbidden";

/// `field.Required`: `Required value[: detail]`.
pub fn required(field: impl Into<String>, detail: &str) -> FieldCause {
    FieldCause::new(REQUIRED, field, with_detail("Required value".to_owned(), detail))
}

/// `field.Forbidden`: `Forbidden: detail`.
pub fn forbidden(field: impl Into<String>, detail: &str) -> FieldCause {
    FieldCause::new(FORBIDDEN, field, with_detail("Forbidden".to_owned(), detail))
}

/// `field.Invalid`: `Invalid value: <value>[: detail]`.
pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> FieldCause {
    FieldCause::new(
        INVALID,
        field,
        with_detail(format!("Invalid value: {}", go_value(value)), detail),
    )
}

/// `field.Invalid` of a value Go prints with `%#v` (a struct or slice of an internal type), already
/// printed.
pub fn invalid_printed(field: impl Into<String>, printed: &str, detail: &str) -> FieldCause {
    FieldCause::new(
        INVALID,
        field,
        with_detail(format!("Invalid value: {printed}"), detail),
    )
}

/// `field.TypeInvalid`: worded like `Invalid`, with its own reason.
pub fn type_invalid(field: impl Into<String>, value: &Value, detail: &str) -> FieldCause {
    FieldCause::new(
        TYPE_INVALID,
        field,
        with_detail(format!("Invalid value: {}", go_value(value)), detail),
    )
}

/// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[String]) -> FieldCause {
    let mut message = format!("Unsupported value: {}", go_value(value));
    if !supported.is_empty() {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        message.push_str(&format!(": supported values: {}", quoted.join(", ")));
    }
    FieldCause::new(NOT_SUPPORTED, field, message)
}

/// `field.Duplicate`: `Duplicate value: <value>`.
pub fn duplicate(field: impl Into<String>, value: &Value) -> FieldCause {
    FieldCause::new(DUPLICATE, field, format!("Duplicate value: {}", go_value(value)))
}

/// `field.TooLongMaxLength` (schema `maxLength`): `Too long: may not be longer than 63`.
pub fn too_long_max_length(field: impl Into<String>, max: u64) -> FieldCause {
    FieldCause::new(TOO_LONG, field, format!("Too long: may not be longer than {max}"))
}

/// `field.TooLong` (sizes such as the annotation total): `Too long: must have at most N bytes`.
pub fn too_long_bytes(field: impl Into<String>, max: usize) -> FieldCause {
    FieldCause::new(
        TOO_LONG,
        field,
        format!("Too long: must have at most {max} bytes"),
    )
}

/// `field.TooMany` (schema `maxItems`): `Too many: 11: must have at most 10 items`.
pub fn too_many(field: impl Into<String>, actual: usize, max: u64) -> FieldCause {
    let noun = if max == 1 { "item" } else { "items" };
    FieldCause::new(
        TOO_MANY,
        field,
        format!("Too many: {actual}: must have at most {max} {noun}"),
    )
}

fn with_detail(mut message: String, detail: &str) -> String {
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(detail);
    }
    message
}

/// Renders a bad value the way `field.Error.ErrorBody` does.
pub fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        Value::Null | Value::Array(_) | Value::Object(_) => go_json(value),
    }
}

/// Go's `strconv.Quote` for the characters that occur in practice.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` for a float64: `%g` with the shortest digits, which switches to exponent form when the
/// exponent is below -4 or at least 6 (`2.147483647e+09`, `1e-05`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return f.to_string();
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        f.to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Go's `json.Marshal` of a decoded JSON value: object keys sorted, `<`, `>` and `&` escaped,
/// integral floats without a fraction.
pub fn go_json(value: &Value) -> String {
    crate::go_json::sorted(value)
}

/// Joins a parent path and a property name the way `field.Path.Child` prints it.
pub fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `field.Path.Index`: `spec.options[1]`.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `field.Path.Key`: `properties[spec]`.
pub fn key(path: &str, name: &str) -> String {
    format!("{path}[{name}]")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_print_like_go_error_body() {
        assert_eq!(go_value(&json!("x")), "\"x\"");
        assert_eq!(go_value(&json!(0)), "0");
        assert_eq!(go_value(&json!(1.5)), "1.5");
        assert_eq!(go_value(&json!(true)), "true");
        assert_eq!(go_value(&json!(null)), "null");
        assert_eq!(go_value(&json!({"b": 1, "a": "<"})), r#"{"a":"\u003c","b":1}"#);
        assert_eq!(go_value(&json!(["a", 2])), r#"["a",2]"#);
    }

    #[test]
    fn floats_switch_to_exponent_form_like_go_percent_v() {
        assert_eq!(go_float(2147483647.0), "2.147483647e+09");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-1.5), "-1.5");
    }

    #[test]
    fn strings_are_quoted_like_strconv_quote() {
        assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(go_quote("é"), "\"é\"");
        assert_eq!(go_quote("\u{1}"), r#""\x01""#);
    }

    #[test]
    fn causes_carry_kubernetes_wording() {
        let cause = not_supported("spec.mode", &json!("x"), &["a".into(), "b".into()]);
        assert_eq!(
            cause.message,
            r#"Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(required("spec.table", "").message, "Required value");
        assert_eq!(
            too_long_max_length("spec.table", 63).message,
            "Too long: may not be longer than 63"
        );
        assert_eq!(
            too_many("spec.options", 11, 10).message,
            "Too many: 11: must have at most 10 items"
        );
        assert_eq!(
            duplicate("spec.options[1]", &json!({"id": "a"})).message,
            r#"Duplicate value: {"id":"a"}"#
        );
    }
}
