#!/usr/bin/env bash
# kube-envtest as another project gets it from a registry. Packages it and the crates it is made of
# (`cargo package`, in dependency order), puts the packages into a local registry beside every
# crates.io package of Cargo.lock (scripts/local-registry.py), and builds and tests
# examples/configmap-mirror, a project outside the workspace that names `kube-envtest = "<version>"`
# alone, against that registry in place of crates.io: offline, with no `go` on PATH. Fails if a package
# lacks a file its build needs, or wants Go or the network.
#
# Arguments go to the example's `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}
registry=$target/package-check/registry
# The example's own target dir, kept apart from the workspace's: its crates.io dependencies are the same
# packages as the workspace's, but unpacked from the registry to another path, and cargo rebuilds a
# package whose source path changed, in each build that alternates between the two.
example_target=$target/package-check/target
# In dependency order, each after the crates it depends on: their folders under crates/, and their
# package names (the embedded server's package is `kube-embedded-apiserver` in `crates/apiserver`).
dirs=(apimachinery serving apiserver kube-envtest)
crates=()
for dir in "${dirs[@]}"; do
  crates+=("$(sed -n 's/^name = "\(.*\)"$/\1/p' "crates/$dir/Cargo.toml" | head -1)")
done

start=$(date +%s)
# Uncommitted changes are packaged as they are: what is checked is the packages, not the checkout.
# The packages' own build is left to the example's, which compiles every one of them from its package
# (kube-envtest's features: no Go); `cargo package` without --no-verify builds each alone as well.
cargo package --offline --locked --allow-dirty --no-verify -q "${crates[@]/#/-p=}"
packages=()
for i in "${!dirs[@]}"; do
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "crates/${dirs[$i]}/Cargo.toml" | head -1)
  packages+=("${crates[$i]}-$version")
done
crate_files=()
for package in "${packages[@]}"; do crate_files+=("$target/package/$package.crate"); done
python3 scripts/local-registry.py "$registry" Cargo.lock "${crate_files[@]}"
# Cargo unpacks a local registry's packages once, under CARGO_HOME/registry/src/-<hash of the
# registry's path>/<name>-<version>, and reuses that copy while it exists: a package remade from newer
# sources at the same version and path would be built from the old copy. So our packages' copies go
# before every build (the crates.io packages' copies stay: their contents never change).
cargo_home=${CARGO_HOME:-$HOME/.cargo}
for package in "${packages[@]}"; do rm -rf "$cargo_home"/registry/src/-*/"$package"; done

# crates.io replaced by the registry; the workspace's debug levels (Cargo.toml's [profile.dev]): less
# to write and link than cargo's default full debug info.
config=(
  --config "source.crates-io.replace-with = 'package-check'"
  --config "source.package-check.local-registry = '$registry'"
  --config "profile.dev.debug = 'line-tables-only'"
  --config "profile.dev.package.'*'.debug = false"
)
cd examples/configmap-mirror
# Not a workspace member, so neither `cargo fmt --all` nor the workspace's clippy sees it.
cargo fmt --check
# The lockfile is made afresh, from the registry: the packages' checksums change with every edit.
rm -f Cargo.lock
export CARGO_TARGET_DIR=$example_target
bash "$root/scripts/without-go.sh" cargo "${config[@]}" generate-lockfile --offline
# Cargo takes a registry package's build as up to date while its name and version are (registry
# sources never change), so our packages' earlier builds go too.
cargo "${config[@]}" clean --offline -q "${crates[@]/#/-p=}"
bash "$root/scripts/without-go.sh" cargo "${config[@]}" test --offline --locked "$@"
echo "package-check: $(( $(date +%s) - start )) s"
