//! Compiles the upstream Kubernetes `generated.proto` files into one `FileDescriptorSet`, and reads
//! from the Go types beside them what the descriptors do not say: how Go's encoding/json prints each
//! field (JSON name, `omitempty`, pointer or not, inlined), and which API group each package serves.
//!
//! Why descriptors and not generated structs (prost-build, or the k8s-pb crate): the protobuf form is
//! only a carrier here. Every body is turned into the JSON the rest of the server works on, and JSON
//! back into protobuf on the way out. Structs would need one hand-written JSON conversion per type
//! (k8s-pb's have no field names and no JSON mapping); one conversion over descriptors
//! (prost-reflect) covers every kind, and the descriptors come from the very files kube-apiserver's
//! own types are generated from. protox compiles them in pure Rust: no protoc to install.
//!
//! The files come from the Go modules at the version the test control plane pins in
//! testenv/control-plane/go.mod (the one place that version is written; `build/control-plane.go.mod`
//! links to it, so that the crate's package carries it): `go mod download -json` prints where each
//! module lies in the Go module cache, fetching it first when it is not there.
//!
//! The descriptors and the Go facts are also committed, as text, in `generated/` (`make generate`
//! writes them), because they are not the protobuf form's alone. They are the Go types of the built-in
//! kinds, which the JSON path needs as much: every built-in object is stored as its Go type prints it
//! (a round trip through its message), server-side apply tracks fields by them (list types, atomic
//! structs), and decoding errors name the Go struct. So a build without Go cannot leave them out, and
//! k8s-openapi cannot stand in: its types say neither `omitempty` nor which structs are pointers, nor
//! the field numbers. With the `go-modules` feature (on in this workspace) they come from the Go modules,
//! this script checks that their text form reads back exactly, and a test fails when the committed
//! snapshot differs; without it this script reads the snapshot, and runs no `go` and touches no network,
//! for projects that use the embedded server as a test library. Both ways embed the same bytes.

#[cfg(feature = "go-modules")]
use std::{collections::BTreeMap, process::Command};
use std::{
    env, fs,
    path::{Path, PathBuf},
};

#[cfg(feature = "go-modules")]
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

#[path = "build/descriptor_text.rs"]
#[cfg_attr(not(feature = "go-modules"), allow(dead_code))]
mod descriptor_text;

/// The Go modules whose `generated.proto` files describe the built-in kinds.
#[cfg(feature = "go-modules")]
const MODULES: [&str; 4] = [
    "k8s.io/api",
    "k8s.io/apimachinery",
    "k8s.io/apiextensions-apiserver",
    "k8s.io/kube-aggregator",
];

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/descriptor_text.rs");
    write_kubernetes_types(&manifest, &out)
}

