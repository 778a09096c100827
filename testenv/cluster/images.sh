#!/usr/bin/env bash
# Builds every image the cluster tier's node runs, with no registry: the operator's from the
# project's Dockerfile as a user builds it (`make docker-build IMG=...`), and the tier's own (the pod
# sandbox, a web server for WebApps, CoreDNS) from static Go binaries in otherwise empty images.
# Saves the tier's own into target/cluster-images/images.tar and the operator's into operator.tar;
# up.sh imports both into containerd, and a cluster that already runs gets them at once.
#
# `images.sh node` builds only the tier's own, `images.sh operator` only the operator's: the tier's
# first tests run the operator as processes, so scripts/test.sh starts the node before the operator's
# image (minutes of release build) is done. With no argument, both.
#
# Uses the Docker daemon DOCKER_HOST names when one answers; otherwise starts one of its own for the
# build (no bridge, no iptables rules) and stops it after.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=env.sh
source "$here/env.sh"
build=$CLUSTER_IMAGES
mkdir -p "$build/bin"
started=$(date +%s)
which=${1:-all}
case $which in
  node | operator | all) ;;
  *) cluster_log "usage: images.sh [node|operator]"; exit 2 ;;
esac
builds() { [ "$which" = all ] || [ "$which" = "$1" ]; }

# The Go programs: the build cache makes this a few seconds when nothing changed.
if builds node; then
  (cd "$here/images" && for program in pause web; do
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$build/bin/$program" "./$program"
  done)
  (cd "$here/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$build/bin/coredns" .)
  cluster_log "programs built"
fi

own_daemon=""
stop_own_daemon() {
  [ -n "$own_daemon" ] || return 0
  kill -TERM "$own_daemon" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$own_daemon" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$own_daemon" 2>/dev/null || true
}
trap stop_own_daemon EXIT
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { cluster_log "no Docker daemon and no dockerd: scripts/test-deps.sh installs it"; exit 1; }
  socket=$build/docker.sock
  export DOCKER_HOST=unix://$socket
  # Builds only: no network of its own, no rules in the host's firewall.
  dockerd --host "$DOCKER_HOST" --data-root "$build/docker" --exec-root "$build/docker-run" \
    --pidfile "$build/dockerd.pid" --bridge none --iptables=false --ip6tables=false --ip-masq=false \
    --ip-forward=false >"$build/dockerd.log" 2>&1 &
  own_daemon=$!
  for _ in $(seq 150); do docker info >/dev/null 2>&1 && break; sleep 0.2; done
  docker info >/dev/null 2>&1 || { cluster_log "dockerd did not start:"; tail -n 20 "$build/dockerd.log" >&2; exit 1; }
fi

image() { # tag user entrypoint...: an image holding one static program
  local tag=$1 user=$2; shift 2
  local entrypoint
  entrypoint=$(printf '"%s",' "$@")
  docker build -q -t "$tag" -f - "$build/bin" >/dev/null <<EOF
FROM scratch
COPY $(basename "$1") /$(basename "$1")
USER $user
ENTRYPOINT [${entrypoint%,}]
EOF
}
# Into the running cluster's containerd, if one runs (what up.sh does at start), and waited for until
# the node reports each image in its status (the kubelet lists its images every 30 s), as tests look
# for them there.
import_if_up() { # archive image...
  local archive=$1 image deadline
  shift
  [ -f "$RUN/up" ] || return 0
  ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$archive" >/dev/null
  deadline=$(( $(date +%s) + 120 ))
  for image in "$@"; do
    until KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig kubectl --request-timeout=5s get node "$NODE_NAME" \
        -o jsonpath='{range .status.images[*]}{.names}{"\n"}{end}' 2>/dev/null | grep -qF "\"$image\""; do
      [ "$(date +%s)" -lt "$deadline" ] || { cluster_log "the node did not list $image within 120 s"; exit 1; }
      sleep 1
    done
  done
  cluster_log "imported $(basename "$archive") into the running cluster"
}
if builds node; then
  image "$PAUSE_IMAGE" 65535:65535 /pause
  image "$WEB_IMAGE" 65532:65532 /web
  # CoreDNS binds port 53 with NET_BIND_SERVICE, as the addon's image runs it.
  image "$COREDNS_IMAGE" 0:0 /coredns
  docker save -o "$build/images.tar" "$PAUSE_IMAGE" "$WEB_IMAGE" "$COREDNS_IMAGE"
  import_if_up "$build/images.tar" "$PAUSE_IMAGE" "$WEB_IMAGE" "$COREDNS_IMAGE"
fi
if builds operator; then
  make -s -C "$root" docker-build IMG="$OPERATOR_IMAGE"
  # The same image under a second tag: what `helm upgrade` moves the chart to.
  docker tag "$OPERATOR_IMAGE" "$OPERATOR_IMAGE_UPGRADE"
  docker save -o "$build/operator.tar" "$OPERATOR_IMAGE" "$OPERATOR_IMAGE_UPGRADE"
  import_if_up "$build/operator.tar" "$OPERATOR_IMAGE" "$OPERATOR_IMAGE_UPGRADE"
  cluster_log "$(docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$OPERATOR_IMAGE")"
fi
cluster_log "images ($which) saved in $(( $(date +%s) - started )) s"
