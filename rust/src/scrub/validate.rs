//! Small predicates shared by the rule checks: references and templates, base64,
//! character classes. None of them allocates unless noted.

/// True when `value` stands for a secret instead of being one: an environment or
/// template reference (`$DB_PASS`, `${X}`, `{{ x }}`, `%(pw)s`, `<password>`), a mask
/// (`****`, `xxxxxx`), or an earlier redaction. Redacting these would be noise, and
/// skipping them keeps configuration examples readable.
pub(crate) fn is_reference(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || v.contains("[REDACTED:") {
        return true;
    }
    let first = v.as_bytes()[0];
    let last = v.as_bytes()[v.len() - 1];
    if first == b'$' || v.contains("${") || v.contains("{{") || v.contains("%(") {
        return true;
    }
    if v.starts_with("%s") || v == "%" || (first == b'%' && last == b'%') {
        return true;
    }
    if (first == b'<' && last == b'>') || (first == b'{' && last == b'}') {
        return true;
    }
    is_mask(v)
}

/// `****`, `xxxx`, `....`, `-----`: one repeated character (case-insensitively).
pub(crate) fn is_mask(v: &str) -> bool {
    let mut bytes = v.bytes().map(|b| b.to_ascii_lowercase());
    match bytes.next() {
        Some(first) => bytes.all(|b| b == first),
        None => true,
    }
}

pub(crate) fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}

pub(crate) fn has_letter(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Has both an upper- and a lowercase ASCII letter.
pub(crate) fn has_mixed_case(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase()) && s.bytes().any(|b| b.is_ascii_lowercase())
}

/// Length of `s` without trailing sentence punctuation, so "... is hunter2." keeps
/// its period visible. Never returns 0 for a non-empty `s` of punctuation only.
pub(crate) fn without_trailing_punctuation(s: &str) -> usize {
    let trimmed = s.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
    if trimmed.is_empty() {
        s.len()
    } else {
        trimmed.len()
    }
}

/// Decodes standard or URL-safe base64, padded or not. `None` on any other byte.
/// Allocates the decoded bytes; only called on short, already-matched tokens.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let body = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for b in body.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            // Truncation is the point: the low 8 bits are the next byte.
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A path rather than a value: `/etc/secret`, `./key.pem`, `~/.netrc`, `C:\keys`.
pub(crate) fn is_path(v: &str) -> bool {
    let b = v.as_bytes();
    v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || (b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\')
}

/// A URI or resource name rather than a credential: `https://...`, `file://x`,
/// `arn:aws:iam::...`, `urn:...`. (Credentials inside URLs have their own rule.)
pub(crate) fn is_uri(v: &str) -> bool {
    v.contains("://") || v.starts_with("arn:") || v.starts_with("urn:")
}

/// Values that name a field instead of filling it: UI labels, documentation
/// placeholders, booleans, metasyntactic variables (`user:pass@host`, `'foo'`).
pub(crate) fn is_placeholder_word(v: &str) -> bool {
    #[rustfmt::skip]
    const WORDS: &[&str] = &[
        "password", "passwd", "pass", "pwd", "pw", "secret", "token", "none", "null", "nil",
        "undefined", "true", "false", "yes", "no", "on", "off", "enabled", "disabled", "example",
        "redacted", "hidden", "masked", "required", "optional", "string", "foo", "bar", "baz",
        "qux", "xxx", "your_password", "yourpassword", "your-password", "mypassword",
        "my_password", "new_password", "old_password",
    ];
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_masks_are_not_values() {
        for v in [
            "$DB_PASSWORD",
            "${PASSWORD}",
            "{{ vault_pw }}",
            "%(password)s",
            "%s",
            "<password>",
            "{password}",
            "********",
            "xxxxxxxx",
            "",
            "[REDACTED:jwt]",
        ] {
            assert!(is_reference(v), "{v}");
        }
        for v in ["hunter2", "p$ss", "a{b}c", "x<y"] {
            assert!(!is_reference(v), "{v}");
        }
    }

    #[test]
    fn base64_round_trips_the_usual_alphabets() {
        assert_eq!(base64_decode("dXNlcjpwYXNz").as_deref(), Some(&b"user:pass"[..]));
        assert_eq!(base64_decode("dXNlcjpwYXNzMQ==").as_deref(), Some(&b"user:pass1"[..]));
        assert_eq!(base64_decode("MTA4NzY1"), Some(b"108765".to_vec()));
        assert_eq!(base64_decode("a b"), None);
    }

    #[test]
    fn trailing_punctuation_is_trimmed_but_never_to_nothing() {
        assert_eq!(without_trailing_punctuation("hunter2."), 7);
        assert_eq!(without_trailing_punctuation("x!?"), 1);
        assert_eq!(without_trailing_punctuation("..."), 3);
    }
}
