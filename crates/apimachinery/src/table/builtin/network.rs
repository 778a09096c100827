//! Services.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields, wide};

const SPEC: &str = "io.k8s.api.core.v1.ServiceSpec";

pub static SERVICE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Type", Doc::Summary(SPEC, "type")),
        column("Cluster-IP", Doc::Field(SPEC, "clusterIP")),
        column("External-IP", Doc::Field(SPEC, "externalIPs")),
        column("Port(s)", Doc::Field(SPEC, "ports")),
        AGE,
        wide("Selector", Doc::Field(SPEC, "selector")),
    ],
    cells: service,
};

fn service(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let cluster_ip = fields::items(o, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports: Vec<String> = fields::items(o, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, node_port) = (fields::int(p, "/port"), fields::int(p, "/nodePort"));
            let protocol = fields::text(p, "/protocol");
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    };
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/type")),
        json!(cluster_ip),
        json!(external_ip(o)),
        json!(ports),
        fields::age(o, now),
        json!(fields::labels(o, "/spec/selector")),
    ]
}

fn external_ip(o: &Value) -> String {
    let external: Vec<&str> = fields::items(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match fields::text(o, "/spec/type") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".into(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut ingress: Vec<&str> = fields::items(o, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    Some(fields::text(i, "/ip"))
                        .filter(|ip| !ip.is_empty())
                        .or(Some(fields::text(i, "/hostname")).filter(|h| !h.is_empty()))
                })
                .collect();
            ingress.sort_unstable();
            ingress.dedup();
            ingress.extend(external);
            if ingress.is_empty() {
                "<pending>".into()
            } else {
                ingress.join(",")
            }
        }
        "ExternalName" => fields::text(o, "/spec/externalName").to_owned(),
        _ => "<unknown>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_service_cells_show_addresses_ports_and_selector() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let service = json!({"metadata": {"name": "web"}, "spec": {
            "type": "NodePort", "clusterIPs": ["10.0.0.7"],
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"}}});
        assert_eq!(
            (SERVICE.cells)(&service, now),
            [
                json!("web"),
                json!("NodePort"),
                json!("10.0.0.7"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("<unknown>"),
                json!("app=web")
            ]
        );
        let balancer = json!({"spec": {"type": "LoadBalancer", "externalIPs": ["1.2.3.4"]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "5.6.7.8"}]}}});
        assert_eq!(external_ip(&balancer), "5.6.7.8,lb.example,1.2.3.4");
        assert_eq!(
            external_ip(&json!({"spec": {"type": "LoadBalancer"}})),
            "<pending>"
        );
        let external = json!({"spec": {"type": "ExternalName", "externalName": "db.example"}});
        assert_eq!(external_ip(&external), "db.example");
    }
}
