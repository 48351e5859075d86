//! What a detection rule is. Rules are static data; `engine.rs` compiles them once.

use regex::Captures;

/// Whether a rule finds credentials (on by default) or personal data (opt-in).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Class {
    Secret,
    Pii,
}

/// What a rule's check decided about one regex match.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Verdict {
    Reject,
    Accept,
    /// Accept only the first `n` bytes of the secret, e.g. without the period that
    /// ends the sentence. `n` is at least 1 and at most the secret's length.
    Trim(usize),
    /// Accept the first `n` bytes under another rule's label: a rule marked
    /// `relabel` reports the format it found (`github_token` for a cut-short one).
    As(&'static str, usize),
}

/// Looks at the whole match (`caps`) and the secret part of it (`secret`).
pub(crate) type Check = fn(caps: &Captures<'_>, secret: &str) -> Verdict;

/// A secret that ends the pattern with the shortest run of `class` it needs,
/// and goes on here over `class` up to `max_chars` characters in all: what a
/// greedy `{m,max_chars}` at the pattern's end would take. In the pattern, such
/// a bound copies the class's automaton `max_chars` times, in the regex and in
/// every thread's search cache; and every attempt of the rule (one per keyword,
/// in a text that repeats it) would scan up to `max_chars` with the regex
/// engines, where this takes a loop over characters.
#[derive(Clone, Copy)]
pub(crate) struct Tail {
    /// The pattern's class, character for character (each rule tests its own
    /// against the regex).
    pub class: fn(char) -> bool,
    pub max_chars: usize,
}

impl Tail {
    /// Where the secret `text[start..end]` ends once extended.
    pub(crate) fn extend(&self, text: &str, start: usize, end: usize) -> usize {
        let room = self.max_chars.saturating_sub(text[start..end].chars().count());
        let more = text[end..].chars().take(room).take_while(|&c| (self.class)(c));
        end + more.map(char::len_utf8).sum::<usize>()
    }
}

/// One format: a regex, the literals that gate it, and an optional check.
///
/// Invariants, relied on by the prefilter and the redactor:
/// - every match of `pattern` that `check` accepts contains one of `keywords` (ASCII
///   case-insensitively) or one of `exact` (byte for byte), so skipping texts without
///   them loses nothing; a rule with both lists empty runs on every text;
/// - the secret is the first capture group whose name starts with `s` that took part
///   in the match (`s1`, `s2`, ...), or the whole match when the pattern has none;
/// - `label` is lowercase snake case, so a placeholder `[REDACTED:label]` is recognisable.
pub(crate) struct Rule {
    pub label: &'static str,
    pub class: Class,
    /// When two findings overlap, the higher priority wins (then the longer one).
    pub priority: u8,
    pub keywords: &'static [&'static str],
    pub exact: &'static [&'static str],
    pub pattern: &'static str,
    pub check: Option<Check>,
    /// The secret ends the pattern and goes on past the match (`Tail`).
    pub tail: Option<Tail>,
    /// A match may span many lines (key blocks), so the rule always sees the whole
    /// text. Other rules may be run only on the lines around their keywords.
    pub multiline: bool,
    /// The rule's findings carry the labels its check gives (`Verdict::As`), which
    /// are other rules' labels; its own label is only its name and never emitted.
    pub relabel: bool,
}

// Priorities, from most to least trusted. A structural block beats a token inside it,
// a prefixed token beats the assignment it appears in, and any secret beats personal data.
pub(crate) const BLOCK: u8 = 90;
pub(crate) const PREFIXED: u8 = 70;
pub(crate) const CONTEXTUAL: u8 = 50;
pub(crate) const ASSIGNMENT: u8 = 40;
pub(crate) const GENERIC: u8 = 30;
pub(crate) const PERSONAL: u8 = 10;

impl Rule {
    /// A secret rule with no keywords yet; chain the builders below.
    pub const fn secret(label: &'static str, priority: u8, pattern: &'static str) -> Rule {
        Rule {
            label,
            class: Class::Secret,
            priority,
            keywords: &[],
            exact: &[],
            pattern,
            check: None,
            tail: None,
            multiline: false,
            relabel: false,
        }
    }

    /// A personal-data rule (only used with `ScrubOptions::pii`).
    pub const fn pii(label: &'static str, priority: u8, pattern: &'static str) -> Rule {
        Rule { class: Class::Pii, ..Rule::secret(label, priority, pattern) }
    }

    /// Gate on ASCII case-insensitive literals.
    pub const fn keywords(mut self, keywords: &'static [&'static str]) -> Rule {
        self.keywords = keywords;
        self
    }

    /// Gate on case-sensitive literals (token prefixes such as `AKIA` or `ghp_`).
    pub const fn exact(mut self, exact: &'static [&'static str]) -> Rule {
        self.exact = exact;
        self
    }

    pub const fn check(mut self, check: Check) -> Rule {
        self.check = Some(check);
        self
    }

    pub const fn tail(mut self, class: fn(char) -> bool, max_chars: usize) -> Rule {
        self.tail = Some(Tail { class, max_chars });
        self
    }

    pub const fn multiline(mut self) -> Rule {
        self.multiline = true;
        self
    }

    pub const fn relabel(mut self) -> Rule {
        self.relabel = true;
        self
    }
}
