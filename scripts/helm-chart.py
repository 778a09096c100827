#!/usr/bin/env python3
"""Writes the Helm chart (`make helm-chart`: dist/chart) from install.yaml, as kubebuilder's helm plugin
does: one template per object of install.yaml, the values users change put in values.yaml with
install.yaml's own settings as their defaults. Nothing else holds a copy of the manifests, so the chart
cannot drift from them (crates/operator/tests/helm_chart.rs renders it and compares).

usage: scripts/helm-chart.py INSTALL_YAML IMAGE OUT_DIR

Works on the text kustomize prints (`kubectl kustomize`: block style, two-space indentation, one
field per line), which is what install.yaml is; every edit is checked to apply exactly where expected,
and a change of config/ that moves one fails here with the object and the line it looked for, rather
than making a chart that differs from install.yaml.

The choices, each documented in docs/operators.md ("Helm"):
- The Namespace is not a template: Helm installs into `--namespace` (`--create-namespace` makes it),
  and every `namespace:` of install.yaml becomes the release's.
- Names stay install.yaml's: the operator's cluster-scoped objects (CRDs, ClusterRoles, webhook
  configurations) exist once per cluster, so a second release could not coexist anyway.
- The CRDs are templates (templates/crd), not files in crds/: Helm never upgrades crds/, and
  VoteConfig's conversion names the release's namespace. They carry `helm.sh/resource-policy: keep`
  unless crd.keep=false, so that `helm uninstall` does not delete every PostgresWriter, VoteConfig
  and WebApp with them.
"""

import os
import re
import shutil
import sys

HELM_LABELS = "operator.labels"


def fail(message):
    sys.exit(f"helm-chart: {message}")


def documents(text):
    """The YAML documents of a multi-document stream, as text, empty ones dropped."""
    parts = re.split(r"^---\s*$", text, flags=re.MULTILINE)
    return [p.strip("\n") + "\n" for p in parts if p.strip()]


def field(doc, pattern, what):
    """The first group of `pattern` (a whole line) in `doc`."""
    found = re.search(pattern, doc, flags=re.MULTILINE)
    if not found:
        fail(f"no {what} in:\n{doc[:300]}")
    return found.group(1)


def replace_once(doc, old, new, where):
    """`doc` with the line `old` (a regular expression matching whole lines) replaced by `new`."""
    found = re.findall(old, doc, flags=re.MULTILINE)
    if len(found) != 1:
        fail(f"{where}: expected one line matching {old!r}, found {len(found)}")
    return re.sub(old, lambda _: new, doc, count=1, flags=re.MULTILINE)


def with_helm_labels(doc):
    """The chart's labels added to the object's own (top-level metadata.labels)."""
    include = "    {{- include \"" + HELM_LABELS + "\" . | nindent 4 }}"
    lines = doc.split("\n")
    start = lines.index("metadata:")
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    for i in range(start + 1, end):
        if lines[i] == "  labels:":
            lines.insert(i + 1, include)
            return "\n".join(lines)
    lines[start + 1 : start + 1] = ["  labels:", include]
    return "\n".join(lines)


def with_keep_policy(doc):
    """`helm.sh/resource-policy: keep` among the object's annotations when crd.keep is set."""
    lines = doc.split("\n")
    start = lines.index("metadata:")
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    if "  annotations:" in lines[start + 1 : end]:
        at = lines.index("  annotations:", start) + 1
        lines[at:at] = ["    {{- if .Values.crd.keep }}", "    helm.sh/resource-policy: keep", "    {{- end }}"]
    else:
        lines[start + 1 : start + 1] = [
            "  {{- if .Values.crd.keep }}",
            "  annotations:",
            "    helm.sh/resource-policy: keep",
            "  {{- end }}",
        ]
    return "\n".join(lines)


def block_at(doc, key_line):
    """The lines under `key_line` (more indented than it), and their indentation."""
    lines = doc.split("\n")
    try:
        start = lines.index(key_line)
    except ValueError:
        fail(f"no line {key_line!r}")
    indent = len(key_line) - len(key_line.lstrip()) + 2
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith(" " * indent):
            break
        body.append(line[indent:])
    return start, body, indent


def split_image(image):
    """Repository and tag, as kustomize's `images` takes them apart (scripts/manifests.sh)."""
    if "@" in image:
        fail(f"{image}: give the chart's default image by tag, not by digest")
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = image.rsplit(":", 1)
        return repository, tag
    return image, "latest"


