//! The networking.k8s.io kinds: Ingresses and their classes, NetworkPolicies, ServiceCIDRs and
//! IPAddresses.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields};

pub static INGRESS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Class",
            Doc::Text(
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
        ),
        column(
            "Hosts",
            Doc::Text("Hosts that incoming requests are matched against before the ingress rule"),
        ),
        column(
            "Address",
            Doc::Text("Address is a list containing ingress points for the load-balancer"),
        ),
        column("Ports", Doc::Text("Ports of TLS configurations that open")),
        AGE,
    ],
    cells: ingress,
};

/// At most three hosts, then how many rules are left: `a,b,c + 2 more...`; `*` for none.
fn hosts(o: &Value) -> String {
    const SHOWN: usize = 3;
    let rules = fields::items(o, "/spec/rules");
    let mut listed = Vec::new();
    let mut more = false;
    for rule in rules {
        if listed.len() == SHOWN {
            more = true;
        }
        let host = fields::text(rule, "/host");
        if !more && !host.is_empty() {
            listed.push(host);
        }
    }
    if listed.is_empty() {
        return "*".into();
    }
    let joined = listed.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - SHOWN)
    } else {
        joined
    }
}

fn ingress(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut addresses: Vec<&str> = fields::items(o, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            let ip = fields::text(i, "/ip");
            let hostname = fields::text(i, "/hostname");
            Some(if ip.is_empty() { hostname } else { ip }).filter(|a| !a.is_empty())
        })
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let ports = if fields::items(o, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        fields::name(o),
        json!(fields::text_or(o, "/spec/ingressClassName", "<none>")),
        json!(hosts(o)),
        json!(addresses.join(",")),
        json!(ports),
        fields::age(o, now),
    ]
}

pub static INGRESS_CLASS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Controller",
            Doc::Text("Controller that is responsible for handling this class"),
        ),
        column(
            "Parameters",
            Doc::Text("A reference to a resource with additional parameters"),
        ),
        AGE,
    ],
    cells: ingress_class,
};

fn ingress_class(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let parameters = match o.pointer("/spec/parameters") {
        Some(p) if p.is_object() => {
            let kind = match p.get("apiGroup").and_then(Value::as_str) {
                Some(group) => format!("{}.{group}", fields::text(p, "/kind")),
                None => fields::text(p, "/kind").to_owned(),
            };
            format!("{kind}/{}", fields::text(p, "/name"))
        }
        _ => "<none>".into(),
    };
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/controller")),
        json!(parameters),
        fields::age(o, now),
    ]
}

pub static NETWORK_POLICY: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        // Documented from the older extensions/v1beta1 type, whose words differ from networking/v1's.
        column(
            "Pod-Selector",
            Doc::Text(
                "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
            ),
        ),
        AGE,
    ],
    cells: network_policy,
};

fn network_policy(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::formatted_selector(o, "/spec/podSelector")),
        fields::age(o, now),
    ]
}

pub static SERVICE_CIDR: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "CIDRs",
            Doc::Field("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"),
        ),
        AGE,
    ],
    cells: service_cidr,
};

fn service_cidr(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = fields::items(o, "/spec/cidrs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![fields::name(o), json!(cidrs.join(",")), fields::age(o, now)]
}

pub static IP_ADDRESS: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "ParentRef",
            Doc::Field("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"),
        ),
    ],
    cells: ip_address,
};

fn ip_address(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let parent = match o.pointer("/spec/parentRef") {
        Some(p) if p.is_object() => {
            let resource = fields::text(p, "/resource");
            let mut parent = match fields::text(p, "/group") {
                "" => resource.to_lowercase(),
                group => format!("{resource}.{group}").to_lowercase(),
            };
            let namespace = fields::text(p, "/namespace");
            if !namespace.is_empty() {
                parent = format!("{parent}/{namespace}");
            }
            format!("{parent}/{}", fields::text(p, "/name"))
        }
        _ => "<none>".into(),
    };
    // Go's printer adds the age as a third cell, beyond the columns it declares.
    vec![fields::name(o), json!(parent), fields::age(o, now)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_ingress_cells_show_class_hosts_addresses_and_ports() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let ingress = json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example"}, {}, {"host": "b.example"}, {"host": "c.example"}, {"host": "d.example"}],
            "tls": [{"hosts": ["a.example"]}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}]}}});
        assert_eq!(
            (INGRESS.cells)(&ingress, now),
            [
                json!("web"),
                json!("nginx"),
                json!("a.example,b.example,c.example + 2 more..."),
                json!("10.0.0.1,lb.example"),
                json!("80, 443"),
                json!("<unknown>")
            ]
        );
        let bare = (INGRESS.cells)(&json!({"spec": {"rules": [{}]}}), now);
        assert_eq!(bare[1..5], [json!("<none>"), json!("*"), json!(""), json!("80")]);
    }

    #[test]
    fn t1_network_kinds_cells_name_their_references() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
        assert_eq!(
            (INGRESS_CLASS.cells)(&class, now)[1..3],
            [
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/external-lb")
            ]
        );
        let policy = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}});
        assert_eq!((NETWORK_POLICY.cells)(&policy, now)[1], json!("<none>"));
        let policy = json!({"spec": {"podSelector": {"matchLabels": {"app": "db"}}}});
        assert_eq!((NETWORK_POLICY.cells)(&policy, now)[1], json!("app=db"));
        let cidr =
            json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}});
        assert_eq!(
            (SERVICE_CIDR.cells)(&cidr, now)[1],
            json!("10.96.0.0/12,fd00::/108")
        );
        let address = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef":
            {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(
            (IP_ADDRESS.cells)(&address, now)[1],
            json!("services/default/kubernetes")
        );
        let address =
            json!({"spec": {"parentRef": {"group": "Example.com", "resource": "Gateways", "name": "g"}}});
        assert_eq!(
            (IP_ADDRESS.cells)(&address, now)[1],
            json!("gateways.example.com/g")
        );
    }
}
