//! Nodes, component statuses, APIServices, certificate signing requests, Endpoints and
//! EndpointSlices.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Column, Doc, NAME, column, fields, wide};
use crate::table::duration;

const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";
const NODE_STATUS: &str = "io.k8s.api.core.v1.NodeStatus";
const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";
const SLICE: &str = "io.k8s.api.discovery.v1.EndpointSlice";

pub static NODE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Status", Doc::Text("The status of the node")),
        column("Roles", Doc::Text("The roles of the node")),
        AGE,
        column("Version", Doc::Field(NODE_INFO, "kubeletVersion")),
        wide("Internal-IP", Doc::Field(NODE_STATUS, "addresses")),
        wide("External-IP", Doc::Field(NODE_STATUS, "addresses")),
        wide("OS-Image", Doc::Field(NODE_INFO, "osImage")),
        wide("Kernel-Version", Doc::Field(NODE_INFO, "kernelVersion")),
        wide(
            "Container-Runtime",
            Doc::Field(NODE_INFO, "containerRuntimeVersion"),
        ),
    ],
    cells: node,
};

fn node(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut status: Vec<&str> = fields::items(o, "/status/conditions")
        .iter()
        .filter(|c| fields::text(c, "/type") == "Ready")
        .map(|c| {
            if fields::text(c, "/status") == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        })
        .take(1)
        .collect();
    if status.is_empty() {
        status.push("Unknown");
    }
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let address = |kind: &str| {
        fields::items(o, "/status/addresses")
            .iter()
            .find(|a| fields::text(a, "/type") == kind)
            .map_or("<none>", |a| fields::text(a, "/address"))
            .to_owned()
    };
    let or_unknown = |pointer: &str| match fields::text(o, pointer) {
        "" => "<unknown>".to_owned(),
        text => text.to_owned(),
    };
    vec![
        fields::name(o),
        json!(status.join(",")),
        json!(node_roles(o)),
        fields::age(o, now),
        json!(fields::text(o, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_unknown("/status/nodeInfo/osImage")),
        json!(or_unknown("/status/nodeInfo/kernelVersion")),
        json!(or_unknown("/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// The roles the node's labels give it: `node-role.kubernetes.io/<role>` and `kubernetes.io/role`.
fn node_roles(o: &Value) -> String {
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(
                    |(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
                        Some(role) => Some(role),
                        None if key == "kubernetes.io/role" => value.as_str(),
                        None => None,
                    },
                )
                .filter(|role| !role.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.join(",")
    }
}

pub static COMPONENT_STATUS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Status", Doc::Text("Status of the component conditions")),
        column("Message", Doc::Text("Message of the component conditions")),
        column("Error", Doc::Text("Error of the component conditions")),
    ],
    cells: component_status,
};

fn component_status(o: &Value, _now: jiff::Timestamp) -> Vec<Value> {
    let healthy = fields::items(o, "/conditions")
        .iter()
        .find(|c| fields::text(c, "/type") == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if fields::text(c, "/status") == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            fields::text(c, "/message"),
            fields::text(c, "/error"),
        ),
        None => ("Unknown", "", ""),
    };
    vec![fields::name(o), json!(status), json!(message), json!(error)]
}

pub static API_SERVICE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Service",
            Doc::Text("The reference to the service that hosts this API endpoint."),
        ),
        column("Available", Doc::Text("Whether this service is available.")),
        AGE,
    ],
    cells: api_service,
};

fn api_service(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let service = match o.pointer("/spec/service") {
        Some(s) if s.is_object() => format!("{}/{}", fields::text(s, "/namespace"), fields::text(s, "/name")),
        _ => "Local".into(),
    };
    let available = fields::items(o, "/status/conditions")
        .iter()
        .find(|c| fields::text(c, "/type") == "Available")
        .map_or_else(
            || "Unknown".to_owned(),
            |c| match fields::text(c, "/status") {
                "True" => "True".to_owned(),
                status => format!("{status} ({})", fields::text(c, "/reason")),
            },
        );
    vec![
        fields::name(o),
        json!(service),
        json!(available),
        fields::age(o, now),
    ]
}

