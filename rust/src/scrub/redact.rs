//! Placeholders: writing them, and finding the ones already in a text so a second
//! scrub leaves them alone.

use super::Finding;

/// Every placeholder starts with this; labels are `[a-z0-9_]+`.
pub(crate) const OPEN: &str = "[REDACTED:";

pub(crate) fn placeholder(label: &str) -> String {
    format!("{OPEN}{label}]")
}

/// Byte ranges of the placeholders in `text`, in order, not overlapping.
pub(crate) fn placeholder_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let label_start = start + OPEN.len();
        let rest = &text.as_bytes()[label_start..];
        let n =
            rest.iter().take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || **b == b'_').count();
        if n > 0 && rest.get(n) == Some(&b']') {
            let end = label_start + n + 1;
            spans.push((start, end));
            from = end;
        } else {
            from = label_start;
        }
    }
    spans
}

/// `text` with every byte of every span replaced by NUL. The lengths are unchanged,
/// so offsets found in the result are offsets in `text`; and NUL is neither a word
/// character nor a quote nor a space, so no rule reads a placeholder's label
/// (`...github_token]`) as a key name.
pub(crate) fn mask(text: &str, spans: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.push_str(&text[at..start]);
        out.extend(std::iter::repeat_n('\0', end - start));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` with each finding replaced by its placeholder. `findings` must be sorted
/// by start and not overlap (what `Detector::findings` returns).
pub(crate) fn apply(text: &str, findings: &[Finding]) -> String {
    let mut out = String::with_capacity(text.len() + findings.len() * 24);
    let mut at = 0;
    for f in findings {
        out.push_str(&text[at..f.start]);
        out.push_str(OPEN);
        out.push_str(f.label);
        out.push(']');
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_well_formed_placeholders_only() {
        let text = "a [REDACTED:jwt] b [REDACTED:] c [REDACTED:Upper] [REDACTED:private_key]";
        let spans = placeholder_spans(text);
        let found: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(found, ["[REDACTED:jwt]", "[REDACTED:private_key]"]);
    }

    #[test]
    fn masking_keeps_offsets() {
        let text = "é [REDACTED:jwt] x";
        let masked = mask(text, &placeholder_spans(text));
        assert_eq!(masked.len(), text.len());
        assert!(masked.ends_with(" x") && masked.starts_with("é \0"));
    }
}
