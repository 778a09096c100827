#!/usr/bin/env python3
"""Writes a cargo `local-registry` (an `index/` laid out as crates.io's, and the `.crate` files beside
it) holding the packages `cargo package` made and every crates.io package of a Cargo.lock, so that a
project outside the workspace builds against them as if they were published: with crates.io replaced
by this directory, nothing else is reachable.

    local-registry.py OUT_DIR WORKSPACE_LOCK PACKAGE.crate...

The packaged crates' index entries are written from the normalized Cargo.toml inside each `.crate`, as
a registry writes them on publish. The crates.io packages' entries are the very lines crates.io serves,
read from cargo's cache of its index (CARGO_HOME/registry/index/*/.cache, which a build of the workspace
fills), and their `.crate` files come from cargo's download cache; the few a build on this platform
never downloads (other operating systems' crates) are listed in the index only, which is all that
resolving them needs.

Hand-written rather than cargo-local-registry: that tool builds cargo itself as a library (minutes on
two cores for every fresh CI machine), and takes packages from a lockfile's registry downloads, which
unpublished packages are not.
"""

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tomllib
from pathlib import Path

CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"
# The version of cargo's index cache files this reader knows (cargo's `CURRENT_CACHE_VERSION`).
CACHE_VERSION = 3


def index_path(name: str) -> str:
    """Where a crate's entries lie in an index: crates.io's layout by the length of the name."""
    name = name.lower()
    if len(name) <= 2:
        return f"{len(name)}/{name}"
    if len(name) == 3:
        return f"3/{name[0]}/{name}"
    return f"{name[:2]}/{name[2:4]}/{name}"


def cached_entries(cache_file: Path) -> dict[str, str]:
    """The index lines of one crate in cargo's cache, by version. The file is a version byte, a u32,
    a NUL-ended index version, then NUL-ended pairs of version and JSON line."""
    data = cache_file.read_bytes()
    if not data or data[0] != CACHE_VERSION:
        raise SystemExit(f"{cache_file}: a cargo index cache of another format (not version {CACHE_VERSION})")
    fields = data[5:].split(b"\0")
    pairs = fields[1:]
    return {pairs[i].decode(): pairs[i + 1].decode() for i in range(0, len(pairs) - 1, 2)}


def dependency_entries(manifest: dict) -> list[dict]:
    """The `deps` of an index entry, from a normalized manifest's dependency tables."""
    tables = [(None, manifest)] + [(cfg, table) for cfg, table in manifest.get("target", {}).items()]
    entries = []
    for target, table in tables:
        for section, kind in (("dependencies", "normal"), ("dev-dependencies", "dev"), ("build-dependencies", "build")):
            for name, spec in table.get(section, {}).items():
                if isinstance(spec, str):
                    spec = {"version": spec}
                entry = {
                    "name": name,
                    "req": spec["version"],
                    "features": spec.get("features", []),
                    "optional": spec.get("optional", False),
                    "default_features": spec.get("default-features", True),
                    "target": target,
                    "kind": kind,
                }
                if "package" in spec:
                    entry["package"] = spec["package"]
                entries.append(entry)
    return entries


def packaged_entry(crate: Path) -> tuple[str, str, str]:
    """Name, version and index line of a `.crate` that `cargo package` made."""
    with tarfile.open(crate, "r:gz") as archive:
        member = next(m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Cargo.toml"))
        manifest = tomllib.load(archive.extractfile(member))
    package = manifest["package"]
    # Features naming `dep:` or a weak `?/` dependency feature go in `features2`, as crates.io writes them.
    features, features2 = {}, {}
    for feature, enables in manifest.get("features", {}).items():
        new_syntax = any(e.startswith("dep:") or "?/" in e for e in enables)
        (features2 if new_syntax else features)[feature] = enables
    entry = {
        "name": package["name"],
        "vers": package["version"],
        "deps": dependency_entries(manifest),
        "cksum": hashlib.sha256(crate.read_bytes()).hexdigest(),
        "features": features,
        "yanked": False,
        "links": package.get("links"),
        "rust_version": package.get("rust-version"),
    }
    if features2:
        entry["features2"] = features2
        entry["v"] = 2
    return package["name"], package["version"], json.dumps(entry)


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    out, lock, crates = Path(sys.argv[1]), Path(sys.argv[2]), [Path(c) for c in sys.argv[3:]]
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    index_cache = next((cargo_home / "registry/index").glob("index.crates.io-*/.cache"), None)
    download_cache = next((cargo_home / "registry/cache").glob("index.crates.io-*"), None)
    if index_cache is None or download_cache is None:
        raise SystemExit(f"no crates.io index or download cache under {cargo_home}/registry: build the workspace first")

    shutil.rmtree(out, ignore_errors=True)
    (out / "index").mkdir(parents=True)
    lines: dict[str, list[str]] = {}
    published = set()
    for crate in crates:
        name, version, line = packaged_entry(crate)
        published.add(name)
        lines.setdefault(name, []).append(line)
        shutil.copyfile(crate, out / f"{name}-{version}.crate")

    for package in tomllib.loads(lock.read_text())["package"]:
        name, version = package["name"], package["version"]
        if package.get("source") != CRATES_IO or name in published:
            continue
        cache_file = index_cache / index_path(name)
        if not cache_file.exists():
            raise SystemExit(f"{name}: not in cargo's index cache ({cache_file}): build the workspace first")
        line = cached_entries(cache_file).get(version)
        if line is None:
            raise SystemExit(f"{name} {version}: not in cargo's index cache ({cache_file})")
        lines.setdefault(name, []).append(line)
        downloaded = download_cache / f"{name}-{version}.crate"
        if downloaded.exists():
            os.symlink(downloaded, out / downloaded.name)

    for name, entries in lines.items():
        path = out / "index" / index_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in entries))
    print(f"local-registry: {len(crates)} packaged and {sum(map(len, lines.values())) - len(crates)} crates.io packages in {out}")


if __name__ == "__main__":
    main()
