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
    first_chars, has_digit, has_letter, has_mixed_case, is_path, is_placeholder_word, is_uri,
    without_trailing_punctuation,
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
        r#"(?i)\b(?P<name>password|passwd|passcode|passphrase|pwd|pw)(?:[ \t]+(?:for|of|on|to|at|in)(?:[ \t]+[A-Za-z0-9_.@\-]{1,40}){1,3})?(?:[ \t]+(?:is|was|would be|will be)\b[ \t]*:?|[ \t]*[:=])[ \t]*["'“]?(?P<s1>[^\s"'`“”]+)"#,
    )
    .keywords(&["passw", "passc", "passp", "pwd", "pw"])
    .check(pw_prose),
    // "login with admin / S3cure!Pass2024", "creds: admin:S3cure!Pass2024": a user and
    // a password after a login word, with no password word at all.
    Rule::secret(
        PW_LABEL,
        ASSIGNMENT,
        r#"(?i)\b(?:log[ \-]?in|sign[ \-]?in|logon|credentials?|creds)\b[^\r\n]{0,24}?[ \t:](?P<user>[A-Za-z0-9_.@+\-]{1,64})(?:[ \t]*/[ \t]*|:)(?P<s1>[^\s"'`/][^\s"'`]{3,})"#,
    )
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

/// The most characters of a password after a login word: a longer run is cut
/// to its first 128 (`validate::first_chars`).
const LOGIN_PASSWORD_MAX_CHARS: usize = 128;

/// Without a password word the value must be unmistakable: letters, digits, and a
/// symbol or mixed case, not an identifier (`OAuth2`), a path or a URL.
fn user_and_password(_: &Captures<'_>, v: &str) -> Verdict {
    let v = first_chars(v, LOGIN_PASSWORD_MAX_CHARS);
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
