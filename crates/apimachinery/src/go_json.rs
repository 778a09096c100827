//! The text Go's `encoding/json` writes for a JSON value: compact, `<`, `>` and `&` escaped, floats as
//! Go formats them, and each object's keys in the order the Go value holds them (sorted for a map,
//! declaration order for a struct). serde_json writes neither Go's escapes nor a chosen key order, and
//! kube-apiserver quotes such text in its messages, so the text is written here.

use serde_json::{Map, Value};

/// A JSON value with the order its objects' keys are written in.
#[derive(Debug, Clone, PartialEq)]
pub enum Ordered<'a> {
    /// Written with every object's keys sorted, as Go writes a decoded `map[string]interface{}`.
    Sorted(&'a Value),
    /// An array, each item in its own order.
    Array(Vec<Ordered<'a>>),
    /// Keys written in the order given.
    Object(Vec<(&'a str, Ordered<'a>)>),
}

impl<'a> Ordered<'a> {
    /// An object with its keys sorted, as Go writes a map, each value as `value` gives it.
    pub fn sorted_object(
        fields: &'a Map<String, Value>,
        mut value: impl FnMut(&'a str, &'a Value) -> Ordered<'a>,
    ) -> Ordered<'a> {
        let mut keys: Vec<&String> = fields.keys().collect();
        keys.sort();
        Ordered::Object(
            keys.into_iter()
                .map(|key| (key.as_str(), value(key, &fields[key.as_str()])))
                .collect(),
        )
    }

    /// The compact JSON text Go's encoding/json writes for this value.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Ordered::Sorted(value) => write_sorted(value, out),
            Ordered::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Ordered::Object(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Go's `json.Marshal` of a decoded JSON value: object keys sorted.
pub fn sorted(value: &Value) -> String {
    let mut out = String::new();
    write_sorted(value, &mut out);
    out
}

fn write_sorted(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(s, out),
        Value::Array(items) => Ordered::Array(items.iter().map(Ordered::Sorted).collect()).write(out),
        Value::Object(map) => Ordered::sorted_object(map, |_, value| Ordered::Sorted(value)).write(out),
    }
}

fn write_string(s: &str, out: &mut String) {
    let encoded = serde_json::to_string(s).unwrap_or_default();
    out.push_str(
        &encoded
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
    );
}

/// encoding/json: plain decimal notation unless the exponent is below -6 or at least 21.
fn float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let sci = format!("{f:e}");
        match sci.split_once('e') {
            Some((mantissa, exp)) => {
                let exp: i32 = exp.parse().unwrap_or(0);
                let sign = if exp < 0 { '-' } else { '+' };
                format!("{mantissa}e{sign}{:02}", exp.abs())
            }
            None => sci,
        }
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn maps_are_sorted_and_html_characters_escaped() {
        assert_eq!(
            sorted(&json!({"b": "<a&b>", "a": [1.5, 2, 1e21]})),
            r#"{"a":[1.5,2,1e+21],"b":"\u003ca\u0026b\u003e"}"#
        );
    }

    #[test]
    fn ordered_objects_keep_the_order_given() {
        let (name, labels) = (json!("c"), json!({"z": "1", "a": "2"}));
        let ordered = Ordered::Object(vec![
            ("name", Ordered::Sorted(&name)),
            ("labels", Ordered::Sorted(&labels)),
        ]);
        assert_eq!(ordered.to_json(), r#"{"name":"c","labels":{"a":"2","z":"1"}}"#);
    }
}
