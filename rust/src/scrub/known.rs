//! Known-format tokens that are not whole: cut short (a truncated paste or log line),
//! or wrapped onto a second line. The vendor rules in `patterns.rs` want the full
//! length, so without these a token cut at 20 characters, or wrapped after 20, kept
//! what the vendor rule did not take.
//!
//! Both rules share one table of prefixes with each format's alphabet and length,
//! and report the vendor's label (`github_token`, not a label of their own).

use super::entropy::reads_like_identifier;
use super::rule::{Rule, Verdict, PREFIXED};
use super::validate::{has_digit, has_letter, has_mixed_case};
use regex::Captures;

/// A token format: `prefix` then a body of `min..=max` bytes of `alphabet`.
struct Format {
    prefix: &'static str,
    label: &'static str,
    alphabet: Alphabet,
    min: usize,
    max: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Alphabet {
    Alnum,
    AlnumUnderscore,
    /// Base64url: letters, digits, `_` and `-`.
    UrlSafe,
    UpperDigit,
    Hex,
}

use Alphabet::{Alnum, AlnumUnderscore, Hex, UpperDigit, UrlSafe};

impl Alphabet {
    fn has(self, b: u8) -> bool {
        match self {
            Alnum => b.is_ascii_alphanumeric(),
            AlnumUnderscore => b.is_ascii_alphanumeric() || b == b'_',
            UrlSafe => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            UpperDigit => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Hex => b.is_ascii_hexdigit(),
        }
    }
}

const fn f(prefix: &'static str, label: &'static str, alphabet: Alphabet, min: usize, max: usize) -> Format {
    Format { prefix, label, alphabet, min, max }
}

/// Longer prefixes first: the first prefix that matches is the format.
#[rustfmt::skip]
const FORMATS: &[Format] = &[
    f("github_pat_", "github_fine_grained_token", AlnumUnderscore, 50, 255),
    f("sk-svcacct-", "openai_api_key", UrlSafe, 20, 400),
    f("sk-admin-", "openai_api_key", UrlSafe, 20, 400),
    f("sk-proj-", "openai_api_key", UrlSafe, 20, 400),
    f("sk-ant-", "anthropic_api_key", UrlSafe, 26, 300),
    f("sk_live_", "stripe_secret_key", Alnum, 16, 247),
    f("sk_test_", "stripe_secret_key", Alnum, 16, 247),
    f("rk_live_", "stripe_restricted_key", Alnum, 16, 247),
    f("rk_test_", "stripe_restricted_key", Alnum, 16, 247),
    f("pypi-AgE", "pypi_token", UrlSafe, 50, 400),
    f("dop_v1_", "digitalocean_token", Hex, 64, 64),
    f("lin_api_", "linear_api_key", Alnum, 40, 40),
    f("GOCSPX-", "google_oauth_client_secret", UrlSafe, 28, 28),
    f("glpat-", "gitlab_token", UrlSafe, 20, 64),
    f("shpat_", "shopify_token", Hex, 32, 32),
    f("shpss_", "shopify_token", Hex, 32, 32),
    f("whsec_", "stripe_webhook_secret", Alnum, 24, 255),
    f("xoxb-", "slack_token", UrlSafe, 10, 250),
    f("xoxp-", "slack_token", UrlSafe, 10, 250),
    f("xoxa-", "slack_token", UrlSafe, 10, 250),
    f("xapp-", "slack_token", UrlSafe, 10, 250),
    f("pplx-", "perplexity_api_key", Alnum, 48, 48),
    f("ghp_", "github_token", Alnum, 36, 255),
    f("gho_", "github_token", Alnum, 36, 255),
    f("ghu_", "github_token", Alnum, 36, 255),
    f("ghs_", "github_token", Alnum, 36, 255),
    f("ghr_", "github_token", Alnum, 36, 255),
    f("npm_", "npm_token", Alnum, 36, 36),
    f("gsk_", "groq_api_key", Alnum, 52, 52),
    f("xai-", "xai_api_key", Alnum, 80, 80),
    f("hvs.", "vault_token", UrlSafe, 24, 255),
    f("AKIA", "aws_access_key_id", UpperDigit, 16, 16),
    f("ASIA", "aws_access_key_id", UpperDigit, 16, 16),
    f("AIza", "google_api_key", UrlSafe, 35, 35),
    f("hf_", "huggingface_token", Alnum, 30, 40),
    f("r8_", "replicate_token", Alnum, 37, 37),
    f("sk-", "openai_api_key", UrlSafe, 20, 400),
];

/// The prefixes in `FORMATS`, for the prefilter (which gates on these exactly).
#[rustfmt::skip]
const PREFIXES: &[&str] = &[
    "github_pat_", "sk-svcacct-", "sk-admin-", "sk-proj-", "sk-ant-", "sk_live_", "sk_test_",
    "rk_live_", "rk_test_", "pypi-AgE", "dop_v1_", "lin_api_", "GOCSPX-", "glpat-", "shpat_",
    "shpss_", "whsec_", "xoxb-", "xoxp-", "xoxa-", "xapp-", "pplx-", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "npm_", "gsk_", "xai-", "hvs.", "AKIA", "ASIA", "AIza", "hf_", "r8_", "sk-",
];

// The prefixes as a regex alternation (kept in step with `PREFIXES` by a test).
macro_rules! prefix_re {
    () => {
        r"(?:github_pat_|sk-svcacct-|sk-admin-|sk-proj-|sk-ant-|[sr]k_(?:live|test)_|pypi-AgE|dop_v1_|lin_api_|GOCSPX-|glpat-|shp(?:at|ss)_|whsec_|xox[bpa]-|xapp-|pplx-|gh[pousr]_|npm_|gsk_|xai-|hvs\.|AKIA|ASIA|AIza|hf_|r8_|sk-)"
    };
}

/// A cut-short token's body needs this many bytes (hex: more, it carries less).
const TRUNCATED_MIN: usize = 12;
const TRUNCATED_MIN_HEX: usize = 16;

/// A wrapped token's second line must have at least this many bytes of the token.
const CONTINUATION_MIN: usize = 4;

pub(crate) const RULES: &[Rule] = &[
    // Wrapped: the token runs to the end of its line and goes on at the start of the
    // next. The whole of it goes, line break included.
    Rule::secret(
        "wrapped_token",
        PREFIXED + 1,
        concat!(r"\b(?P<s1>", prefix_re!(), r"[A-Za-z0-9_\-]{1,400}\r?\n[A-Za-z0-9_\-]{4,400})"),
    )
    .exact(PREFIXES)
    .check(wrapped),
    // Cut short (or full but refused by the vendor rule): long and random enough to
    // matter. Below the vendor rules, so they label what they take.
    Rule::secret(
        "truncated_token",
        PREFIXED - 2,
        concat!(r"\b(?P<s1>", prefix_re!(), r"[A-Za-z0-9_\-]{8,400})"),
    )
    .exact(PREFIXES)
    .check(truncated),
];

fn format_of(token: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| token.starts_with(f.prefix))
}

