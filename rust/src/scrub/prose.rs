//! Passwords told in sentences: "my password is hunter2", "the root pw is ...",
//! "the passphrase for the backup is ...", "login with admin / S3cure!Pass2024".
//!
//! Prose has none of the syntax that marks a literal in code, so the value must look
//! like a password on its own: letters with digits or symbols, or a long number. A
//! bare word ("the password is correct") is left alone.

use super::assignment::strong_password;
use super::entropy::reads_like_identifier;
use super::rule::{Rule, Verdict, ASSIGNMENT};
use super::validate::{
    has_digit, has_letter, has_mixed_case, is_path, is_placeholder_word, is_uri, without_trailing_punctuation,
};
use regex::Captures;

const PW_LABEL: &str = "password_assignment";

pub(crate) const RULES: &[Rule] = &[
    // "my password is x", "password: x", "the root pw is x", "the passphrase for the
    // backup is x", "the wifi password at home was x". Up to three words may qualify
    // the name before the verb.
    Rule::secret(
        PW_LABEL,
        ASSIGNMENT + 1,
        r#"(?i)\b(?P<name>password|passwd|passcode|passphrase|pwd|pw)(?:[ \t]+(?:for|of|on|to|at|in)(?:[ \t]+[A-Za-z0-9_.@\-]{1,40}){1,3})?(?:[ \t]+(?:is|was|would be|will be)\b[ \t]*:?|[ \t]*[:=])[ \t]*["'“]?(?P<s1>[^\s"'`“”])"#,
    )
    // Up to 256 characters, past the 128 bytes the check takes: the pattern took
    // the whole run, so a text repeating "pw=" without a space made every
    // attempt read the rest of the text.
    .tail(prose_password_char, 256)
    .keywords(&["passw", "passc", "passp", "pwd", "pw"])
    .check(pw_prose),
    // "login with admin / S3cure!Pass2024", "creds: admin:S3cure!Pass2024": a user and
    // a password after a login word, with no password word at all.
    Rule::secret(
        PW_LABEL,
        ASSIGNMENT,
        r#"(?i)\b(?:log[ \-]?in|sign[ \-]?in|logon|credentials?|creds)\b[^\r\n]{0,24}?[ \t:](?P<user>[A-Za-z0-9_.@+\-]{1,64})(?:[ \t]*/[ \t]*|:)(?P<s1>[^\s"'`/][^\s"'`]{3})"#,
    )
    // Up to 128 characters of the password.
    .tail(login_password_char, 128)
    .keywords(&["login", "log in", "log-in", "signin", "sign in", "sign-in", "logon", "credential", "creds"])
    .check(user_and_password),
];

fn pw_prose(_: &Captures<'_>, v: &str) -> Verdict {
    let n = without_trailing_punctuation(v);
    let core = &v[..n];
    let digits_only = core.bytes().all(|b| b.is_ascii_digit());
    if (strong_password(core) || (digits_only && core.len() >= 6)) && !is_placeholder_word(core) {
        Verdict::Trim(n)
    } else {
        Verdict::Reject
    }
}

/// The prose password's class, `[^\s"'`“”]`.
fn prose_password_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '"' | '\'' | '`' | '“' | '”')
}

/// The login password's class, `[^\s"'`]`.
fn login_password_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '"' | '\'' | '`')
}

/// Without a password word the value must be unmistakable: letters, digits, and a
/// symbol or mixed case, not an identifier (`OAuth2`), a path or a URL.
fn user_and_password(_: &Captures<'_>, v: &str) -> Verdict {
    let n = without_trailing_punctuation(v);
    let core = &v[..n];
    let symbol = core.bytes().any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.'));
    let ok = core.len() >= 6
        && has_letter(core)
        && has_digit(core)
        && (symbol || has_mixed_case(core))
        && !reads_like_identifier(core)
        && !is_path(core)
        && !is_uri(core)
        && strong_password(core);
    if ok {
        Verdict::Trim(n)
    } else {
        Verdict::Reject
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check takes passwords of at most 128 bytes (`strong_password`); the
    /// tail of 256 characters reads past that, so longer values stay refused,
    /// as when the pattern took the whole run, and trailing punctuation is
    /// still cut.
    #[test]
    fn a_password_in_prose_is_redacted_up_to_128_bytes() {
        let scrubber = crate::scrub::Scrubber::default();
        let start = "my password is ".len();
        for (len, redacted) in [(12, true), (127, true), (129, false), (300, false)] {
            let value: String = "S3cure!Pass".chars().cycle().take(len).collect();
            let found = scrubber.findings(&format!("my password is {value} ok"));
            let spans: Vec<_> = found.iter().map(|f| (f.start, f.end)).collect();
            assert_eq!(spans, if redacted { vec![(start, start + len)] } else { vec![] }, "{len}");
        }
        let found = scrubber.findings(&format!("my password is S3cure!Pass{}", ".".repeat(400)));
        assert_eq!(found.iter().map(|f| (f.start, f.end)).collect::<Vec<_>>(), [(start, start + 11)]);
    }

    #[test]
    fn the_tail_classes_are_the_patterns() {
        let login = regex::Regex::new(r#"^[^\s"'`]$"#).unwrap();
        let prose = regex::Regex::new(r#"^[^\s"'`“”]$"#).unwrap();
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let s = c.encode_utf8(&mut [0; 4]).to_owned();
            assert_eq!(login_password_char(c), login.is_match(&s), "{c:?}");
            assert_eq!(prose_password_char(c), prose.is_match(&s), "{c:?}");
        }
    }
}
