//! The generic-token heuristic: a long, random-looking string next to a key-like
//! name (`api key: 8f3b...`, `"auth": "Zx9..."`) is a credential even when its
//! format is unknown.
//!
//! "Random-looking" combines three cheap tests, because each alone fails on real
//! code: Shannon entropy (identifiers such as `getAccessTokenFromHeader` have high
//! entropy too), a digit-and-letter mix (most generated tokens have both; prose and
//! identifiers mostly do not), and a word test that splits the string at `_ - . / + =`
//! and camelCase humps and rejects it when every piece reads like a word or a word
//! with a version number (`sha256`, `v2`, `2023`).

use super::rule::{Rule, Verdict, GENERIC};
use regex::Captures;

/// Shannon entropy of the byte distribution of `s`, in bits per byte (0 for "").
pub(crate) fn shannon(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// True when every piece of `s` (split at `_ - . / + = :`) reads like a word, a
/// number, or a word with a number suffix: `read_timeout_ms`, `getAccessToken2`,
/// `v1.2.3-beta`, `2023-05-08`. Random tokens almost always have a piece that
/// interleaves letters and digits, or mixes case in a way no identifier does.
pub(crate) fn reads_like_identifier(s: &str) -> bool {
    let pieces = || s.split(['_', '-', '.', '/', '+', '=', ':']);
    if pieces().all(piece_is_wordish) {
        return true;
    }
    // `D3D11_MESSAGE_ID_DESTROY_SHADER`, `PKERB_S4U2PROXY_CRED`: snake-case words with
    // a versioned name somewhere. Random tokens rarely split into three pieces.
    if !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return false;
    }
    let (total, words) = s.split('_').fold((0, 0), |(t, w), p| {
        let word = p.len() >= 3 && p.bytes().all(|b| b.is_ascii_alphabetic());
        (t + 1, w + usize::from(word))
    });
    total >= 3 && words * 2 > total
}

fn piece_is_wordish(p: &str) -> bool {
    let b = p.as_bytes();
    if b.len() <= 3 || b.iter().all(u8::is_ascii_digit) {
        return true;
    }
    // digits then a short unit, or a timestamp-like "08T12": "2nd", "10ms", "1080p"
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let rest = &b[digits..];
    let unit = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if digits > 0
        && unit > 0
        && (unit <= 3 && rest[unit..].is_empty()
            || unit == 1 && b.len() <= 6 && rest[unit..].iter().all(u8::is_ascii_digit))
    {
        return true;
    }
    let lower = b.iter().any(u8::is_ascii_lowercase);
    let upper = b.iter().any(u8::is_ascii_uppercase);
    if lower && upper {
        return humps(b).all(hump_is_word);
    }
    if upper {
        // ALL CAPS: letters then digits ("SHA256", "HTTP2"); digits inside ("JBSWY3DP")
        // are what random base32 looks like.
        let letters = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
        return b[letters..].iter().all(u8::is_ascii_digit);
    }
    // Lowercase: a word with a number in it ("sqlite3changeset", "utf8"), at most
    // three letter/digit runs with a real word among them. Random hex or base36
    // ("4a2d138d") alternates far more.
    let runs = 1 + b.windows(2).filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit()).count();
    let longest_letters = b.split(u8::is_ascii_digit).map(<[u8]>::len).max().unwrap_or(0);
    runs <= 3 && longest_letters >= 4 || runs <= 2 && b[0].is_ascii_alphabetic()
}

/// Splits camelCase before an uppercase letter that follows a lowercase letter or a
/// digit: `getEC2InstanceV2` -> `get`, `EC2`, `Instance`, `V2`.
fn humps(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut i = 1;
    std::iter::from_fn(move || {
        while i < b.len() {
            let cut =
                b[i].is_ascii_uppercase() && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit());
            i += 1;
            if cut {
                let hump = &b[start..i - 1];
                start = i - 1;
                return Some(hump);
            }
        }
        (start < b.len()).then(|| {
            let hump = &b[start..];
            start = b.len();
            hump
        })
    })
}