/// Mutating and validating webhook configurations share their columns.
pub static WEBHOOK_CONFIGURATION: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        Column {
            column_type: "integer",
            ..column(
                "Webhooks",
                Doc::Text("Webhooks indicates the number of webhooks registered in this configuration"),
            )
        },
        AGE,
    ],
    cells: |o, now| {
        vec![
            fields::name(o),
            json!(fields::count(o, "/webhooks")),
            fields::age(o, now),
        ]
    },
};

pub static CERTIFICATE_SIGNING_REQUEST: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        AGE,
        // The documentation of the beta API's fields, which kube-apiserver's printer still carries.
        column(
            "SignerName",
            Doc::Text(
                "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
            ),
        ),
        column("Requestor", Doc::Text("Base64-encoded PKCS#10 CSR data")),
        column("RequestedDuration", Doc::Field(CSR_SPEC, "expirationSeconds")),
        column(
            "Condition",
            Doc::Text("Conditions applied to the request, such as approval or denial."),
        ),
    ],
    cells: certificate_signing_request,
};

fn certificate_signing_request(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut conditions: Vec<&str> = fields::items(o, "/status/conditions")
        .iter()
        .map(|c| fields::text(c, "/type"))
        .filter(|kind| matches!(*kind, "Approved" | "Denied" | "Failed"))
        .collect();
    if o.pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        conditions.push("Issued");
    }
    let condition = if conditions.is_empty() {
        "Pending".to_owned()
    } else {
        conditions.join(",")
    };
    let duration = match o.pointer("/spec/expirationSeconds").and_then(Value::as_i64) {
        Some(seconds) => duration::human_duration(seconds),
        None => "<none>".into(),
    };
    vec![
        fields::name(o),
        fields::age(o, now),
        json!(fields::text(o, "/spec/signerName")),
        json!(fields::text(o, "/spec/username")),
        json!(duration),
        json!(condition),
    ]
}

pub static ENDPOINTS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Endpoints", Doc::Field("io.k8s.api.core.v1.Endpoints", "subsets")),
        AGE,
    ],
    cells: endpoints,
};

/// At most three entries, then how many more there are.
fn at_most_three(entries: Vec<String>, none: &str) -> String {
    match entries.len() {
        0 => none.to_owned(),
        1..=3 => entries.join(","),
        n => format!("{} + {} more...", entries[..3].join(","), n - 3),
    }
}

fn endpoints(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut entries = Vec::new();
    for subset in fields::items(o, "/subsets") {
        let addresses = fields::items(subset, "/addresses");
        let ports = fields::items(subset, "/ports");
        if ports.is_empty() {
            entries.extend(addresses.iter().map(|a| fields::text(a, "/ip").to_owned()));
            continue;
        }
        for port in ports {
            for address in addresses {
                entries.push(format!(
                    "{}:{}",
                    fields::text(address, "/ip"),
                    fields::int(port, "/port")
                ));
            }
        }
    }
    vec![
        fields::name(o),
        json!(at_most_three(entries, "<none>")),
        fields::age(o, now),
    ]
}

pub static ENDPOINT_SLICE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        // The documentation of the beta API's fields, which kube-apiserver's printer still carries.
        column(
            "AddressType",
            Doc::Text(
                "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
            ),
        ),
        column(
            "Ports",
            Doc::Text(
                "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
            ),
        ),
        column("Endpoints", Doc::Field(SLICE, "endpoints")),
        AGE,
    ],
    cells: endpoint_slice,
};

fn endpoint_slice(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let ports = fields::items(o, "/ports")
        .iter()
        .map(|p| match p.get("port").and_then(Value::as_i64) {
            Some(port) => port.to_string(),
            None => "<unset>".into(),
        })
        .collect();
    let addresses = fields::items(o, "/endpoints")
        .iter()
        .flat_map(|e| fields::items(e, "/addresses"))
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    vec![
        fields::name(o),
        json!(fields::text(o, "/addressType")),
        json!(at_most_three(ports, "<unset>")),
        json!(at_most_three(addresses, "<unset>")),
        fields::age(o, now),
    ]
}
