"""Checks 17-21 of docs/apiserver-requirements.md, run with the official Python client.

Usage: python conformance.py CHECK   (KUBECONFIG points at the server under test)
Each check raises (exit code 1, with a traceback) when the server misbehaves and prints `ok CHECK`.
"""

import sys
import uuid

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_namespace(core):
    name = unique("py")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def check_17_crud_smp_and_watch(core):
    """Create, strategic-merge patch, then a watch yields ADDED then MODIFIED."""
    ns = new_namespace(core)
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c1", labels={"app": "x"}), data={"a": "1"})
    created = core.create_namespaced_config_map(ns, cm)
    assert created.metadata.uid, "create returns the stored object with a uid"
    # A dict body makes the client send application/strategic-merge-patch+json.
    patched = core.patch_namespaced_config_map("c1", ns, {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}, patched.data
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    seen = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, ns, timeout_seconds=3):
        seen.append((event["type"], event["object"].metadata.name, dict(event["object"].data or {})))
    assert seen[0] == ("ADDED", "c1", {"a": "1", "b": "2"}), seen
    # The stream began at the current state; change it and watch from that list's resourceVersion.
    listed = core.list_namespaced_config_map(ns)
    core.patch_namespaced_config_map("c1", ns, {"data": {"c": "3"}})
    events = [
        (e["type"], dict(e["object"].data or {}))
        for e in watch.Watch().stream(
            core.list_namespaced_config_map,
            ns,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=2,
        )
    ]
    assert events == [("MODIFIED", {"a": "1", "b": "2", "c": "3"})], events
    core.delete_namespaced_config_map("c1", ns)
    try:
        core.read_namespaced_config_map("c1", ns)
        raise AssertionError("deleted ConfigMap still readable")
    except ApiException as e:
        assert e.status == 404, e.status


def check_18_stale_replace_conflicts(core):
    ns = new_namespace(core)
    cm = core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c1"), data={"a": "1"})
    )
    stale_version = cm.metadata.resource_version
    core.patch_namespaced_config_map("c1", ns, {"data": {"a": "2"}})
    cm.data = {"a": "3"}
    cm.metadata.resource_version = stale_version
    try:
        core.replace_namespaced_config_map("c1", ns, cm)
        raise AssertionError("replace with a stale resourceVersion succeeded")
    except ApiException as e:
        assert e.status == 409, (e.status, e.body)
        assert "the object has been modified" in e.body, e.body
    assert core.read_namespaced_config_map("c1", ns).data == {"a": "2"}


def check_19_expired_watch_raises_410(core):
    """A resourceVersion older than the history ring: in-stream 410, one retry, then ApiException(410)."""
    ns = new_namespace(core)
    first = core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="old"), data={})
    )
    # The server under test runs with a small history ring; overflow it.
    for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 64):
        core.patch_namespaced_config_map("old", ns, {"data": {"i": str(i)}})
    try:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map,
            ns,
            resource_version=first.metadata.resource_version,
            timeout_seconds=3,
        ):
            pass
        raise AssertionError("watch from an expired resourceVersion did not fail")
    except ApiException as e:
        assert e.status == 410, (e.status, e.reason)


def check_20_status_patch_and_lease_conflict(core):
    ns = new_namespace(core)
    ext = client.ApiextensionsV1Api()
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pywidgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "pywidgets", "singular": "pywidget", "kind": "PyWidget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                            },
                        }
                    },
                }
            ],
        },
    }
    try:
        ext.create_custom_resource_definition(crd)
    except ApiException as e:
        if e.status != 409:
            raise
    custom = client.CustomObjectsApi()
    body = {"apiVersion": "example.com/v1", "kind": "PyWidget", "metadata": {"name": "w1"}, "spec": {"size": 1}}
    created = custom.create_namespaced_custom_object("example.com", "v1", ns, "pywidgets", body)
    assert created["metadata"]["generation"] == 1
    patched = custom.patch_namespaced_custom_object_status(
        "example.com", "v1", ns, "pywidgets", "w1", {"status": {"phase": "Ready"}}
    )
    assert patched["status"] == {"phase": "Ready"}, patched
    assert patched["metadata"]["generation"] == 1, "a status change does not bump generation"
    assert patched["spec"] == {"size": 1}

    leases = client.CoordinationV1Api()
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
    )
    leases.create_namespaced_lease(ns, lease)
    try:
        leases.create_namespaced_lease(ns, lease)
        raise AssertionError("second Lease create succeeded")
    except ApiException as e:
        assert e.status == 409, e.status
        assert "already exists" in e.body, e.body


def check_21_pagination(core):
    ns = new_namespace(core)
    for i in range(5):
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"c{i}"), data={"i": str(i)})
        )
    names, versions, token = [], set(), None
    while True:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=token)
        assert len(page.items) <= 2, len(page.items)
        names += [item.metadata.name for item in page.items]
        versions.add(page.metadata.resource_version)
        token = page.metadata._continue
        if not token:
            break
        # Writes between pages must not change what the paginated list shows.
        core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="late-")))
    assert sorted(names) == [f"c{i}" for i in range(5)], names
    assert len(versions) == 1, f"the list resourceVersion stays constant across pages: {versions}"


CHECKS = {
    "17": check_17_crud_smp_and_watch,
    "18": check_18_stale_replace_conflicts,
    "19": check_19_expired_watch_raises_410,
    "20": check_20_status_patch_and_lease_conflict,
    "21": check_21_pagination,
}

if __name__ == "__main__":
    config.load_kube_config()
    name = sys.argv[1]
    CHECKS[name](client.CoreV1Api())
    print(f"ok {name}")
