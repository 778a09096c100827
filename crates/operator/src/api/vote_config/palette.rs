//! The colors an option gets when its author leaves `color` out: the first of [`PALETTE`] that no
//! other option of the same VoteConfig uses, so that voters can tell options apart without anyone
//! choosing hex codes. The defaulting webhook writes the pick into the object, so that it does not
//! shift when other options change later; the controller and the conversion to v1alpha1 make the same
//! pick for an object the webhook never saw.

/// Ten colors, as many as a VoteConfig may have options, distinct enough side by side.
pub const PALETTE: [&str; 10] = [
    "#E6194B", "#3CB44B", "#4363D8", "#F58231", "#911EB4", "#42D4F4", "#F032E6", "#BFEF45", "#FABED4",
    "#469990",
];

/// Each option's color: its own, or a palette color no other option uses, in option order.
/// `colors` holds each option's color as written (`None` when left out).
pub fn fill(colors: &[Option<&str>]) -> Vec<String> {
    let mut taken: Vec<String> = colors.iter().flatten().map(|c| c.to_ascii_uppercase()).collect();
    colors
        .iter()
        .map(|color| match color {
            Some(color) => (*color).to_owned(),
            None => {
                // At most ten options, so an unused palette color always exists; the fallback only
                // keeps this total for a list longer than the schema allows.
                let pick = PALETTE
                    .iter()
                    .find(|p| !taken.iter().any(|t| t == *p))
                    .unwrap_or(&PALETTE[0]);
                taken.push((*pick).to_owned());
                (*pick).to_owned()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_color_is_the_first_palette_color_no_other_option_uses() {
        assert_eq!(
            fill(&[None, Some("#e6194b"), None]),
            ["#3CB44B", "#e6194b", "#4363D8"],
            "the first palette color is taken (in any case), so the next ones are picked in order"
        );
        assert_eq!(fill(&[Some("#123456"), Some("#654321")]), ["#123456", "#654321"]);
    }

    #[test]
    fn ten_options_without_colors_get_ten_different_colors() {
        let filled = fill(&[None; 10]);
        let mut distinct = filled.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 10, "{filled:?}");
    }
}