def yaml_scalar(value):
    """A string as a double-quoted YAML scalar."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def manager_template(doc, image):
    """The manager's Deployment with the values users change; returns it and their defaults."""
    where = "the manager's Deployment"
    values = {}
    # The container's args: the list under `- args:`, before any template line is added.
    lines = doc.split("\n")
    if "      - args:" not in lines:
        fail(f"{where}: no args in the manager's container")
    args = []
    for line in lines[lines.index("      - args:") + 1 :]:
        if not line.startswith("        - "):
            break
        args.append(line)
    values["replicas"] = field(doc, r"^  replicas: (\d+)$", "spec.replicas")
    doc = replace_once(doc, r"^  replicas: \d+$", "  replicas: {{ .Values.manager.replicas }}", where)

    container = "        "
    doc = replace_once(
        doc,
        rf"^{container}image: {re.escape(image)}$",
        f"{container}image: \"{{{{ .Values.manager.image.repository }}}}:{{{{ .Values.manager.image.tag }}}}\"\n"
        f"{container}{{{{- with .Values.manager.image.pullPolicy }}}}\n"
        f"{container}imagePullPolicy: {{{{ . }}}}\n"
        f"{container}{{{{- end }}}}",
        where,
    )

    values["leader_election"] = re.search(rf"^{container}- --leader-elect$", doc, re.MULTILINE) is not None
    if values["leader_election"]:
        doc = replace_once(
            doc,
            rf"^{container}- --leader-elect$",
            f"{container}{{{{- if .Values.manager.leaderElection }}}}\n"
            f"{container}- --leader-elect\n"
            f"{container}{{{{- end }}}}",
            where,
        )
    else:
        fail(f"{where}: no --leader-elect among the manager's args")

    # `--metrics-secure` as install.yaml sets it, or the binary's default (secure) when it does not.
    secure = re.search(rf"^{container}- --metrics-secure(=(true|false))?$", doc, re.MULTILINE)
    if secure:
        values["metrics_secure"] = secure.group(2) != "false"
        doc = replace_once(
            doc,
            rf"^{container}- --metrics-secure(=(true|false))?$",
            f"{container}- --metrics-secure={{{{ .Values.metrics.secure }}}}",
            where,
        )
    else:
        values["metrics_secure"] = True
        last = args[-1]
        doc = replace_once(
            doc,
            rf"^{re.escape(last)}$",
            f"{last}\n"
            f"{container}{{{{- if not .Values.metrics.secure }}}}\n"
            f"{container}- --metrics-secure=false\n"
            f"{container}{{{{- end }}}}",
            where,
        )

    for env, key in [
        ("PSQL_HOST", "host"),
        ("PSQL_PORT", "port"),
        ("PSQL_DBNAME", "dbname"),
        ("PSQL_USER", "user"),
    ]:
        pattern = rf"^{container}- name: {env}\n{container}  value: (.*)$"
        raw = field(doc, pattern, f"{env} in {where}")
        values[key] = raw.strip('"')
        doc = replace_once(
            doc,
            pattern,
            f"{container}- name: {env}\n{container}  value: {{{{ .Values.postgres.{key} | quote }}}}",
            where,
        )
    # The volume the password file is mounted from (config/manager names it postgres-password).
    volume = r"^      - name: postgres-password\n        secret:\n          secretName: (.*)$"
    values["password_secret"] = field(doc, volume, f"the password Secret's volume in {where}")
    doc = replace_once(
        doc,
        volume,
        "      - name: postgres-password\n        secret:\n"
        "          secretName: {{ .Values.postgres.passwordSecret.name }}",
        where,
    )

    start, resources, indent = block_at(doc, f"{container}resources:")
    values["resources"] = resources
    lines = doc.split("\n")
    lines[start + 1 : start + 1 + len(resources)] = [
        f"{' ' * indent}{{{{- toYaml .Values.manager.resources | nindent {indent} }}}}"
    ]
    doc = "\n".join(lines)

    guard = (
        "{{- if and (not .Values.manager.leaderElection) (gt (int .Values.manager.replicas) 1) }}\n"
        '{{- fail "manager.leaderElection=false lets every replica reconcile at once: set manager.replicas=1" }}\n'
        "{{- end }}\n"
    )
    return guard + doc, values


def values_yaml(image, manager):
    repository, tag = split_image(image)
    resources = "\n".join(f"    {line}" for line in manager["resources"] if line)
    return f"""# The settings users change. The defaults are install.yaml's (make build-installer), from which
# this chart was generated (make helm-chart); docs/operators.md ("Helm") says what each does.
manager:
  image:
    repository: {yaml_scalar(repository)}
    tag: {yaml_scalar(tag)}
    # Empty: Kubernetes' default (IfNotPresent for a tag other than latest).
    pullPolicy: ""
  replicas: {manager["replicas"]}
  # Hold a Lease so that one replica reconciles and the others wait; false needs replicas: 1.
  leaderElection: {str(manager["leader_election"]).lower()}
  resources:
{resources}

# Where the manager reaches PostgreSQL, and the Secret (in the release's namespace) whose key
# `password` holds the password.
postgres:
  host: {yaml_scalar(manager["host"])}
  port: {yaml_scalar(manager["port"])}
  dbname: {yaml_scalar(manager["dbname"])}
  user: {yaml_scalar(manager["user"])}
  passwordSecret:
    name: {yaml_scalar(manager["password_secret"])}

metrics:
  # HTTPS with authentication and authorization through the API server; false: plain HTTP.
  secure: {str(manager["metrics_secure"]).lower()}

crd:
  # Install and upgrade the CRDs with the release.
  enable: true
  # Keep the CRDs (and so every PostgresWriter, VoteConfig and WebApp) on `helm uninstall`.
  keep: true
"""


