# Prepended to every `python:` step of the corpus: the official client configured from KUBECONFIG,
# the scenario's namespace, and one way to print what the server answered.
import json
import os
import time

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
api_client = client.ApiClient()
core = client.CoreV1Api(api_client)
apps = client.AppsV1Api(api_client)
extensions = client.ApiextensionsV1Api(api_client)
custom = client.CustomObjectsApi(api_client)
ns = os.environ["NS"]


def show(value):
    """Prints a model, a dict or a list as one JSON line."""
    print(json.dumps(api_client.sanitize_for_serialization(value), sort_keys=True))


def refused(call, *args, **kwargs):
    """Runs a call that should fail and prints the ApiException as the client user sees it."""
    try:
        show({"unexpectedly": call(*args, **kwargs)})
    except ApiException as e:
        body = json.loads(e.body) if e.body and e.body.startswith("{") else e.body
        show({"status": e.status, "reason": e.reason, "body": body})


def established(name, within=30):
    """Polls until CRD `name` is Established, for at most `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        crd = extensions.read_custom_resource_definition(name)
        if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
            return
        time.sleep(0.2)
    raise TimeoutError(f"CRD {name} not established within {within} s")


