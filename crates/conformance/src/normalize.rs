//! What may differ between two correct servers is masked before answers are compared: identities and
//! versions they assign (uid, resourceVersion, continue tokens, cluster IPs, node ports, tokens), times,
//! generated names, their own address and port, the memory addresses Go prints for pointers in
//! messages, and in kubectl's output ages and column padding. A mask keeps
//! presence visible: a field one server sets and the other omits still differs.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::runner::Answer;

/// Fields whose value a server assigns; masked wherever they appear, when set.
const ASSIGNED: [(&str, &str); 7] = [
    ("uid", "<uid>"),
    ("resourceVersion", "<rv>"),
    ("continue", "<continue>"),
    ("clusterIP", "<ip>"),
    ("nodePort", "<port>"),
    ("token", "<token>"),
    ("holderIdentity", "<holder>"),
];

/// Fields that hold a time.
const TIMES: [&str; 13] = [
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "lastUpdateTime",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "renewTime",
    "acquireTime",
    "lastHeartbeatTime",
    "lastProbeTime",
    "expirationTimestamp",
];

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("valid regex")
});
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})").expect("valid regex")
});
/// Addresses a server assigns (cluster IPs), in any text: loopback addresses with a port are the
/// server itself and masked as such first.
static ADDRESS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b").expect("valid regex"));
static LOOPBACK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(https?://)?127\.0\.0\.1:\d+").expect("valid regex"));
/// resourceVersions of objects quoted as JSON inside messages (`\"resourceVersion\":\"12\"`).
static VERSION_IN_QUOTED_OBJECT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(resourceVersion\\?":\\?")\d+"#).expect("valid regex"));
/// A pointer as Go's `%#v` prints it in a message: `(*string)(0xc000123456)`.
static POINTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\)\(0x[0-9a-f]+\)").expect("valid regex"));
/// resourceVersions inside messages ("too old resource version: 12 (40)").
static VERSION_IN_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(resource ?version:? ?)\d+( \(\d+\))?").expect("valid regex"));
/// A duration as kubectl prints ages: 5s, 2m3s, 4h, 10d, <invalid>.
static AGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d+[smhdy])+$|^<invalid>$|^<unknown>$").expect("valid regex"));
static AGE_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d+[smhdy](\d+[smh])?\b").expect("valid regex"));
static PADDING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r" {2,}").expect("valid regex"));

/// `answer` with everything a server may choose masked, as one JSON value: status, headers, body.
pub fn normalize(answer: &Answer) -> Value {
    let body = match answer.body.as_object() {
        Some(output) if answer.headers.is_empty() && output.contains_key("stdout") => kubectl_output(output),
        _ => json(&answer.body),
    };
    let headers = answer
        .headers
        .iter()
        .map(|(name, values)| {
            (
                name.clone(),
                Value::from(values.iter().map(|v| text(v)).collect::<Vec<_>>()),
            )
        })
        .collect::<Map<_, _>>();
    serde_json::json!({"status": answer.status, "headers": headers, "body": body})
}

fn json(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let generated = map
                .get("generateName")
                .is_some_and(|g| g.as_str().is_some_and(|g| !g.is_empty()));
            let mut out = Map::with_capacity(map.len());
            for (key, value) in map {
                let mut value = field(key, value, generated);
                if UNORDERED.contains(&key.as_str())
                    && let Some(items) = value.as_array_mut()
                {
                    items.sort_by_key(identity);
                }
                // A FieldsV1 key names a list item by its keys, an owner reference by its uid.
                let key = match key.starts_with("k:") {
                    true => UUID.replace_all(key, "<uid>").into_owned(),
                    false => key.clone(),
                };
                out.insert(key, value);
            }
            canonical_invalid_message(&mut out);
            mask_own_service_port(&mut out);
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(json).collect()),
        Value::String(s) if AGE.is_match(s) => Value::String("<age>".into()),
        Value::String(s) => Value::String(text(s)),
        other => other.clone(),
    }
}

/// Lists whose order carries no meaning and is not stable on the real server (validation causes come
/// out of Go map iteration; managedFields entries are kept in the order managers last wrote).
const UNORDERED: [&str; 2] = ["causes", "managedFields"];

