//! Secret scrubbing: replace credentials (and, opt-in, personal data) in text with
//! `[REDACTED:<label>]` before it is stored or shown to a model.
//!
//! Pipeline, per text: rules match on a folded view of the text (`fold.rs`: zero-width
//! characters removed, fullwidth and other compatibility forms folded to ASCII,
//! percent-encoded letters decoded), and each finding redacts the matching span of
//! the original. An Aho-Corasick keyword scan picks the rules that can match
//! (`prefilter.rs`); text with no candidate keyword is returned as is, borrowed.
//! Each candidate rule runs its regex and check (`detect.rs`), over the whole text
//! or, for long texts, only the lines around its keywords (`window.rs`);
//! overlapping findings are resolved by priority; the survivors are replaced
//! (`redact.rs`).
//!
//! Rules: vendor formats and key blocks (`patterns.rs`), the same formats cut short
//! or wrapped onto a second line (`known.rs`), values assigned to password- and
//! secret-like names (`assignment.rs`, `names.rs`), credentials in commands, SQL,
//! XML, cookies and OTP URIs (`commands.rs`), passwords told in sentences
//! (`prose.rs`), random-looking tokens next to a key-like name (`entropy.rs`), and
//! personal data (`pii.rs`). [`Scrubber::labels`] lists the labels.
//!
//! Labels (scope, session id, kind) are stored and shown as given, so they are not
//! redacted: [`label_secret`] tells the validation to refuse one holding a secret.
//!
//! Metadata is JSON text: [`Scrubber::scrub_json_str`] rewrites only the string
//! literals that change (`json_text.rs`), so numbers and key order stay as given.
//!
//! URL credentials keep the scheme, user and host and replace only the password:
//! `postgres://app:[REDACTED:url_credentials]@db:5432/x`. Key blocks are replaced
//! whole, header to footer.
//!
//! Deliberately not redacted: AWS's documentation keys (`...EXAMPLE`), references
//! (`$DB_PASSWORD`, `${X}`, `{{ x }}`), placeholders (`user:pass@host`), values that
//! are expressions in code (`password = get_password()`), passphrases with spaces,
//! bare words in INI files (`password = letmein`), and generic tokens without a
//! digit.

mod assignment;
mod commands;
mod detect;
mod entropy;
mod fold;
mod json;
mod json_text;
mod known;
mod names;
mod patterns;
mod pii;
mod prefilter;
mod prose;
mod redact;
mod rule;
mod validate;
mod window;

use detect::{detector, Detector};
use prefilter::Mask;
use std::borrow::Cow;
use std::fmt;

/// What to scrub.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScrubOptions {
    /// Credentials: API keys, tokens, private keys, passwords. Default on.
    pub secrets: bool,
    /// Personal data: e-mail addresses, phone numbers, payment cards, IBANs, US SSNs.
    /// Default off: these are often the very facts a memory should keep.
    pub pii: bool,
}

impl Default for ScrubOptions {
    fn default() -> Self {
        ScrubOptions { secrets: true, pii: false }
    }
}

/// One redacted span: `text[start..end]` (byte offsets, on char boundaries) is a
/// secret of kind `label`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Finding {
    pub label: &'static str,
    pub start: usize,
    pub end: usize,
}

/// Finds and redacts secrets. `Copy`, `Send` and `Sync`: the compiled rules are
/// built once per process (on the first `new`, a few milliseconds) and shared.
///
/// Invariants:
/// - `scrub` is idempotent: `scrub(scrub(x)) == scrub(x)`;
/// - a placeholder `[REDACTED:label]` never matches a rule, whatever surrounds it;
/// - `scrub(x)` is `Cow::Borrowed(x)` exactly when `findings(x)` is empty.
#[derive(Clone, Copy)]
pub struct Scrubber {
    detector: &'static Detector,
    enabled: Mask,
    options: ScrubOptions,
}