/// Without `go-modules`: the descriptors and Go facts as committed in `generated/`, into OUT_DIR as the
/// Go modules' would be.
#[cfg(not(feature = "go-modules"))]
fn write_kubernetes_types(manifest: &Path, out: &Path) -> Result<(), String> {
    let read = |name: &str| {
        let path = manifest.join("generated").join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let descriptors = descriptor_text::from_text(&read("descriptors.txt")?)?;
    fs::write(
        out.join("kubernetes.fds"),
        prost::Message::encode_to_vec(&descriptors),
    )
    .map_err(|e| e.to_string())?;
    fs::write(out.join("go_fields.tsv"), read("go_fields.tsv")?).map_err(|e| e.to_string())
}

/// With `go-modules`: compiles the descriptors and reads the Go facts from the Go modules; writes into OUT_DIR both what
/// the crate embeds and their text forms, which the snapshot test compares with `generated/`.
#[cfg(feature = "go-modules")]
fn write_kubernetes_types(manifest: &Path, out: &Path) -> Result<(), String> {
    // A link to testenv/control-plane/go.mod, inside this crate so that its package carries the pins
    // (cargo packages the file the link names).
    let go_mod = manifest.join("build/control-plane.go.mod");
    println!("cargo:rerun-if-changed={}", go_mod.display());
    let pins = fs::read_to_string(&go_mod).map_err(|e| {
        format!(
            "cannot read {} (it pins the Kubernetes version): {e}",
            go_mod.display()
        )
    })?;
    let mut modules = Vec::new();
    let mut versions = String::new();
    for module in MODULES {
        let version = pinned_version(&pins, module)
            .ok_or_else(|| format!("{} pins no version of {module}", go_mod.display()))?;
        modules.push((module, module_dir(module, &version)?));
        versions.push_str(&format!("# {module} {version}\n"));
    }

    let mut protos = Vec::new();
    for (module, dir) in &modules {
        collect_protos(dir, dir, module, &mut protos)?;
    }
    protos.sort();
    let mut resolver = ChainFileResolver::new();
    resolver.add(ModuleResolver {
        modules: modules.clone(),
    });
    resolver.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_source_info(false).include_imports(true);
    for (name, _) in &protos {
        compiler
            .open_file(name)
            .map_err(|e| format!("compiling {name}: {e}"))?;
    }
    // The normalized set is what both paths embed, so that a build from the snapshot has the very bytes.
    let descriptors = descriptor_text::normalized(&compiler.file_descriptor_set())?;
    let text = descriptor_text::to_text(&descriptors, &snapshot_header("descriptors", &versions));
    let read_back = descriptor_text::from_text(&text)?;
    if let Some((file, _)) = descriptors.file.iter().zip(&read_back.file).find(|(a, b)| a != b) {
        return Err(format!(
            "the text form of {} does not read back as it was",
            file.name()
        ));
    }
    if read_back.file.len() != descriptors.file.len() {
        return Err("the descriptors' text form does not read back as as many files".into());
    }
    fs::write(
        out.join("kubernetes.fds"),
        prost::Message::encode_to_vec(&descriptors),
    )
    .map_err(|e| e.to_string())?;
    fs::write(out.join("descriptors.txt"), text).map_err(|e| e.to_string())?;

    let mut facts = snapshot_header("Go facts", &versions);
    for (name, path) in &protos {
        let dir = path.parent().ok_or("a proto file without a folder")?;
        let source = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let package = source
            .lines()
            .find_map(|l| {
                l.strip_prefix("package ")
                    .map(|p| p.trim_end_matches(';').trim().to_owned())
            })
            .ok_or_else(|| format!("{name} declares no package"))?;
        go_facts(dir, &package, &mut facts)?;
    }
    fs::write(out.join("go_fields.tsv"), facts).map_err(|e| e.to_string())?;
    Ok(())
}

/// The comment lines atop a snapshot file: what it is, from which modules, how it is made again.
#[cfg(feature = "go-modules")]
fn snapshot_header(what: &str, versions: &str) -> String {
    format!(
        "# Generated by crates/apimachinery/build.rs: the {what} of the Kubernetes built-in kinds, read from\n\
         # these Go modules (the versions testenv/control-plane/go.mod pins). Do not edit: `make generate`\n\
         # writes it again, and apimachinery's snapshot test fails while it differs from the modules.\n{versions}"
    )
}

#[cfg(feature = "go-modules")]
/// The version a `replace` (or else a `require`) line of go.mod gives `module`.
fn pinned_version(go_mod: &str, module: &str) -> Option<String> {
    let replaced = go_mod.lines().find_map(|line| {
        let (from, to) = line.trim().split_once("=>")?;
        (from.trim() == module).then(|| to.split_whitespace().nth(1).map(str::to_owned))?
    });
    replaced.or_else(|| {
        go_mod.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            let first = words.next()?;
            let (name, version) = if first == "require" {
                (words.next()?, words.next()?)
            } else {
                (first, words.next()?)
            };
            (name == module && version.starts_with('v') && version != "v0.0.0").then(|| version.to_owned())
        })
    })
}

