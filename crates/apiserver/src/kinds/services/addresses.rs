//! The Service addresses in use: every cluster IP and node port a stored Service holds, kept current
//! by each Service write and removal, so that allocation never hands out one that is taken, whatever
//! path the Service was written by (create, apply, update; a dry run stores nothing, so reserves
//! nothing).

use std::{
    collections::{BTreeMap, HashSet},
    net::Ipv4Addr,
};

use serde_json::Value;

/// The Service IP range, 10.96.0.0/12 (kube-apiserver's default `--service-cluster-ip-range`).
pub(crate) const NETWORK: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 0);
const PREFIX: u32 = 12;
/// Addresses past the network's own: the network and broadcast addresses are never handed out.
pub(crate) const SIZE: u32 = 1 << (32 - PREFIX);
/// The node port range (kube-apiserver's default `--service-node-port-range`).
pub(crate) const NODE_PORTS: std::ops::RangeInclusive<u16> = 30000..=32767;

#[derive(Debug, Default)]
pub(crate) struct ServiceAddresses {
    cluster_ips: HashSet<Ipv4Addr>,
    node_ports: HashSet<u16>,
}

impl ServiceAddresses {
    /// The addresses of the stored Services (the `/services` objects loaded from a data dir).
    pub(crate) fn build(services: Option<&BTreeMap<(String, String), Value>>) -> ServiceAddresses {
        let mut addresses = ServiceAddresses::default();
        for service in services.into_iter().flat_map(BTreeMap::values) {
            addresses.record(None, Some(service));
        }
        addresses
    }

    /// A Service went from `old` to `new` (`None`: it did not exist, or is gone).
    pub(crate) fn record(&mut self, old: Option<&Value>, new: Option<&Value>) {
        if let Some(old) = old {
            for ip in cluster_ips(old) {
                self.cluster_ips.remove(&ip);
            }
            for port in node_ports(old) {
                self.node_ports.remove(&port);
            }
        }
        if let Some(new) = new {
            self.cluster_ips.extend(cluster_ips(new));
            self.node_ports.extend(node_ports(new));
        }
    }

    pub(crate) fn holds_ip(&self, ip: Ipv4Addr) -> bool {
        self.cluster_ips.contains(&ip)
    }

    pub(crate) fn holds_port(&self, port: u16) -> bool {
        self.node_ports.contains(&port)
    }
}

/// Whether `ip` lies in the Service range and may be handed out (neither network nor broadcast).
pub(crate) fn in_range(ip: Ipv4Addr) -> bool {
    offset(ip).is_some_and(|offset| offset > 0 && offset < SIZE - 1)
}

/// The address `offset` places into the range.
pub(crate) fn at(offset: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(NETWORK) + offset)
}

fn offset(ip: Ipv4Addr) -> Option<u32> {
    u32::from(ip)
        .checked_sub(u32::from(NETWORK))
        .filter(|offset| *offset < SIZE)
}

fn cluster_ips(service: &Value) -> Vec<Ipv4Addr> {
    let listed = service
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let primary = service.pointer("/spec/clusterIP").and_then(Value::as_str);
    listed.chain(primary).filter_map(|ip| ip.parse().ok()).collect()
}

fn node_ports(service: &Value) -> Vec<u16> {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|port| port.get("nodePort")?.as_u64())
        .filter_map(|port| u16::try_from(port).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_removed_service_frees_its_addresses() {
        let service = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
            "ports": [{"port": 80, "nodePort": 30080}]}});
        let mut addresses = ServiceAddresses::default();
        addresses.record(None, Some(&service));
        assert!(addresses.holds_ip("10.96.0.9".parse().unwrap()));
        assert!(addresses.holds_port(30080));
        addresses.record(Some(&service), None);
        assert!(!addresses.holds_ip("10.96.0.9".parse().unwrap()));
        assert!(!addresses.holds_port(30080));
    }

    #[test]
    fn the_range_has_neither_network_nor_broadcast_address() {
        assert!(!in_range(NETWORK));
        assert!(in_range(at(1)));
        assert!(in_range("10.111.255.254".parse().unwrap()));
        assert!(!in_range("10.111.255.255".parse().unwrap()));
        assert!(!in_range("10.0.0.1".parse().unwrap()));
    }
}