/// Bytes at the start of `s` in `format`'s alphabet.
fn run(format: &Format, s: &str) -> usize {
    s.bytes().take_while(|&b| format.alphabet.has(b)).count()
}

/// Whether the byte at `i` would make the token part of a longer word.
fn continues(s: &str, i: usize) -> bool {
    s.as_bytes().get(i).is_some_and(u8::is_ascii_alphanumeric)
}

/// Prefixes common in ordinary identifiers too (`sk-learn-...`, `hf_hub_download`):
/// their bodies must also not read like words.
const LOOSE: &[&str] = &["sk-", "hf_", "r8_"];

/// Random enough to be a secret: digits among letters, and mixed case unless the
/// alphabet has one case only.
fn random_enough(format: &Format, body: &str) -> bool {
    if !has_digit(body) || !has_letter(body) {
        return false;
    }
    if LOOSE.contains(&format.prefix) {
        return has_mixed_case(body) && !reads_like_identifier(body);
    }
    has_mixed_case(body) || matches!(format.alphabet, Hex | UpperDigit)
}

/// A token with a known prefix that the vendor rule did not take: cut short, or
/// full length but turned down by the vendor rule's own check (which guards prefixes
/// shared with ordinary words, and is stricter than a specific prefix needs).
fn truncated(_: &Captures<'_>, token: &str) -> Verdict {
    let Some(format) = format_of(token) else {
        return Verdict::Reject;
    };
    // An AWS key id names a key and is no secret alone; cut short it is left be.
    if format.alphabet == UpperDigit {
        return Verdict::Reject;
    }
    let rest = &token[format.prefix.len()..];
    let n = run(format, rest);
    let body = &rest[..n];
    let floor = if format.alphabet == Hex { TRUNCATED_MIN_HEX } else { TRUNCATED_MIN };
    let full_but_loose = n >= format.min && LOOSE.contains(&format.prefix);
    if n < floor || n > format.max || full_but_loose || continues(rest, n) || !random_enough(format, body) {
        return Verdict::Reject;
    }
    Verdict::As(format.label, format.prefix.len() + n)
}

fn wrapped(_: &Captures<'_>, token: &str) -> Verdict {
    let Some(format) = format_of(token) else {
        return Verdict::Reject;
    };
    let Some((first, second)) = token.split_once('\n') else {
        return Verdict::Reject;
    };
    let first = first.strip_suffix('\r').unwrap_or(first);
    let body1 = &first[format.prefix.len()..];
    // The first line must end inside the token, not after some other text.
    if run(format, body1) != body1.len() {
        return Verdict::Reject;
    }
    let n2 = run(format, second);
    if n2 < CONTINUATION_MIN || continues(second, n2) {
        return Verdict::Reject;
    }
    let (b1, body2) = (body1.len(), &second[..n2]);
    let total = b1 + n2;
    if total > format.max {
        return Verdict::Reject;
    }
    // Complete only once joined; or complete already and followed by a line that
    // could only be more of it (a long token wrapped at a fixed width).
    let completes = b1 < format.min && total >= format.min;
    let goes_on = b1 >= format.min && n2 >= 8 && random_enough(format, body2);
    let joined = format!("{body1}{body2}");
    if (completes || goes_on) && random_enough(format, &joined) {
        Verdict::As(format.label, token.len() - second.len() + n2)
    } else {
        Verdict::Reject
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    #[test]
    fn the_prefix_regex_and_list_agree_with_the_table() {
        let re = Regex::new(concat!("^", prefix_re!(), "$")).unwrap();
        assert_eq!(PREFIXES.len(), FORMATS.len());
        for (p, f) in PREFIXES.iter().zip(FORMATS) {
            assert_eq!(*p, f.prefix);
            assert!(re.is_match(p), "{p}");
        }
        // Longer prefixes come first, so the first match is the most specific.
        for (i, a) in PREFIXES.iter().enumerate() {
            for b in &PREFIXES[i + 1..] {
                assert!(!b.starts_with(a), "{a} before {b}");
            }
        }
    }
}