#[cfg(feature = "go-modules")]
/// Where the Go module cache holds `module@version`.
fn module_dir(module: &str, version: &str) -> Result<PathBuf, String> {
    let output = Command::new("go")
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .output()
        .map_err(|e| format!("running `go mod download` for {module}@{version} (the Go toolchain is needed to build this crate: the Kubernetes .proto files come from the Go module cache): {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let dir = text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("\"Dir\": \"")?;
        Some(value.trim_end_matches(',').trim_end_matches('"').to_owned())
    });
    match dir {
        Some(dir) if output.status.success() => Ok(PathBuf::from(dir)),
        _ => Err(format!(
            "`go mod download -json {module}@{version}` found no module (offline and not in the module cache?): {}{}",
            text.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

#[cfg(feature = "go-modules")]
/// Every `generated.proto` of the module, named as the files import each other
/// (`k8s.io/api/core/v1/generated.proto`). The test API groups apimachinery carries are left out.
fn collect_protos(
    root: &Path,
    dir: &Path,
    module: &str,
    found: &mut Vec<(String, PathBuf)>,
) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(
                file_name,
                "testapigroup" | "testdata" | "vendor" | "examples" | "test"
            ) {
                collect_protos(root, &path, module, found)?;
            }
        } else if file_name == "generated.proto" {
            let relative = path.strip_prefix(root).map_err(|e| e.to_string())?;
            found.push((format!("{module}/{}", relative.to_string_lossy()), path.clone()));
        }
    }
    Ok(())
}

#[cfg(feature = "go-modules")]
/// Opens `k8s.io/<module>/<rest>` from the folder of that module.
struct ModuleResolver {
    modules: Vec<(&'static str, PathBuf)>,
}

#[cfg(feature = "go-modules")]
impl FileResolver for ModuleResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for (module, dir) in &self.modules {
            if let Some(rest) = name.strip_prefix(module).and_then(|r| r.strip_prefix('/')) {
                return File::open(name, &dir.join(rest));
            }
        }
        Err(protox::Error::file_not_found(name))
    }
}

#[cfg(feature = "go-modules")]
/// Appends to `facts`, for the Go package in `dir` (proto package `package`), one line per field:
/// `F <message> <field number> <json name> <flags> <list type> <list keys> <default>` (flags: `p` pointer, `o`
/// omitempty, `i` inlined, `m` patchStrategy merge, `a`/`g` an atomic/granular map or struct marker;
/// list type `atomic`, `set` or `map` from `+listType`, list keys from `+listMapKey` or else
/// `patchMergeKey`, comma-separated, `-` for none; default: the JSON of `+default`, `-` for none),
/// `T <message>` for a struct or map type marked
/// atomic, `G <package> <API group>` from register.go, and `S <message>` for each named slice
/// (`type ExtraValue []string`, carried as a message with one `items` field), `A <message> <message>`
/// for a struct declared as another package's (`type List metav1.List`).
fn go_facts(dir: &Path, package: &str, facts: &mut String) -> Result<(), String> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for entry in fs::read_dir(dir).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let skip = !name.ends_with(".go")
            || name.ends_with("_test.go")
            || name.starts_with("zz_generated")
            || name.starts_with("generated.")
            || name.contains("swagger_doc");
        if !skip {
            files.insert(name, fs::read_to_string(&path).map_err(|e| e.to_string())?);
        }
    }
    for source in files.values() {
        go_file_facts(source, package, facts);
    }
    Ok(())
}