HELPERS = """{{/* The labels Helm's charts carry, beside each object's own. */}}
{{- define "operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
"""

NOTES = """The operator runs in {{ .Release.Namespace }} ({{ .Values.manager.replicas }} replicas of {{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}).
It reaches PostgreSQL at {{ .Values.postgres.host }}:{{ .Values.postgres.port }} with the password in the Secret {{ .Values.postgres.passwordSecret.name }} (key `password`).
{{- if .Values.crd.keep }}
`helm uninstall` keeps the CRDs and every resource of their kinds: delete the resources first, then the CRDs
(kubectl delete crd postgreswriters.demo.yash.com voteconfigs.voting.schoolofdevops.com webapps.example.com).
{{- end }}
"""

HELMIGNORE = """.DS_Store
*.swp
*.bak
*.tmp
*.orig
*~
"""

# The folder of templates/ each kind goes into, as kubebuilder's plugin lays them out.
FOLDERS = {
    "CustomResourceDefinition": "crd",
    "ServiceAccount": "rbac",
    "Role": "rbac",
    "ClusterRole": "rbac",
    "RoleBinding": "rbac",
    "ClusterRoleBinding": "rbac",
    "Deployment": "manager",
    "MutatingWebhookConfiguration": "webhook",
    "ValidatingWebhookConfiguration": "webhook",
}


def operator_version():
    cargo = os.path.join(os.path.dirname(__file__), "..", "crates", "operator", "Cargo.toml")
    with open(cargo) as f:
        return field(f.read(), r'^version = "(.*)"$', "the operator crate's version")


def main():
    if len(sys.argv) != 4:
        fail("usage: scripts/helm-chart.py INSTALL_YAML IMAGE OUT_DIR")
    install, image, out = sys.argv[1:]
    with open(install) as f:
        docs = documents(f.read())

    namespaces = [d for d in docs if field(d, r"^kind: (\S+)$", "kind") == "Namespace"]
    if len(namespaces) != 1:
        fail(f"{install}: expected one Namespace, found {len(namespaces)}")
    namespace = field(namespaces[0], r"^  name: (\S+)$", "the Namespace's name")

    templates = {}
    manager = None
    for doc in docs:
        kind = field(doc, r"^kind: (\S+)$", "kind")
        name = field(doc, r"^  name: (\S+)$", f"the {kind}'s name")
        if kind == "Namespace":
            continue
        # Text that is Helm's syntax, in a description say, stays text.
        doc = doc.replace("{{", '{{ "{{" }}')
        doc = re.sub(
            rf"^(\s*)namespace: {re.escape(namespace)}$",
            r"\1namespace: {{ .Release.Namespace }}",
            doc,
            flags=re.MULTILINE,
        )
        if re.search(rf"\b{re.escape(namespace)}\b", doc):
            fail(f"{kind} {name} names the namespace {namespace} other than as metadata.namespace")
        if kind == "Deployment":
            doc, manager = manager_template(doc, image)
        doc = with_helm_labels(doc)
        folder = FOLDERS.get(kind, "other")
        if kind == "CustomResourceDefinition":
            doc = with_keep_policy(doc)
            doc = "{{- if .Values.crd.enable }}\n" + doc.rstrip("\n") + "\n{{- end }}\n"
        elif kind == "Service":
            folder = "webhook" if "webhook" in name else "metrics"
        elif kind == "Secret":
            folder = "webhook"
        path = os.path.join(folder, f"{name}.yaml")
        if path in templates:
            path = os.path.join(folder, f"{name}-{kind.lower()}.yaml")
        templates[path] = doc.rstrip("\n") + "\n"
    if manager is None:
        fail(f"{install}: no Deployment of the manager")

    _, tag = split_image(image)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "templates"))
    files = {
        "Chart.yaml": (
            "apiVersion: v2\n"
            "name: operator\n"
            "description: Operators for PostgresWriter, VoteConfig and WebApp (generated from install.yaml by make helm-chart)\n"
            "type: application\n"
            f"version: {operator_version()}\n"
            f"appVersion: {yaml_scalar(tag)}\n"
        ),
        "values.yaml": values_yaml(image, manager),
        ".helmignore": HELMIGNORE,
        "templates/_helpers.tpl": HELPERS,
        "templates/NOTES.txt": NOTES,
    }
    files.update({f"templates/{path}": text for path, text in templates.items()})
    for path, text in sorted(files.items()):
        full = os.path.join(out, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    print(out)


if __name__ == "__main__":
    main()
