#!/usr/bin/env python3
"""Writes the bootstrap RBAC policy of kube-apiserver into crates/apiserver/src/rbac/bootstrap-policy.json.

kube-apiserver creates its default ClusterRoles, ClusterRoleBindings, and the Roles and RoleBindings
of kube-system and kube-public at start-up (its storage-rbac post-start hook). Upstream generates
that policy into YAML files beside its source (bootstrappolicy/testdata); this script reads them
from the Kubernetes Go module the repository builds its control plane from
(testenv/control-plane/go.mod) and writes them as one JSON document, so that the apiserver crate
embeds the policy and needs nothing outside itself to build.

    scripts/bootstrap-policy.py            # writes the file
    scripts/bootstrap-policy.py --check    # exits 1 when the file differs from what it would write

The module is looked for in $GOMODCACHE (or `go env GOMODCACHE`, or ~/go/pkg/mod).
"""
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, 'crates/apiserver/src/rbac/bootstrap-policy.json')
GO_MOD = os.path.join(ROOT, 'testenv/control-plane/go.mod')
TESTDATA = 'plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata'
# What the storage-rbac hook creates, in its order: cluster roles (the defaults, then the
# controllers'), cluster role bindings likewise, then the namespaced roles and bindings.
FILES = [
    'cluster-roles.yaml',
    'controller-roles.yaml',
    'cluster-role-bindings.yaml',
    'controller-role-bindings.yaml',
    'namespace-roles.yaml',
    'namespace-role-bindings.yaml',
]


def kubernetes_version():
    with open(GO_MOD) as go_mod:
        match = re.search(r'^\s*k8s\.io/kubernetes (v\S+)', go_mod.read(), re.MULTILINE)
    if not match:
        sys.exit(f'{GO_MOD} names no k8s.io/kubernetes version')
    return match.group(1)


def module_cache():
    if os.environ.get('GOMODCACHE'):
        return os.environ['GOMODCACHE']
    try:
        found = subprocess.run(['go', 'env', 'GOMODCACHE'], capture_output=True, text=True, check=True)
        if found.stdout.strip():
            return found.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return os.path.expanduser('~/go/pkg/mod')


def without_nulls(item):
    """Upstream's files carry `creationTimestamp: null`, which the server sets itself, and
    `rules: null` for the aggregated roles, whose rules the aggregation fills in."""
    metadata = item.get('metadata', {})
    if metadata.get('creationTimestamp') is None:
        metadata.pop('creationTimestamp', None)
    if 'rules' in item and item['rules'] is None:
        del item['rules']
    return item


def policy():
    version = kubernetes_version()
    directory = os.path.join(module_cache(), f'k8s.io/kubernetes@{version}', TESTDATA)
    items = []
    for name in FILES:
        with open(os.path.join(directory, name)) as source:
            document = yaml.safe_load(source)
        items.extend(without_nulls(item) for item in document['items'])
    return version, items


def render(version, items):
    # One object a line: a change upstream shows as a change of the lines of the objects it touches.
    lines = [json.dumps(item, sort_keys=True, separators=(',', ':')) for item in items]
    return (f'{{"kubernetesVersion":{json.dumps(version)},"items":[\n' + ',\n'.join(lines) + '\n]}\n')


def main():
    text = render(*policy())
    if sys.argv[1:] == ['--check']:
        with open(OUTPUT) as current:
            if current.read() != text:
                sys.exit(f'{OUTPUT} is out of date: run scripts/bootstrap-policy.py')
        return
    with open(OUTPUT, 'w') as output:
        output.write(text)


if __name__ == '__main__':
    main()