#[cfg(feature = "go-modules")]
fn go_file_facts(source: &str, package: &str, facts: &mut String) {
    let imports = go_imports(source);
    let mut current: Option<String> = None;
    // The `// +marker=value` comments above the declaration being read.
    let mut markers: Vec<(String, String)> = Vec::new();
    for raw in source.lines() {
        if let Some(marker) = raw.trim().strip_prefix("// +") {
            let (key, value) = marker.split_once('=').unwrap_or((marker, ""));
            markers.push((key.trim().to_owned(), value.trim().to_owned()));
            continue;
        }
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let above = std::mem::take(&mut markers);
        let marked = |key: &str| {
            above
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        let atomic_marker = || {
            ["structType", "mapType"]
                .iter()
                .flat_map(|key| marked(key))
                .next()
                .map(str::to_owned)
        };
        if let Some(rest) = line.strip_prefix("const GroupName = ") {
            facts.push_str(&format!("G\t{package}\t{}\n", rest.trim().trim_matches('"')));
            continue;
        }
        if let Some(rest) = line.strip_prefix("type ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(shape)) = (words.next(), words.next()) else {
                continue;
            };
            if atomic_marker().as_deref() == Some("atomic") {
                facts.push_str(&format!("T\t{package}.{name}\n"));
            }
            if shape == "struct" && rest.ends_with('{') {
                current = Some(name.to_owned());
            } else if shape.starts_with("[]") && shape != "[]byte" {
                facts.push_str(&format!("S\t{package}.{name}\n"));
            } else if let Some((alias, target)) = shape.split_once('.')
                && let Some(path) = imports.get(alias)
            {
                // `type MatchCondition v1.MatchCondition`: the same struct, under another name.
                let target_package = path.replace(['/'], ".").replace('-', "_");
                facts.push_str(&format!("A\t{package}.{name}\t{target_package}.{target}\n"));
            }
            continue;
        }
        if line == "}" {
            current = None;
            continue;
        }
        let Some(message) = &current else { continue };
        let Some((declaration, tags)) = line.split_once('`') else {
            continue;
        };
        let tags = tags.trim_end_matches('`');
        let (Some(json), Some(protobuf)) = (tag(tags, "json"), tag(tags, "protobuf")) else {
            continue;
        };
        let Some(number) = protobuf.split(',').nth(1).filter(|n| n.parse::<u32>().is_ok()) else {
            continue;
        };
        let mut json_parts = json.split(',');
        let json_name = json_parts.next().unwrap_or_default();
        if json_name == "-" {
            continue;
        }
        let options: Vec<&str> = json_parts.collect();
        let declared: Vec<&str> = declaration.split_whitespace().collect();
        let go_type = declared.last().copied().unwrap_or_default();
        let mut flags = String::new();
        if go_type.starts_with('*') {
            flags.push('p');
        }
        if options.contains(&"omitempty") {
            flags.push('o');
        }
        if options.contains(&"inline") || (json_name.is_empty() && declared.len() == 1) {
            flags.push('i');
        }
        if tag(tags, "patchStrategy").is_some_and(|s| s.split(',').any(|s| s == "merge")) {
            flags.push('m');
        }
        match atomic_marker().as_deref() {
            Some("atomic") => flags.push('a'),
            Some("granular") => flags.push('g'),
            _ => {}
        }
        let list_type = marked("listType").first().copied().unwrap_or("-").to_owned();
        let mut keys: Vec<String> = marked("listMapKey").iter().map(|k| (*k).to_owned()).collect();
        if keys.is_empty()
            && let Some(key) = tag(tags, "patchMergeKey")
        {
            keys.push(key.to_owned());
        }
        let keys = if keys.is_empty() {
            "-".to_owned()
        } else {
            keys.join(",")
        };
        let default = marked("default").first().copied().unwrap_or("-").to_owned();
        facts.push_str(&format!(
            "F\t{package}.{message}\t{number}\t{json_name}\t{flags}\t{list_type}\t{keys}\t{default}\n"
        ));
    }
}

#[cfg(feature = "go-modules")]
/// The import paths of a Go file by the name the file uses for each.
fn go_imports(source: &str) -> BTreeMap<String, String> {
    let mut imports = BTreeMap::new();
    let mut in_block = false;
    for line in source.lines() {
        let line = line.trim();
        let spec = if line == "import (" {
            in_block = true;
            continue;
        } else if in_block && line == ")" {
            in_block = false;
            continue;
        } else if in_block {
            line
        } else if let Some(single) = line.strip_prefix("import ") {
            single
        } else {
            continue;
        };
        let words: Vec<&str> = spec.split_whitespace().collect();
        let (name, path) = match words.as_slice() {
            [path] => (
                path.trim_matches('"').rsplit('/').next().unwrap_or_default(),
                *path,
            ),
            [name, path, ..] => (*name, *path),
            _ => continue,
        };
        imports.insert(name.to_owned(), path.trim_matches('"').to_owned());
    }
    imports
}

#[cfg(feature = "go-modules")]
/// The value of `key:"..."` in a Go struct tag.
fn tag<'a>(tags: &'a str, key: &str) -> Option<&'a str> {
    let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
    let rest = &tags[start..];
    Some(&rest[..rest.find('"')?])
}