/// What tells the items of an [`UNORDERED`] list apart: a managedFields entry by its manager,
/// operation and subresource, a cause by its field, reason and message.
fn identity(item: &Value) -> Vec<String> {
    [
        "manager",
        "operation",
        "subresource",
        "field",
        "reason",
        "message",
    ]
    .iter()
    .map(|key| {
        item.get(*key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    })
    .collect()
}

/// An Invalid Status lists its causes in its message too, in the same unstable order: the message is
/// rewritten from the (sorted) causes, so that it differs only where the causes do.
fn canonical_invalid_message(status: &mut Map<String, Value>) {
    if status.get("kind").and_then(Value::as_str) != Some("Status") {
        return;
    }
    let Some(causes) = status
        .get("details")
        .and_then(|d| d.get("causes"))
        .and_then(Value::as_array)
    else {
        return;
    };
    if causes.len() < 2 {
        return;
    }
    let listed: Vec<String> = causes
        .iter()
        .map(|c| {
            let field = c.get("field").and_then(Value::as_str).unwrap_or_default();
            let message = c.get("message").and_then(Value::as_str).unwrap_or_default();
            format!("{field}: {message}")
        })
        .collect();
    if let Some(Value::String(message)) = status.get_mut("message")
        && let Some((subject, _)) = message.split_once(" is invalid: [")
    {
        *message = format!("{subject} is invalid: [{}]", listed.join(", "));
    }
}

/// The `kubernetes` Service in `default` is the server itself: its `https` port targets the port the
/// server listens on, which each server picks for itself (as the address is masked in text).
fn mask_own_service_port(object: &mut Map<String, Value>) {
    let metadata = |key: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
    };
    let own = object.get("kind").and_then(Value::as_str) == Some("Service")
        && metadata("name") == Some("kubernetes")
        && metadata("namespace") == Some("default");
    if !own {
        return;
    }
    let ports = object
        .get_mut("spec")
        .and_then(|spec| spec.get_mut("ports"))
        .and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten() {
        if let Some(target) = port.get_mut("targetPort") {
            *target = Value::String("<server port>".into());
        }
    }
}

fn field(key: &str, value: &Value, generated_name: bool) -> Value {
    let set = !(value.is_null() || value.as_str() == Some("") || value.as_str() == Some("None"));
    if set {
        if let Some((_, mask)) = ASSIGNED.iter().find(|(name, _)| *name == key) {
            return Value::String((*mask).into());
        }
        if TIMES.contains(&key) {
            return Value::String("<time>".into());
        }
        if key == "clusterIPs" {
            return Value::Array(vec![Value::String("<ip>".into())]);
        }
        if key == "name" && generated_name {
            return Value::String("<generated>".into());
        }
    }
    json(value)
}

/// Masks inside free text: uids, times, the server's address, pointers, resourceVersions in messages.
fn text(s: &str) -> String {
    let s = UUID.replace_all(s, "<uid>");
    let s = TIMESTAMP.replace_all(&s, "<time>");
    let s = LOOPBACK.replace_all(&s, "<server>");
    let s = ADDRESS.replace_all(&s, "<ip>");
    let s = POINTER.replace_all(&s, ")(<pointer>)");
    let s = VERSION_IN_QUOTED_OBJECT.replace_all(&s, "${1}<rv>");
    VERSION_IN_TEXT.replace_all(&s, "${1}<rv>").into_owned()
}

