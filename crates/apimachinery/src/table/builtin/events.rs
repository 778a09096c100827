//! Events of both groups (`v1` and `events.k8s.io/v1`), printed alike: an `events.k8s.io` Event is
//! read through the core fields it corresponds to (`regarding` is `involvedObject`, `note` is
//! `message`, `deprecatedCount` is `count` ...).

use serde_json::{Value, json};

use super::{BuiltInTable, Column, Doc, column, fields, wide};
use crate::{
    openapi::definitions::OBJECT_META,
    table::duration::{self, since},
};

const EVENT_DEF: &str = "io.k8s.api.core.v1.Event";

const COLUMNS: &[Column] = &[
    column("Last Seen", Doc::Field(EVENT_DEF, "lastTimestamp")),
    column("Type", Doc::Field(EVENT_DEF, "type")),
    column("Reason", Doc::Field(EVENT_DEF, "reason")),
    column("Object", Doc::Field(EVENT_DEF, "involvedObject")),
    wide(
        "Subobject",
        Doc::Field("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
    ),
    wide("Source", Doc::Field(EVENT_DEF, "source")),
    column("Message", Doc::Field(EVENT_DEF, "message")),
    wide("First Seen", Doc::Field(EVENT_DEF, "firstTimestamp")),
    wide("Count", Doc::Field(EVENT_DEF, "count")),
    Column {
        format: "name",
        ..wide("Name", Doc::Field(OBJECT_META, "name"))
    },
];

pub static CORE_EVENT: BuiltInTable = BuiltInTable {
    columns: COLUMNS,
    cells: |o, now| cells(o, &CORE_FIELDS, now),
};

pub static EVENT: BuiltInTable = BuiltInTable {
    columns: COLUMNS,
    cells: |o, now| cells(o, &EVENTS_FIELDS, now),
};

/// Where each group keeps what the printer shows.
struct Layout {
    involved: &'static str,
    message: &'static str,
    source: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
}

const CORE_FIELDS: Layout = Layout {
    involved: "/involvedObject",
    message: "/message",
    source: "/source",
    first: "/firstTimestamp",
    last: "/lastTimestamp",
    count: "/count",
};

const EVENTS_FIELDS: Layout = Layout {
    involved: "/regarding",
    message: "/note",
    source: "/deprecatedSource",
    first: "/deprecatedFirstTimestamp",
    last: "/deprecatedLastTimestamp",
    count: "/deprecatedCount",
};

fn cells(o: &Value, layout: &Layout, now: jiff::Timestamp) -> Vec<Value> {
    let has = |pointer: &str| duration::timestamp(o.pointer(pointer)).is_some();
    let first = if has(layout.first) {
        since(o.pointer(layout.first), now)
    } else {
        since(o.pointer("/eventTime"), now)
    };
    let mut last = if has(layout.last) {
        since(o.pointer(layout.last), now)
    } else {
        first.clone()
    };
    let mut count = fields::int(o, layout.count);
    if let Some(series) = o.get("series").filter(|s| s.is_object()) {
        last = since(series.get("lastObservedTime"), now);
        count = fields::int(series, "/count");
    } else if count == 0 {
        // An event reported once carries no count.
        count = 1;
    }
    let involved = o.pointer(layout.involved).cloned().unwrap_or(Value::Null);
    let kind = fields::text(&involved, "/kind").to_lowercase();
    let object = match fields::text(&involved, "/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = first_non_empty(
        fields::text(o, &format!("{}/component", layout.source)),
        fields::text(o, "/reportingController"),
    );
    let instance = first_non_empty(
        fields::text(o, &format!("{}/host", layout.source)),
        fields::text(o, "/reportingInstance"),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(fields::text(o, "/type")),
        json!(fields::text(o, "/reason")),
        json!(object),
        json!(fields::text(&involved, "/fieldPath")),
        json!(source),
        json!(fields::text(o, layout.message).trim()),
        json!(first),
        json!(count),
        fields::name(o),
    ]
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_events_of_both_groups_print_alike() {
        let now: jiff::Timestamp = "2026-11-22T10:10:00Z".parse().unwrap();
        let core = json!({"metadata": {"name": "e1"}, "type": "Normal", "reason": "Created",
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
            "message": " made it \n", "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-11-22T10:00:00Z", "lastTimestamp": "2026-11-22T10:09:00Z", "count": 4});
        assert_eq!(
            (CORE_EVENT.cells)(&core, now),
            [
                json!("60s"),
                json!("Normal"),
                json!("Created"),
                json!("pod/p"),
                json!("spec.containers{a}"),
                json!("kubelet, n1"),
                json!("made it"),
                json!("10m"),
                json!(4),
                json!("e1")
            ]
        );
        let series = json!({"metadata": {"name": "e2"}, "type": "Warning", "reason": "Failed",
            "regarding": {"kind": "Deployment"}, "note": "no", "reportingController": "ctl",
            "eventTime": "2026-11-22T10:05:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "2026-11-22T10:08:00.000000Z"}});
        let row = (EVENT.cells)(&series, now);
        assert_eq!(row[0], json!("2m"));
        assert_eq!(row[3], json!("deployment"));
        assert_eq!(row[5], json!("ctl"));
        assert_eq!(row[7..9], [json!("5m"), json!(7)]);
        let once = json!({"metadata": {"name": "e3"}, "eventTime": "2026-11-22T10:09:50.000000Z"});
        assert_eq!((EVENT.cells)(&once, now)[8], json!(1));
        assert_eq!((EVENT.cells)(&once, now)[0], json!("10s"));
    }
}
