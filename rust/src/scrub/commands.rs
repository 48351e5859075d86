//! Credentials in the places people type them inline: environment variables set on a
//! command line (`docker run -e POSTGRES_PASSWORD=...`, `PGPASSWORD=... psql`, a
//! compose list item), XML elements (`<password>...</password>`), tools that take a
//! password as an argument (`sshpass -p`, `htpasswd -b`, Redis `requirepass`), SQL
//! (`WITH PASSWORD '...'`, `IDENTIFIED BY '...'`), cookies and OTP URIs.
//!
//! Names are judged as in `assignment.rs` (`names.rs` splits them into words), and
//! values must be literals, so `$PGPASSWORD`, `${X}` and `<password>` stay.

use super::assignment::{password_literal, secret_literal, strong_password, unquoted_literal};
use super::entropy::looks_like_secret;
use super::names::{names, Family};
use super::rule::{Rule, Verdict, ASSIGNMENT, CONTEXTUAL};
use super::validate::{has_digit, is_placeholder_word, is_reference, without_trailing_punctuation};
use regex::Captures;

const PW_LABEL: &str = "password_assignment";
const SECRET_LABEL: &str = "secret_assignment";
/// Environment names are upper case, so their keywords are too (and chat text full
/// of "pass" and "key" never runs the rule).
const ENV_WORDS: &[&str] = &["PASS", "PW", "SECRET", "TOKEN", "KEY", "AUTH", "CRED"];

pub(crate) const RULES: &[Rule] = &[
    // `docker run -e NAME=v`, `NAME=v command`, `- NAME=v` (compose), `env NAME=v`:
    // an upper-case environment name anywhere on a line, not only alone on it.
    Rule::secret(
        "env_assignment",
        ASSIGNMENT + 1,
        r#"(?:^|[\s;&|(`"'])(?:-e[ \t]+|--env[ \t=]+|-[ \t]+)?(?P<name>[A-Z][A-Z0-9_]{0,60})=(?:"(?P<s1>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s3>[^\s"'`;&|)]+))"#,
    )
    .exact(ENV_WORDS)
    .check(env_inline)
    .relabel(),
    // `<password>v</password>`, `<apiKey>v</apiKey>`. The regex crate has no
    // back-references: the check compares the closing tag.
    Rule::secret(
        "xml_element",
        ASSIGNMENT + 1,
        r"<(?P<name>[A-Za-z_][A-Za-z0-9_.:\-]{0,60})>[ \t]*(?P<s1>[^<>\s]+)[ \t]*</(?P<close>[A-Za-z_][A-Za-z0-9_.:\-]{0,60})>",
    )
    // Every element has a closing tag: a cheaper gate than the name words.
    .exact(&["</"])
    .check(xml_element)
    .relabel(),
    Rule::secret(
        PW_LABEL,
        CONTEXTUAL,
        r#"\bsshpass(?:[ \t]+-[vV])*[ \t]+-p[ \t]*(?:'(?P<s1>[^'\r\n]+)'|"(?P<s2>[^"\r\n]+)"|(?P<s3>[^\s'"]+))"#,
    )
    .keywords(&["sshpass"])
    .check(literal),
    // `htpasswd -b[c] file user password`, and with `-n` (no file) `htpasswd -nb user
    // password`: two rules, one per argument count; the checks read the flags.
    Rule::secret(
        PW_LABEL,
        CONTEXTUAL,
        r#"\bhtpasswd(?P<flags>(?:[ \t]+-[A-Za-z]+)+)[ \t]+[^\s\-]\S*[ \t]+\S+[ \t]+(?P<s1>\S+)"#,
    )
    .keywords(&["htpasswd"])
    .check(htpasswd_file),
    Rule::secret(
        PW_LABEL,
        CONTEXTUAL,
        r#"\bhtpasswd(?P<flags>(?:[ \t]+-[A-Za-z]+)+)[ \t]+[^\s\-]\S*[ \t]+(?P<s1>\S+)"#,
    )
    .keywords(&["htpasswd"])
    .check(htpasswd_no_file),
    // Redis: `requirepass v` in redis.conf, `--requirepass v`, `CONFIG SET requirepass v`.
    Rule::secret(
        PW_LABEL,
        CONTEXTUAL,
        r#"(?im)(?:^(?P<line>[ \t]*)|\b)(?:requirepass|masterauth)["']?[ \t]+(?:'(?P<s1>[^'\r\n]+)'|"(?P<s2>[^"\r\n]+)"|(?P<s3>[^\s'"]+))(?P<eol>[ \t]*\r?$)?"#,
    )
    .keywords(&["requirepass", "masterauth"])
    .check(requirepass),
    // SQL: `CREATE ROLE x WITH PASSWORD 'v'`, `ALTER USER x PASSWORD 'v'`,
    // `IDENTIFIED BY 'v'`, `CREATE LOGIN x WITH PASSWORD = 'v'`.
    Rule::secret(
        PW_LABEL,
        CONTEXTUAL,
        r#"(?i)\b(?:with[ \t]+(?:(?:un)?encrypted[ \t]+)?password|identified[ \t]+(?:with[ \t]+[A-Za-z0-9_]+[ \t]+)?by(?:[ \t]+password)?|(?:user|role|login)\b[^\r\n;'"]{0,80}?\bpassword)[ \t]*=?[ \t]*(?:'(?P<s1>[^'\r\n]+)'|"(?P<s2>[^"\r\n]+)"|(?P<s3>[^\s'";,)]+))"#,
    )
    .keywords(&["password", "identified"])
    .check(sql),
    // A cookie header carries sessions: its whole value goes when any cookie in it
    // looks like one.
    Rule::secret(
        "cookie",
        CONTEXTUAL,
        r#"(?i)\b(?:set-)?cookie["']?[ \t]*:[ \t]*["']?(?P<s1>[^\r\n"'=;\s]+=[^\r\n"']*)"#,
    )
    .keywords(&["cookie"])
    .check(cookie),
    Rule::secret(
        "otp_secret",
        CONTEXTUAL,
        r"(?i)\botpauth(?:-migration)?://[^\s?#]*\?(?:[^\s#]*?&)?(?:secret|data)=(?P<s1>[A-Za-z0-9%=+/_\-]{8,})",
    )
    .keywords(&["otpauth"]),
];