/// kubectl's stdout and stderr, line by line with ages masked and column padding collapsed (widths
/// follow the longest cell, which masking does not change). Each stream stays one text: one divergence
/// per stream, however many lines differ.
fn kubectl_output(output: &Map<String, Value>) -> Value {
    let lines = |name: &str| -> Value {
        let raw = output.get(name).and_then(Value::as_str).unwrap_or_default();
        raw.lines()
            // kubectl's discovery cache warns about groups that vanished while it read them (another
            // scenario's CRD being deleted): noise about timing, not an answer.
            .filter(|line| !line.contains("couldn't get resource list for"))
            .map(|line| {
                let line = text(line);
                let line = AGE_TOKEN.replace_all(&line, "<age>");
                PADDING.replace_all(line.trim_end(), "   ").into_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
            .into()
    };
    serde_json::json!({"stdout": lines("stdout"), "stderr": lines("stderr")})
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn answer(body: Value) -> Answer {
        Answer {
            status: 200,
            headers: BTreeMap::new(),
            body,
        }
    }

    #[test]
    fn assigned_values_and_times_are_masked_but_their_absence_is_kept() {
        let a = normalize(&answer(serde_json::json!({
            "metadata": {"name": "c", "uid": "x", "resourceVersion": "12", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z"}]},
        })));
        let b = normalize(&answer(serde_json::json!({
            "metadata": {"name": "c", "uid": "y", "resourceVersion": "99", "creationTimestamp": "2027-01-01T00:00:00Z",
                         "managedFields": [{"manager": "m", "time": "2027-01-01T00:00:00Z"}]},
        })));
        assert_eq!(a, b);
        let without_time = normalize(&answer(
            serde_json::json!({"metadata": {"name": "c", "uid": "x"}}),
        ));
        assert_ne!(a, without_time);
    }

    #[test]
    fn only_the_servers_own_service_has_its_target_port_masked() {
        let service = |name: &str, target: u16| {
            normalize(&answer(serde_json::json!({
                "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": target}]},
            })))
        };
        assert_eq!(service("kubernetes", 6443), service("kubernetes", 35763));
        assert_eq!(
            service("kubernetes", 6443)["body"]["spec"]["ports"][0]["targetPort"],
            "<server port>"
        );
        assert_ne!(service("web", 6443), service("web", 35763));
    }

    #[test]
    fn resource_versions_of_objects_quoted_in_messages_are_masked() {
        let message = |rv: &str| {
            normalize(&answer(serde_json::json!({
                "message": format!(r#"patch: Invalid value: "{{\"metadata\":{{\"resourceVersion\":\"{rv}\"}}}}": bad"#)
            })))
        };
        assert_eq!(message("307"), message("471"));
        assert_ne!(
            message("307"),
            normalize(&answer(serde_json::json!({"message": "other"})))
        );
    }

    #[test]
    fn pointers_go_prints_in_messages_are_masked() {
        let message = |address: &str| {
            normalize(&answer(serde_json::json!({
                "message": format!("Invalid value: {{DeprecationWarning:(*string)({address}), Schema:(*v.S)(nil)}}")
            })))
        };
        assert_eq!(message("0xc000a1b2c0"), message("0x7f3e5c001f40"));
        assert_eq!(
            message("0xc000a1b2c0")["body"]["message"],
            "Invalid value: {DeprecationWarning:(*string)(<pointer>), Schema:(*v.S)(nil)}"
        );
    }

    #[test]
    fn uids_in_field_keys_are_masked() {
        let fields = serde_json::json!({"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:metadata":
            {"f:ownerReferences": {"k:{\"uid\":\"0a1b2c3d-0000-4000-8000-000000000000\"}": {}}}}}]}});
        let normalized = normalize(&answer(fields));
        assert_eq!(
            normalized["body"]["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:ownerReferences"],
            serde_json::json!({"k:{\"uid\":\"<uid>\"}": {}})
        );
    }

    #[test]
    fn causes_and_their_message_compare_in_any_order() {
        let status = |first: (&str, &str), second: (&str, &str)| {
            normalize(&answer(serde_json::json!({
                "kind": "Status",
                "message": format!("W \"w\" is invalid: [{}: {}, {}: {}]", first.0, first.1, second.0, second.1),
                "details": {"causes": [
                    {"field": first.0, "message": first.1},
                    {"field": second.0, "message": second.1},
                ]},
            })))
        };
        let (a, b) = (("spec.a", "Required value"), ("spec.b", "Too many: 3"));
        assert_eq!(status(a, b), status(b, a));
    }

    #[test]
    fn generated_names_are_masked_only_where_generate_name_was_asked_for() {
        let generated = normalize(&answer(
            serde_json::json!({"metadata": {"generateName": "w-", "name": "w-abcde"}}),
        ));
        assert_eq!(generated["body"]["metadata"]["name"], "<generated>");
        let chosen = normalize(&answer(serde_json::json!({"metadata": {"name": "w-abcde"}})));
        assert_eq!(chosen["body"]["metadata"]["name"], "w-abcde");
    }

    #[test]
    fn messages_lose_addresses_versions_and_uids() {
        let masked = text(
            "Get \"https://127.0.0.1:41234/api\": too old resource version: 12 (40), uid 0a1b2c3d-0000-4000-8000-000000000000, ip 10.0.0.12",
        );
        assert_eq!(
            masked,
            "Get \"<server>/api\": too old resource version: <rv>, uid <uid>, ip <ip>"
        );
    }

    #[test]
    fn kubectl_tables_compare_without_ages_or_padding() {
        let out = |s: &str| Answer {
            status: 0,
            headers: BTreeMap::new(),
            body: serde_json::json!({"stdout": s, "stderr": ""}),
        };
        let a = normalize(&out("NAME   DATA   AGE\nc      1      5s\n"));
        let b = normalize(&out("NAME   DATA   AGE\nc      1      12m3s\n"));
        assert_eq!(a, b);
        assert_eq!(a["body"]["stdout"], "NAME   DATA   AGE\nc   1   <age>");
    }
}
