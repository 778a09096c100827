//! Services get their addresses as kube-apiserver's Service registry hands them out (B5): a cluster IP
//! from 10.96.0.0/12 (with `clusterIPs`, `ipFamilies` and `ipFamilyPolicy` of a single-stack IPv4
//! cluster) and, for NodePort and LoadBalancer Services, node ports from 30000-32767. An address in use
//! by another Service is never handed out, and asking for one is the registry's 422.
//!
//! Not emulated: dual-stack (the range is IPv4 alone, so `RequireDualStack` gets a single address)
//! and `healthCheckNodePort`.

pub(crate) mod addresses;
pub(crate) mod dial;

use std::net::Ipv4Addr;

use apimachinery::{FieldCause, validation::NameRule};
use rand::Rng;
use serde_json::{Map, Value, json};

use super::Kind;
use crate::store::Preparing;
use crate::store::State;
use addresses::{NODE_PORTS, SIZE, ServiceAddresses, at, in_range};

/// Services: their addresses.
pub(super) struct Services;

impl Kind for Services {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        prepare(write.state, write.old, write.object)
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Dns1035Label
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// Where Services are stored, whose addresses [`ServiceAddresses`] keeps track of.
pub(crate) const STORAGE_KEY: &str = "/services";

/// The `kubernetes` Service's address, the first of the range: kube-apiserver reserves it, so it is
/// never handed out to another Service, even while that Service is gone.
pub(crate) const KUBERNETES_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// Admits a Service create (`old` = None) or update: keeps what was allocated, frees what a type
/// change no longer needs, refuses a changed address, and allocates what is missing. Nothing is
/// reserved here: the address is in use once the Service is stored.
fn prepare(state: &mut State, old: Option<&Value>, object: &mut Value) -> Result<(), Vec<FieldCause>> {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let old_spec = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
    if let Some(old_spec) = old_spec {
        keep_allocated(old_spec, spec);
        drop_unneeded(old_spec, spec);
        check_unchanged(old_spec, spec)?;
    }
    if needs_cluster_ip(spec) {
        allocate_cluster_ip(state, old_spec, spec)?;
    }
    if needs_node_ports(spec) {
        allocate_node_ports(state.extensions.get::<ServiceAddresses>(), old_spec, spec)?;
    }
    Ok(())
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

fn needs_cluster_ip(spec: &Map<String, Value>) -> bool {
    service_type(spec) != "ExternalName"
}

fn needs_node_ports(spec: &Map<String, Value>) -> bool {
    match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

fn is_unset(value: Option<&Value>) -> bool {
    value.is_none_or(|v| v.is_null() || v == "" || v.as_array().is_some_and(Vec::is_empty))
}

/// What an update leaves out keeps its allocated value, as the registry patches it in: so a manifest
/// applied again without the addresses converges.
fn keep_allocated(old: &Map<String, Value>, spec: &mut Map<String, Value>) {
    if needs_cluster_ip(old) && needs_cluster_ip(spec) {
        if is_unset(spec.get("clusterIP")) && is_unset(spec.get("clusterIPs")) {
            for field in ["clusterIP", "clusterIPs"] {
                if let Some(value) = old.get(field) {
                    spec.insert(field.into(), value.clone());
                }
            }
        }
        for field in ["ipFamilies", "ipFamilyPolicy"] {
            if is_unset(spec.get(field))
                && let Some(value) = old.get(field)
            {
                spec.insert(field.into(), value.clone());
            }
        }
    }
    if needs_node_ports(old) && needs_node_ports(spec) {
        let old_ports = ports(old);
        for port in ports_mut(spec) {
            if !is_unset(port.get("nodePort")) {
                continue;
            }
            let same = old_ports
                .iter()
                .find(|o| o.get("port") == port.get("port") && protocol(o) == protocol(port));
            if let Some(node_port) = same.and_then(|o| o.get("nodePort")) {
                port.insert("nodePort".into(), node_port.clone());
            }
        }
    }
}

/// A type that needs no cluster IP (ExternalName) or no node ports lets go of the ones the user did
/// not change, as the registry drops them (they are freed when the Service is stored).
fn drop_unneeded(old: &Map<String, Value>, spec: &mut Map<String, Value>) {
    if needs_cluster_ip(old) && !needs_cluster_ip(spec) {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec.get(field) == old.get(field) {
                spec.remove(field);
            }
        }
    }
    if needs_node_ports(old) && !needs_node_ports(spec) {
        let old_ports: Vec<Value> = ports(old)
            .iter()
            .filter_map(|p| p.get("nodePort").cloned())
            .collect();
        for port in ports_mut(spec) {
            if port.get("nodePort").is_some_and(|n| old_ports.contains(n)) {
                port.remove("nodePort");
            }
        }
    }
}

/// A Service's cluster IP never changes while it keeps one (kube-apiserver's update validation).
fn check_unchanged(old: &Map<String, Value>, spec: &mut Map<String, Value>) -> Result<(), Vec<FieldCause>> {
    if !needs_cluster_ip(old) || !needs_cluster_ip(spec) {
        return Ok(());
    }
    // A changed `clusterIP` beside an unchanged list changes the list too, as the registry
    // normalizes them before it validates.
    if spec.get("clusterIP") != old.get("clusterIP")
        && spec.get("clusterIPs") == old.get("clusterIPs")
        && let Some(ip) = spec.get("clusterIP").cloned().filter(|ip| !is_unset(Some(ip)))
    {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    let old_ips = strings(old.get("clusterIPs"));
    let new_ips = strings(spec.get("clusterIPs"));
    match (old_ips.first(), new_ips.first()) {
        (Some(before), Some(now)) if before != now => Err(vec![FieldCause::new(
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            format!("Invalid value: {}: may not change once set", go_strings(&new_ips)),
        )]),
        _ => Ok(()),
    }
}

fn allocate_cluster_ip(
    state: &mut State,
    old: Option<&Map<String, Value>>,
    spec: &mut Map<String, Value>,
) -> Result<(), Vec<FieldCause>> {
    // The single stack of the range: IPv4, whatever policy was asked for.
    if is_unset(spec.get("ipFamilies")) {
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
    }
    if is_unset(spec.get("ipFamilyPolicy")) {
        spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
    }
    let requested = match spec.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() => ip.to_owned(),
        _ => strings(spec.get("clusterIPs"))
            .into_iter()
            .next()
            .unwrap_or_default(),
    };
    if requested == "None" {
        // Headless: no address, and the list of addresses says so too.
        spec.insert("clusterIP".into(), json!("None"));
        spec.insert("clusterIPs".into(), json!(["None"]));
        return Ok(());
    }
    let kept = old.is_some_and(|old| strings(old.get("clusterIPs")).first() == Some(&requested));
    let ip = if kept {
        requested
    } else if requested.is_empty() {
        free_cluster_ip(state)?.to_string()
    } else {
        check_requested_ip(state.extensions.get::<ServiceAddresses>(), &requested)?;
        requested
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    Ok(())
}

/// The next address from the cursor on that no Service holds; the cursor moves past it, so a freed
/// address is handed out again only after the rest of the range.
fn free_cluster_ip(state: &mut State) -> Result<Ipv4Addr, Vec<FieldCause>> {
    let usable = SIZE - 2;
    for step in 0..usable {
        let offset = (state.saved_cursor.saturating_sub(1) + step) % usable + 1;
        let ip = at(offset);
        if ip != KUBERNETES_IP && !state.extensions.get::<ServiceAddresses>().holds_ip(ip) {
            state.saved_cursor = offset % usable + 1;
            return Ok(ip);
        }
    }
    Err(vec![FieldCause::new(
        "FieldValueInvalid",
        "spec.clusterIPs",
        "Invalid value: []string{}: failed to allocate a serviceIP: range is full",
    )])
}

fn check_requested_ip(addresses: &ServiceAddresses, requested: &str) -> Result<(), Vec<FieldCause>> {
    let refuse = |why: String| {
        Err(vec![FieldCause::new(
            "FieldValueInvalid",
            "spec.clusterIPs",
            format!(
                "Invalid value: {}: failed to allocate IP {requested}: {why}",
                go_strings(&[requested.to_owned()])
            ),
        )])
    };
    let Ok(ip) = requested.parse::<Ipv4Addr>() else {
        return Err(vec![FieldCause::new(
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            format!(
                "Invalid value: {requested:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            ),
        )]);
    };
    if !in_range(ip) {
        return refuse(format!(
            "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}/12",
            addresses::NETWORK
        ));
    }
    if addresses.holds_ip(ip) {
        return refuse("provided IP is already allocated".into());
    }
    Ok(())
}

fn allocate_node_ports(
    addresses: &ServiceAddresses,
    old: Option<&Map<String, Value>>,
    spec: &mut Map<String, Value>,
) -> Result<(), Vec<FieldCause>> {
    let held: Vec<u64> = old
        .filter(|old| needs_node_ports(old))
        .map(|old| {
            ports(old)
                .iter()
                .filter_map(|p| p.get("nodePort")?.as_u64())
                .collect()
        })
        .unwrap_or_default();
    let mut taken: Vec<u16> = Vec::new();
    let mut causes = Vec::new();
    for (index, port) in ports_mut(spec).enumerate() {
        let wanted = port.get("nodePort").and_then(Value::as_u64).unwrap_or(0);
        if wanted == 0 {
            continue;
        }
        let refusal = match u16::try_from(wanted) {
            Ok(number) if !NODE_PORTS.contains(&number) => Some(format!(
                "provided port is not in the valid range. The range of valid ports is {}-{}",
                NODE_PORTS.start(),
                NODE_PORTS.end()
            )),
            // A port this Service held before stays its own.
            Ok(number)
                if taken.contains(&number) || (addresses.holds_port(number) && !held.contains(&wanted)) =>
            {
                Some("provided port is already allocated".into())
            }
            Ok(number) => {
                taken.push(number);
                None
            }
            Err(_) => Some("provided port is not in the valid range".into()),
        };
        if let Some(why) = refusal {
            causes.push(FieldCause::new(
                "FieldValueInvalid",
                format!("spec.ports[{index}].nodePort"),
                format!("Invalid value: {wanted}: {why}"),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(causes);
    }
    let span = u32::from(NODE_PORTS.end() - NODE_PORTS.start()) + 1;
    for port in ports_mut(spec) {
        if port.get("nodePort").and_then(Value::as_u64).unwrap_or(0) != 0 {
            continue;
        }
        // A random start, as the registry's allocator picks, so freed ports are not reused at once.
        let start = rand::rng().random_range(0..span);
        let free = (0..span)
            .map(|step| NODE_PORTS.start() + ((start + step) % span) as u16)
            .find(|number| !addresses.holds_port(*number) && !taken.contains(number));
        let Some(number) = free else {
            return Err(vec![FieldCause::new(
                "FieldValueInvalid",
                "spec.ports",
                "Invalid value: 0: failed to allocate a nodePort: range is full",
            )]);
        };
        taken.push(number);
        port.insert("nodePort".into(), json!(number));
    }
    Ok(())
}

fn ports(spec: &Map<String, Value>) -> Vec<Map<String, Value>> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .cloned()
        .collect()
}

fn ports_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

fn protocol(port: &Map<String, Value>) -> &str {
    port.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// A list of strings as Go prints a `[]string` in a field error (`%#v`).
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}