fn verdict(ok: bool) -> Verdict {
    if ok {
        Verdict::Accept
    } else {
        Verdict::Reject
    }
}

fn group<'h>(caps: &Captures<'h>, name: &str) -> &'h str {
    caps.name(name).map_or("", |m| m.as_str())
}

/// The label for a value assigned to `name`, if it is a secret there.
fn assigned(name: &str, v: &str, quoted: bool) -> Option<&'static str> {
    if !quoted && !unquoted_literal(v) {
        return None;
    }
    if names(name, Family::Password) && password_literal(name, v) {
        Some(PW_LABEL)
    } else if names(name, Family::Secret) && secret_literal(v) {
        Some(SECRET_LABEL)
    } else {
        None
    }
}

fn relabel(label: Option<&'static str>, v: &str) -> Verdict {
    label.map_or(Verdict::Reject, |l| Verdict::As(l, v.len()))
}

fn env_inline(caps: &Captures<'_>, v: &str) -> Verdict {
    relabel(assigned(group(caps, "name"), v, caps.name("s3").is_none()), v)
}

/// The longest element value, in characters: checked here rather than bounded
/// in the pattern, for the reason `rule::Tail` gives (the value does not end
/// the pattern, so a tail cannot take it).
const XML_VALUE_MAX_CHARS: usize = 256;

fn xml_element(caps: &Captures<'_>, v: &str) -> Verdict {
    let name = group(caps, "name");
    if name != group(caps, "close") || v.chars().nth(XML_VALUE_MAX_CHARS).is_some() {
        return Verdict::Reject;
    }
    relabel(assigned(name, v, true), v)
}

/// Any literal (the command makes it a password), but not a reference.
fn literal(_: &Captures<'_>, v: &str) -> Verdict {
    verdict(!is_reference(v) && !is_placeholder_word(v))
}

fn htpasswd(caps: &Captures<'_>, v: &str, no_file: bool) -> Verdict {
    let flags = group(caps, "flags");
    let ok =
        flags.contains('b') && flags.contains('n') == no_file && !is_reference(v) && !is_placeholder_word(v);
    verdict(ok)
}

fn htpasswd_file(caps: &Captures<'_>, v: &str) -> Verdict {
    htpasswd(caps, v, false)
}

fn htpasswd_no_file(caps: &Captures<'_>, v: &str) -> Verdict {
    htpasswd(caps, v, true)
}

fn requirepass(caps: &Captures<'_>, v: &str) -> Verdict {
    if is_reference(v) || is_placeholder_word(v) {
        return Verdict::Reject;
    }
    // A config line or a quoted value is a password whatever it is; a bare word in
    // running text ("requirepass directive") needs to look like one.
    let config_line = caps.name("line").is_some() && caps.name("eol").is_some();
    let quoted = caps.name("s3").is_none();
    verdict(config_line || quoted || strong_password(v))
}

fn sql(caps: &Captures<'_>, v: &str) -> Verdict {
    if caps.name("s3").is_none() {
        return verdict(password_literal("password", v));
    }
    // Unquoted (Oracle's `IDENTIFIED BY v`, netrc's `login u password v`): prose
    // has the same words ("identified by `addr`"), so it takes a digit too.
    let n = without_trailing_punctuation(v);
    let core = &v[..n];
    if strong_password(core) && has_digit(core) && !core.contains('`') && !is_reference(core) {
        Verdict::Trim(n)
    } else {
        Verdict::Reject
    }
}

/// Some cookie in the header is a session: a session-like name with a value, or a
/// long random value.
fn cookie(_: &Captures<'_>, header: &str) -> Verdict {
    let mut found = false;
    for pair in header.split(';') {
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().trim_matches('"'));
        let session_name = ["sess", "sid", "auth", "token", "jwt", "remember", "login", "csrf", "xsrf"]
            .iter()
            .any(|w| name.contains(w));
        if (session_name && value.len() >= 6 && !is_reference(value)) || looks_like_secret(value) {
            found = true;
            break;
        }
    }
    if !found {
        return Verdict::Reject;
    }
    let n = header.trim_end().len();
    if n == 0 {
        Verdict::Reject
    } else {
        Verdict::Trim(n)
    }
}