/// A word (`get`, `Access`, `base64`), a short acronym with an optional version
/// (`EC2`, `API`, `V2`), or an acronym joined to a word (`HTTPServer`, `OAuth2`).
/// Two-letter words must be common ones (`Id`, `On`, `To`): random mixed case is
/// full of short humps (`Tf`, `Li`, `aB3d`, `LSKBp`) that this rejects.
fn hump_is_word(h: &[u8]) -> bool {
    let upper = h.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let lower = h[upper..].iter().take_while(|c| c.is_ascii_lowercase()).count();
    if !h[upper + lower..].iter().all(u8::is_ascii_digit) {
        return false;
    }
    match (upper, lower) {
        (_, 0) => upper <= 6,
        (0 | 1, _) if upper + lower == 2 => {
            let w = [h[0].to_ascii_lowercase(), h[1]];
            COMMON_TWO_LETTER.iter().any(|c| c.as_bytes() == w)
        }
        (0 | 1, _) => true,
        (_, l) => l >= 2,
    }
}

const COMMON_TWO_LETTER: &[&str] = &[
    "id", "on", "to", "of", "by", "is", "at", "in", "ok", "up", "go", "do", "no", "or", "as", "if", "my",
    "we", "me", "be", "an", "it", "us", "ex", "db", "fs", "io", "os", "ui", "js",
];

/// For the generic rule: at least 20 bytes of ASCII with letters and digits, not
/// word-like, and entropy of at least 3.0 bits (hex) or 3.5 bits (anything else).
/// Random hex of 20 bytes averages about 3.5 bits and random base62 about 4.0.
pub(crate) fn looks_random(token: &str) -> bool {
    if !(20..=4096).contains(&token.len()) || !token.is_ascii() {
        return false;
    }
    // About 3% of random base62 tokens of 20 characters have no digit; they are
    // missed, because long mixed-case words without one are everywhere in code
    // (`PyCFunctionFastWithKeywords`). The cheap tests first.
    if !super::validate::has_letter(token) || !super::validate::has_digit(token) {
        return false;
    }
    if reads_like_identifier(token) {
        return false;
    }
    let hex = token.bytes().all(|b| b.is_ascii_hexdigit());
    if hex && is_counting(token) {
        return false;
    }
    shannon(token) >= if hex { 3.0 } else { 3.5 }
}

/// Test-vector keys count bytes up: `000102030405...` or `ff0102...`.
fn is_counting(hex: &str) -> bool {
    let bytes: Vec<u8> = hex
        .as_bytes()
        .chunks_exact(2)
        .filter_map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect();
    let steps = bytes.windows(2).filter(|w| w[1] == w[0].wrapping_add(1)).count();
    bytes.len() >= 8 && steps + 2 >= bytes.len()
}

/// For values assigned to a secret-like name: shorter tokens pass (8 bytes), but
/// they still need a digit next to letters and must not read like words.
pub(crate) fn looks_like_secret(value: &str) -> bool {
    if !(8..=4096).contains(&value.len()) || value.bytes().any(|b| b.is_ascii_whitespace()) {
        return false;
    }
    // Generated secrets almost always have a digit; values without one are words,
    // colours (`#ansigreen`), or labels (`serverlessrepo:applicationId`).
    if !super::validate::has_letter(value) || !super::validate::has_digit(value) {
        return false;
    }
    !reads_like_identifier(value) && shannon(value) >= 2.5
}

fn check_generic(caps: &Captures<'_>, token: &str) -> Verdict {
    let name = caps.name("name").map_or("", |m| m.as_str());
    if looks_random(token) && super::names::may_name_secret(name) {
        Verdict::Accept
    } else {
        Verdict::Reject
    }
}

/// The generic token's class, `(?i)[A-Za-z0-9+/=_\-]`: case-insensitively `s`
/// and `k` also match `ſ` and the Kelvin sign.
fn generic_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '\u{17F}' | '\u{212A}')
}

