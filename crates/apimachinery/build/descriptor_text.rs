//! Descriptors as text, one line per file, import, message, oneof, field, enum and value, for the
//! snapshots committed in `generated/`: the built-in kinds' (`descriptors.txt`) and the OpenAPI v2
//! document's messages (`openapi_v2.txt`).
//!
//! Why text and not the binary `FileDescriptorSet`: a Kubernetes version bump then shows in review as
//! the fields that came and went. Why a format of our own and not protobuf's text format: one line per
//! field, without the field names protobuf's text repeats on every line, is shorter and diffs line by
//! line.
//!
//! Only what decides how a message reads and writes is kept ([`normalized`]): names, numbers, labels,
//! types, JSON names, map entries, oneofs and enums. Options such as `go_package` are dropped; anything
//! else that would change the wire form (extensions, defaults, packed fields, proto3 `optional`) is
//! refused, so a future `.proto` that uses it fails the build instead of being snapshotted wrong.

use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MessageOptions, OneofDescriptorProto,
    field_descriptor_proto::{Label, Type},
};

/// `set` with only what the text form carries; an error names what it cannot carry.
pub fn normalized(set: &FileDescriptorSet) -> Result<FileDescriptorSet, String> {
    let mut files = Vec::new();
    for file in &set.file {
        let name = file.name();
        if !file.public_dependency.is_empty() || !file.weak_dependency.is_empty() {
            return Err(format!("{name}: public or weak imports"));
        }
        if !file.service.is_empty() || !file.extension.is_empty() {
            return Err(format!("{name}: services or extensions"));
        }
        files.push(FileDescriptorProto {
            name: file.name.clone(),
            package: file.package.clone(),
            dependency: file.dependency.clone(),
            message_type: file
                .message_type
                .iter()
                .map(|m| normalized_message(name, m))
                .collect::<Result<_, _>>()?,
            enum_type: file
                .enum_type
                .iter()
                .map(|e| normalized_enum(name, e))
                .collect::<Result<_, _>>()?,
            syntax: file.syntax.clone(),
            ..FileDescriptorProto::default()
        });
    }
    Ok(FileDescriptorSet { file: files })
}

fn normalized_message(file: &str, message: &DescriptorProto) -> Result<DescriptorProto, String> {
    let name = format!("{file}: {}", message.name());
    if !message.extension.is_empty() || !message.extension_range.is_empty() {
        return Err(format!("{name}: extensions"));
    }
    if let Some(oneof) = message.oneof_decl.iter().find(|o| o.options.is_some()) {
        return Err(format!("{name}: oneof {} has options", oneof.name()));
    }
    let map_entry = message
        .options
        .as_ref()
        .and_then(|o| o.map_entry)
        .unwrap_or(false);
    let mut fields = Vec::new();
    for field in &message.field {
        if field.default_value.is_some()
            || field.extendee.is_some()
            || field.options.is_some()
            || field.proto3_optional.is_some()
        {
            return Err(format!(
                "{name}.{}: a default, extendee, option or proto3 optional",
                field.name()
            ));
        }
        fields.push(FieldDescriptorProto {
            name: field.name.clone(),
            number: field.number,
            label: field.label,
            r#type: field.r#type,
            type_name: field.type_name.clone(),
            json_name: field.json_name.clone(),
            oneof_index: field.oneof_index,
            ..FieldDescriptorProto::default()
        });
    }
    Ok(DescriptorProto {
        name: message.name.clone(),
        field: fields,
        oneof_decl: message
            .oneof_decl
            .iter()
            .map(|o| OneofDescriptorProto {
                name: o.name.clone(),
                options: None,
            })
            .collect(),
        nested_type: message
            .nested_type
            .iter()
            .map(|m| normalized_message(&name, m))
            .collect::<Result<_, _>>()?,
        enum_type: message
            .enum_type
            .iter()
            .map(|e| normalized_enum(&name, e))
            .collect::<Result<_, _>>()?,
        options: map_entry.then(|| MessageOptions {
            map_entry: Some(true),
            ..MessageOptions::default()
        }),
        ..DescriptorProto::default()
    })
}

fn normalized_enum(scope: &str, e: &EnumDescriptorProto) -> Result<EnumDescriptorProto, String> {
    if e.options.is_some() || !e.reserved_range.is_empty() {
        return Err(format!(
            "{scope}: enum {} has options or reserved values",
            e.name()
        ));
    }
    Ok(EnumDescriptorProto {
        name: e.name.clone(),
        value: e
            .value
            .iter()
            .map(|v| EnumValueDescriptorProto {
                name: v.name.clone(),
                number: v.number,
                options: None,
            })
            .collect(),
        ..EnumDescriptorProto::default()
    })
}