/// Redacting one secret can expose another (a value that was hidden behind a
/// rejected longer match). Scrubbing repeats until nothing is found, which is what
/// makes it idempotent; each pass removes text, so this bound is never reached in
/// practice.
const MAX_PASSES: usize = 8;

impl Scrubber {
    pub fn new(options: ScrubOptions) -> Scrubber {
        let detector = detector();
        Scrubber { detector, enabled: detector.mask_for(options.secrets, options.pii), options }
    }

    pub fn options(&self) -> ScrubOptions {
        self.options
    }

    /// `text` with every finding replaced by `[REDACTED:<label>]`; borrowed when
    /// nothing was found.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let found = self.findings(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = redact::apply(text, &found);
        for _ in 1..MAX_PASSES {
            let more = self.findings(&out);
            if more.is_empty() {
                break;
            }
            out = redact::apply(&out, &more);
        }
        Cow::Owned(out)
    }

    /// The spans `scrub` replaces in its first pass, sorted by start, not overlapping.
    pub fn findings(&self, text: &str) -> Vec<Finding> {
        if self.enabled == 0 {
            return Vec::new();
        }
        self.detector.findings(text, self.enabled)
    }

    /// Scrubs every string in `value`: values, array items, and object keys. A string
    /// under a password- or secret-like key (`{"api_key": "..."}`) is judged with
    /// the key as context, as `api_key="..."` would be in text. Keys keep their
    /// order; numbers are whatever `value` already holds (use [`Self::scrub_json_str`]
    /// on the text to keep every number exactly as written).
    pub fn scrub_json(&self, value: &mut serde_json::Value) {
        json::scrub_value(self, value);
    }

    /// `scrub_json` on JSON text, in place: only the string literals that need
    /// redacting are rewritten, every other byte (numbers, key order, spacing) is
    /// kept. Borrowed when nothing changed. Text that is not JSON is scrubbed as
    /// plain text.
    pub fn scrub_json_str<'a>(&self, json: &'a str) -> Cow<'a, str> {
        json_text::scrub_json_text(self, json)
    }

    /// The labels this scrubber can emit, e.g. `github_token`, `private_key`.
    pub fn labels(&self) -> Vec<&'static str> {
        self.detector.labels(self.enabled)
    }
}

/// The label of the rule that finds a secret in `label` (a scope, session id, kind
/// or metadata key), or `None`. Labels are stored, indexed and shown as given, never
/// redacted, so a label holding a secret must be refused instead.
pub fn label_secret(label: &str) -> Option<&'static str> {
    Scrubber::default().findings(label).first().map(|f| f.label)
}

impl Default for Scrubber {
    fn default() -> Self {
        Scrubber::new(ScrubOptions::default())
    }
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scrubber").field("options", &self.options).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Copy>() {}

    #[test]
    fn scrubber_is_shareable() {
        assert_send_sync::<Scrubber>();
    }

    #[test]
    fn clean_text_is_borrowed() {
        let s = Scrubber::default();
        let text = "We talked about the trip to Asia and the keys to the house.";
        assert!(matches!(s.scrub(text), Cow::Borrowed(_)));
    }

    #[test]
    fn a_token_is_replaced_in_place() {
        let s = Scrubber::default();
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let text = format!("use {token} here");
        assert_eq!(s.scrub(&text), "use [REDACTED:github_token] here");
    }

    #[test]
    fn placeholders_never_match() {
        let s = Scrubber::new(ScrubOptions { secrets: true, pii: true });
        for label in s.labels() {
            let text = format!("token: [REDACTED:{label}] password=[REDACTED:{label}]");
            assert!(s.findings(&text).is_empty(), "{label}");
        }
    }

    #[test]
    fn disabled_scrubber_finds_nothing() {
        let s = Scrubber::new(ScrubOptions { secrets: false, pii: false });
        assert!(s.findings("password=hunter2").is_empty());
    }
}