/// The generic rule. The name may be part of a longer identifier (`STRIPE_KEY`,
/// `apiKey`, `auth_token_2`), which is captured so `next_token` or `public_key`
/// can be ruled out; the glue covers `=`, `:`, `=>`, `is`, and plain spaces.
pub(crate) const RULES: &[Rule] = &[Rule::secret(
    "generic_secret",
    GENERIC,
    r#"(?i)(?P<name>[a-z0-9_.\-]{0,40}?(?:key|token|secret|passw(?:or)?d|pwd|auth|credentials?|creds|api|access|bearer)(?:[_.\-]?[a-z0-9]+){0,3})["'\]]{0,2}(?:[ \t]*(?:=>|:=|[:=])[ \t]*|[ \t]+(?:is|was)[ \t]*:?[ \t]*|[ \t]+)["'`]?(?P<s1>[A-Za-z0-9+/=_\-]{20})"#,
)
// Up to 4,096 characters of the token.
.tail(generic_token_char, 4096)
.keywords(&[
    "key",
    "token",
    "secret",
    "passw",
    "pwd",
    "auth",
    "cred",
    "api",
    "access",
    "bearer",
])
.check(check_generic)];

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: deterministic tokens without a dependency.
    fn tokens(alphabet: &[u8], len: usize, count: usize) -> Vec<String> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..count)
            .map(|_| {
                (0..len)
                    .map(|_| {
                        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                        let mut z = state;
                        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                        z ^= z >> 31;
                        char::from(alphabet[(z % alphabet.len() as u64) as usize])
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_tail_class_is_the_patterns() {
        let class = regex::Regex::new(r"(?i)^[A-Za-z0-9+/=_\-]$").unwrap();
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            assert_eq!(generic_token_char(c), class.is_match(c.encode_utf8(&mut [0; 4])), "{c:?}");
        }
    }

    #[test]
    fn entropy_of_simple_strings() {
        assert_eq!(shannon(""), 0.0);
        assert_eq!(shannon("aaaa"), 0.0);
        assert!((shannon("abcd") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn random_tokens_pass_at_least_97_percent() {
        let alphabets: [&[u8]; 3] = [
            b"0123456789abcdef",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        ];
        for alphabet in alphabets {
            for len in [20, 24, 32, 40, 64] {
                let sample = tokens(alphabet, len, 500);
                let passed = sample.iter().filter(|t| looks_random(t)).count();
                let failed: Vec<_> = sample.iter().filter(|t| !looks_random(t)).take(3).collect();
                // Tokens without a digit are given up on (3% of base62 at length 20).
                let floor = if len <= 24 { 460 } else { 485 };
                assert!(passed >= floor, "{passed}/500 of length {len}: {failed:?}");
            }
        }
    }

    #[test]
    fn identifiers_and_versions_do_not_pass() {
        for s in [
            "getAccessTokenFromHeader2",
            "getHTTPResponseForUser2",
            "AmazonSSMManagedEC2InstanceDefaultPolicy",
            "PKCS12PrivateKeyTypes_v2",
            "OAuth2AuthorizationCodeGrant",
            "terminateBlueInstancesOnDeploymentSuccess",
            "ApiGatewayV2WebSocketApi",
            "D3D11_MESSAGE_ID_DESTROY_COMPUTESHADER",
            "sqlite3changeset_next",
            "PyCFunctionFastWithKeywords",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "read_timeout_ms_default_v2",
            "AUTHENTICATION_BACKENDS_2",
            "src/components/AuthTokenProvider2",
            "v1.2.3-beta.4-build.20230508",
            "2023-05-08T12:30:00",
            "abcdefghijklmnopqrstuvwxyz",
            "tokenizer_config_for_llama3_8b",
        ] {
            assert!(!looks_random(s), "{s}");
        }
    }

    #[test]
    fn base32_and_uuid_like_tokens_pass() {
        let base32 = tokens(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 24, 200);
        assert!(base32.iter().filter(|t| looks_random(t)).count() >= 195);
        assert!(looks_random("9f4d9f69-275a-41fe-b58e-2b837bd9ba48"));
    }

    #[test]
    fn secret_values_need_a_digit() {
        assert!(looks_like_secret("s3cr3t-k3y-99"));
        assert!(looks_like_secret("django-insecure-k3$x"));
        assert!(!looks_like_secret("#ansigreen"));
        assert!(!looks_like_secret("YOUR_API_KEY_HERE"));
        assert!(!looks_like_secret("short1"));
        assert!(!looks_like_secret("token_v2_name"));
    }
}