/// The text of a [`normalized`] set, after `header` (comment lines, each starting with `#`).
pub fn to_text(set: &FileDescriptorSet, header: &str) -> String {
    let mut text = header.to_owned();
    for file in &set.file {
        // A file that declares no syntax (proto2 by default) is written `-`.
        let syntax = file.syntax.as_deref().unwrap_or("-");
        text.push_str(&format!("file\t{}\t{}\t{syntax}\n", file.name(), file.package()));
        for dependency in &file.dependency {
            text.push_str(&format!("import\t{dependency}\n"));
        }
        for e in &file.enum_type {
            enum_text(e, "", &mut text);
        }
        for message in &file.message_type {
            message_text(message, "", &mut text);
        }
    }
    text
}

fn message_text(message: &DescriptorProto, scope: &str, text: &mut String) {
    let name = format!("{scope}{}", message.name());
    let map_entry = message.options.as_ref().and_then(|o| o.map_entry) == Some(true);
    text.push_str(&format!(
        "message\t{name}{}\n",
        if map_entry { "\tmap_entry" } else { "" }
    ));
    for oneof in &message.oneof_decl {
        text.push_str(&format!("oneof\t{}\n", oneof.name()));
    }
    for field in &message.field {
        let label = field
            .label()
            .as_str_name()
            .trim_start_matches("LABEL_")
            .to_lowercase();
        let kind = field
            .r#type()
            .as_str_name()
            .trim_start_matches("TYPE_")
            .to_lowercase();
        text.push_str(&format!(
            "field\t{}\t{}\t{label}\t{kind}",
            field.name(),
            field.number()
        ));
        if let Some(type_name) = &field.type_name {
            text.push_str(&format!("\t{type_name}"));
        }
        if let Some(oneof) = field
            .oneof_index
            .and_then(|index| message.oneof_decl.get(usize::try_from(index).ok()?))
        {
            text.push_str(&format!("\toneof={}", oneof.name()));
        }
        // protoc and protox write the camelCase JSON name on every field: only another one is written.
        match &field.json_name {
            Some(json) if *json == json_name(field.name()) => {}
            Some(json) => text.push_str(&format!("\tjson={json}")),
            None => text.push_str("\tjson=-"),
        }
        text.push('\n');
    }
    for e in &message.enum_type {
        enum_text(e, &format!("{name}."), text);
    }
    for nested in &message.nested_type {
        message_text(nested, &format!("{name}."), text);
    }
}

fn enum_text(e: &EnumDescriptorProto, scope: &str, text: &mut String) {
    text.push_str(&format!("enum\t{scope}{}\n", e.name()));
    for value in &e.value {
        text.push_str(&format!("value\t{}\t{}\n", value.name(), value.number()));
    }
}

/// [`to_text`], checked to read back through [`from_text`] as exactly `set`: what a build from the
/// snapshot compiles is then what this one does.
pub fn read_back_text(set: &FileDescriptorSet, header: &str) -> Result<String, String> {
    let text = to_text(set, header);
    let read_back = from_text(&text)?;
    if let Some((file, _)) = set.file.iter().zip(&read_back.file).find(|(a, b)| a != b) {
        return Err(format!(
            "the text form of {} does not read back as it was",
            file.name()
        ));
    }
    if read_back.file.len() != set.file.len() {
        return Err("the descriptors' text form does not read back as as many files".into());
    }
    Ok(text)
}

