use serde_json::{Value, json};

use super::*;

fn round_trip(object: &Value) -> Value {
    let body = encode(object).unwrap();
    assert!(body.starts_with(MAGIC));
    let kind = object["kind"].as_str().unwrap();
    decode(&body, object["apiVersion"].as_str().unwrap(), kind).unwrap()
}

#[test]
fn d9_a_config_map_comes_back_as_go_prints_it() {
    let made = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "made", "namespace": "default", "labels": {"a": "b"}},
        "data": {"a": "b"}, "binaryData": {"bin": "AAEC"}});
    let mut expected = made.clone();
    // A non-pointer metav1.Time prints `null` when zero, whatever `omitempty` says.
    expected["metadata"]["creationTimestamp"] = Value::Null;
    assert_eq!(round_trip(&made), expected);
}

#[test]
fn d9_a_deployment_keeps_what_go_prints_and_drops_what_it_omits() {
    // What `kubectl create deployment web --image=nginx` sends, read back as kube-apiserver reads it.
    let sent = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}});
    let read = round_trip(&sent);
    assert_eq!(
        read,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": null},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                "strategy": {}},
            "status": {}})
    );
}

#[test]
fn d9_times_quantities_int_or_strings_and_inlined_structs_keep_their_json_form() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": "2024-05-01T10:00:00Z",
            "deletionTimestamp": "2024-05-01T10:05:00Z", "generation": 3,
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
        "spec": {
            "containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 8080}}}],
            "volumes": [{"name": "v", "configMap": {"name": "made"}}]}});
    let read = round_trip(&pod);
    assert_eq!(read["metadata"]["creationTimestamp"], "2024-05-01T10:00:00Z");
    assert_eq!(read["metadata"]["deletionTimestamp"], "2024-05-01T10:05:00Z");
    assert_eq!(read["metadata"]["generation"], 3);
    assert_eq!(
        read["metadata"]["managedFields"],
        pod["metadata"]["managedFields"]
    );
    let container = &read["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["limits"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["port"], "http");
    assert_eq!(container["livenessProbe"]["periodSeconds"], 5);
    assert_eq!(container["readinessProbe"]["tcpSocket"]["port"], 8080);
    assert_eq!(
        read["spec"]["volumes"][0],
        json!({"name": "v", "configMap": {"name": "made"}})
    );
}

#[test]
fn d9_micro_times_secret_bytes_and_named_slices() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l"}, "spec": {"renewTime": "2024-05-01T10:00:00.123456Z", "holderIdentity": ""}});
    let read = round_trip(&lease);
    assert_eq!(read["spec"]["renewTime"], "2024-05-01T10:00:00.123456Z");
    // A pointer field present with its zero value stays.
    assert_eq!(read["spec"]["holderIdentity"], "");

    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "type": "Opaque", "data": {"p": "eA=="}});
    let read = round_trip(&secret);
    assert_eq!(read["data"], json!({"p": "eA=="}));
    assert_eq!(read["type"], "Opaque");

    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "metadata": {}, "spec": {"user": "u", "extra": {"scopes": ["a", "b"]},
            "resourceAttributes": {"verb": "create", "resource": "pods"}}});
    let read = round_trip(&review);
    assert_eq!(read["spec"]["extra"], json!({"scopes": ["a", "b"]}));
    assert_eq!(
        read["spec"]["resourceAttributes"],
        json!({"verb": "create", "resource": "pods"})
    );
    assert_eq!(read["status"], json!({"allowed": false}));
}

#[test]
fn d9_lists_statuses_and_schemas() {
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "7", "continue": "next", "remainingItemCount": 2},
        "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "data": {"k": "v"}}]});
    let read = round_trip(&list);
    assert_eq!(read["metadata"], list["metadata"]);
    assert_eq!(read["items"][1]["data"], json!({"k": "v"}));
    assert_eq!(read["items"].as_array().unwrap().len(), 2);

    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "configmaps \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"}, "code": 404});
    assert_eq!(round_trip(&status), status);

    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "webapps.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "webapps", "kind": "WebApp"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "additionalProperties": false,
                        "properties": {"replicas": {"type": "integer", "default": 1},
                            "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
    let read = round_trip(&crd);
    assert_eq!(
        read["spec"]["versions"][0]["schema"],
        crd["spec"]["versions"][0]["schema"]
    );
}

#[test]
fn d9_watch_frames_carry_the_event_and_its_object() {
    let object =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "resourceVersion": "9"}});
    let mut stream = watch_frame("ADDED", &object).unwrap();
    stream.extend(watch_frame("DELETED", &object).unwrap());
    let (first, used) = read_watch_frame(&stream).unwrap().unwrap();
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["metadata"]["name"], "w");
    let (second, rest) = read_watch_frame(&stream[used..]).unwrap().unwrap();
    assert_eq!(second["type"], "DELETED");
    assert_eq!(used + rest, stream.len());
    assert!(read_watch_frame(&stream[..used - 1]).unwrap().is_none());
}

#[test]
fn d9_bad_bodies_are_errors_not_panics() {
    assert!(decode(b"{}", "v1", "ConfigMap").is_err());
    assert!(decode(b"k8s\0\xff\xff\xff", "v1", "ConfigMap").is_err());
    let good = encode(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}),
    )
    .unwrap();
    for cut in 4..good.len() {
        let _ = decode(&good[..cut], "v1", "ConfigMap");
    }
    assert!(
        decode(&good, "v1", "NoSuchKind").is_ok(),
        "the envelope names the kind"
    );
    let unnamed = envelope::seal(loaded().unwrap(), "", "", vec![0x0a, 0x02, 0x0a, 0x00]).unwrap();
    assert!(decode(&unnamed, "v1", "NoSuchKind").is_err());
}

proptest::proptest! {
    #[test]
    fn d9_any_bytes_after_the_magic_decode_or_fail_cleanly(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let mut body = MAGIC.to_vec();
        body.extend(tail);
        let _ = decode(&body, "apps/v1", "Deployment");
    }
}

/// Every field of every built-in message has its Go facts (a gap would print under the proto name
/// and ignore `omitempty` and pointers): the build script read each struct it should have.
#[test]
fn d9_every_field_has_go_facts() {
    let schema = loaded().unwrap();
    let mut missing = Vec::new();
    for message in schema.pool.all_messages() {
        let name = message.full_name();
        if message.is_map_entry()
            || special::Special::of(name).is_some()
            || schema.is_named_slice(name)
            || name.starts_with("k8s.io.apimachinery.pkg.runtime.")
            || name.ends_with(".Timestamp")
            // Only for command-line flags, never in an object.
            || name == "k8s.io.apimachinery.pkg.api.resource.QuantityValue"
        {
            continue;
        }
        for field in message.fields() {
            if !schema.has_facts(name, field.number()) {
                missing.push(format!("{name}.{}", field.name()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} fields without Go facts: {missing:?}",
        missing.len()
    );
}

#[test]
fn d9_an_empty_list_without_omitempty_stays_empty_as_go_decodes_it() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com", "finalizers": []},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": []}});
    let shaped = go_shaped(&crd, "apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
    assert_eq!(shaped["spec"]["versions"], json!([]));
    // `finalizers` is omitempty: an empty list is left out, as Go leaves it out.
    assert_eq!(shaped["metadata"].get("finalizers"), None);
    let absent = go_shaped(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        "v1",
        "ConfigMap",
    )
    .unwrap();
    assert_eq!(absent.get("data"), None);
}
