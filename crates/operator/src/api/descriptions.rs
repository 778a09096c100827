//! Field descriptions as `kubectl explain` shows them. They are the types' doc comments, whose line
//! breaks are the source's width rather than the text's: kubectl prints a description's line breaks as
//! they are, so a sentence would break where the comment wrapped. Each paragraph becomes one line and
//! kubectl wraps it to the terminal.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// Every description in every version of `crd`, one line per paragraph.
pub fn unwrap_lines(crd: &mut CustomResourceDefinition) {
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            unwrap_schema(schema);
        }
    }
}

fn unwrap_schema(schema: &mut JSONSchemaProps) {
    if let Some(description) = schema.description.as_mut() {
        *description = paragraphs(description);
    }
    let nested = schema.properties.iter_mut().flat_map(|p| p.values_mut());
    let items: Vec<&mut JSONSchemaProps> = match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(item)) => vec![item.as_mut()],
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().collect(),
        None => Vec::new(),
    };
    let additional = match schema.additional_properties.as_mut() {
        Some(JSONSchemaPropsOrBool::Schema(values)) => Some(values.as_mut()),
        _ => None,
    };
    let alternatives = [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of]
        .into_iter()
        .flat_map(|s| s.iter_mut().flatten());
    for inner in nested
        .chain(items)
        .chain(additional)
        .chain(alternatives)
        .chain(schema.not.as_deref_mut())
    {
        unwrap_schema(inner);
    }
}

/// `text` with each paragraph (separated by a blank line) on one line.
fn paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| paragraph.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_a_paragraph_are_joined_and_paragraphs_kept() {
        assert_eq!(
            paragraphs("The table the row lives in: 1 to 63\nletters.\n\nA second  paragraph."),
            "The table the row lives in: 1 to 63 letters.\n\nA second paragraph."
        );
        assert_eq!(paragraphs("One line."), "One line.");
    }
}