/// The set [`to_text`] wrote; an error names the line that does not read.
pub fn from_text(text: &str) -> Result<FileDescriptorSet, String> {
    let mut set = FileDescriptorSet::default();
    // The message (path of names from the file's top level) or enum the next lines belong to.
    let mut message: Vec<String> = Vec::new();
    let mut in_enum: Option<(Vec<String>, String)> = None;
    for (index, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {line}", index + 1);
        let columns: Vec<&str> = line.split('\t').collect();
        let file = set.file.last_mut();
        match (columns.as_slice(), file) {
            (["file", name, package, syntax], _) => {
                set.file.push(FileDescriptorProto {
                    name: Some((*name).to_owned()),
                    package: Some((*package).to_owned()),
                    syntax: (*syntax != "-").then(|| (*syntax).to_owned()),
                    ..FileDescriptorProto::default()
                });
                message.clear();
                in_enum = None;
            }
            (["import", dependency], Some(file)) => file.dependency.push((*dependency).to_owned()),
            (["message", name, rest @ ..], Some(file)) => {
                let path: Vec<String> = name.split('.').map(str::to_owned).collect();
                let (last, parent) = path.split_last().ok_or_else(|| bad("no name"))?;
                let created = DescriptorProto {
                    name: Some(last.clone()),
                    options: (rest == ["map_entry"]).then(|| MessageOptions {
                        map_entry: Some(true),
                        ..MessageOptions::default()
                    }),
                    ..DescriptorProto::default()
                };
                match parent {
                    [] => file.message_type.push(created),
                    parent => message_at(&mut file.message_type, parent)
                        .ok_or_else(|| bad("nested in an unknown message"))?
                        .nested_type
                        .push(created),
                }
                message = path;
                in_enum = None;
            }
            (["oneof", name], Some(file)) => {
                message_at(&mut file.message_type, &message)
                    .ok_or_else(|| bad("outside a message"))?
                    .oneof_decl
                    .push(OneofDescriptorProto {
                        name: Some((*name).to_owned()),
                        options: None,
                    });
            }
            (["field", name, number, label, kind, rest @ ..], Some(file)) => {
                let owner =
                    message_at(&mut file.message_type, &message).ok_or_else(|| bad("outside a message"))?;
                let label = Label::from_str_name(&format!("LABEL_{}", label.to_uppercase()))
                    .ok_or_else(|| bad("unknown label"))?;
                let kind = Type::from_str_name(&format!("TYPE_{}", kind.to_uppercase()))
                    .ok_or_else(|| bad("unknown type"))?;
                let mut field = FieldDescriptorProto {
                    name: Some((*name).to_owned()),
                    number: Some(number.parse().map_err(|_| bad("a field number"))?),
                    json_name: Some(json_name(name)),
                    ..FieldDescriptorProto::default()
                };
                field.set_label(label);
                field.set_type(kind);
                for extra in rest {
                    if let Some(oneof) = extra.strip_prefix("oneof=") {
                        let index = owner
                            .oneof_decl
                            .iter()
                            .position(|o| o.name() == oneof)
                            .ok_or_else(|| bad("in an undeclared oneof"))?;
                        field.oneof_index = Some(i32::try_from(index).map_err(|_| bad("too many oneofs"))?);
                        continue;
                    }
                    match extra.strip_prefix("json=") {
                        Some("-") => field.json_name = None,
                        Some(json) => field.json_name = Some(json.to_owned()),
                        None => field.type_name = Some((*extra).to_owned()),
                    }
                }
                owner.field.push(field);
            }
            (["enum", name], Some(file)) => {
                let path: Vec<String> = name.split('.').map(str::to_owned).collect();
                let (last, parent) = path.split_last().ok_or_else(|| bad("no name"))?;
                let created = EnumDescriptorProto {
                    name: Some(last.clone()),
                    ..EnumDescriptorProto::default()
                };
                match parent {
                    [] => file.enum_type.push(created),
                    parent => message_at(&mut file.message_type, parent)
                        .ok_or_else(|| bad("nested in an unknown message"))?
                        .enum_type
                        .push(created),
                }
                in_enum = Some((parent.to_vec(), last.clone()));
            }
            (["value", name, number], Some(file)) => {
                let (parent, enum_name) = in_enum.as_ref().ok_or_else(|| bad("outside an enum"))?;
                let enums = match parent.as_slice() {
                    [] => &mut file.enum_type,
                    parent => {
                        &mut message_at(&mut file.message_type, parent)
                            .ok_or_else(|| bad("in an unknown message"))?
                            .enum_type
                    }
                };
                let owner = enums
                    .iter_mut()
                    .find(|e| e.name() == enum_name)
                    .ok_or_else(|| bad("in an unknown enum"))?;
                owner.value.push(EnumValueDescriptorProto {
                    name: Some((*name).to_owned()),
                    number: Some(number.parse().map_err(|_| bad("a value number"))?),
                    options: None,
                });
            }
            _ => return Err(bad("not a line of this format")),
        }
    }
    Ok(set)
}

/// The message at `path` (names from the file's top level), among `messages`.
fn message_at<'a>(messages: &'a mut [DescriptorProto], path: &[String]) -> Option<&'a mut DescriptorProto> {
    let (first, rest) = path.split_first()?;
    let message = messages.iter_mut().find(|m| m.name() == first)?;
    if rest.is_empty() {
        Some(message)
    } else {
        message_at(&mut message.nested_type, rest)
    }
}

/// protoc's JSON name of a field: each `_` dropped and the letter after it upper-cased.
fn json_name(name: &str) -> String {
    let mut json = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            json.extend(c.to_uppercase());
            upper = false;
        } else {
            json.push(c);
        }
    }
    json
}
