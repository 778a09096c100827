#!/usr/bin/env bash
# Prints everything `make deploy` applies: config/default rendered by kustomize, with the manager's
# image set to the one given (IMG). `make build-installer` writes the same into dist/install.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:?usage: scripts/manifests.sh IMAGE}

# kustomize's `images` takes the name, the tag and the digest apart.
name=$image tag="" digest=""
case $image in
  *@*) name=${image%@*} digest=${image#*@} ;;
  *) last=${image##*/}; if [[ $last == *:* ]]; then name=${image%:*}; tag=${image##*:}; else tag=latest; fi ;;
esac
entry="{name: operator, newName: \"$name\""
[ -n "$tag" ] && entry+=", newTag: \"$tag\""
[ -n "$digest" ] && entry+=", digest: \"$digest\""
entry+="}"

# An overlay beside config/default: kustomize takes its bases by relative path only.
mkdir -p target
overlay=$(mktemp -d -p target manifests.XXXXXX)
trap 'rm -rf "$overlay"' EXIT
printf 'resources:\n- ../../config/default\nimages:\n- %s\n' "$entry" >"$overlay/kustomization.yaml"
kubectl kustomize "$overlay"
