//! Prompt-injection flags: memory content goes back to a model verbatim, so a
//! stored text can carry instructions, fake turn markers, tool-call lookalikes,
//! exfiltration links or hidden characters. [`detect`] says which of these a text
//! shows; it never changes the text. [`strip_invisible`] removes the hidden
//! characters before untrusted text is rendered.
//!
//! Per text: invisible characters are found in one pass over non-ASCII text. An
//! Aho-Corasick scan for trigger words then picks the risks worth a regex;
//! ordinary chat usually stops there. The regexes run on a folded copy: NFKC,
//! lowercase, curly quotes made straight, format characters dropped, and
//! Cyrillic, Greek and small-capital look-alikes mapped to Latin when the text is
//! mostly Latin. Text spelled out a letter at a time ("i g n o r e") is also
//! matched with its separators removed.
//!
//! Deliberately not flagged: plain URLs and markdown links without data-like
//! query parameters, mentions such as "I ignored the previous advice", joiners
//! inside emoji or non-Latin words, and a byte-order mark at the very start.

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// A kind of prompt-injection risk. Ordered as declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Risk {
    /// "Ignore all previous instructions", "you are now DAN", "new instructions:".
    InstructionOverride,
    /// Fake role or system markers: `<system>`, `<|im_start|>`, `[INST]`, `Human:`.
    RoleTag,
    /// Tool-call lookalikes: `<tool_call>`, `{"tool": ...}`, ```` ```tool_code ````.
    ToolCall,
    /// Data leaving through links, images or `curl`: `![x](https://h/?d=...)`.
    Exfiltration,
    /// Tag characters, zero-width characters, bidi overrides.
    InvisibleUnicode,
}

impl Risk {
    /// Every risk, in order.
    pub const ALL: [Risk; 5] = [
        Risk::InstructionOverride,
        Risk::RoleTag,
        Risk::ToolCall,
        Risk::Exfiltration,
        Risk::InvisibleUnicode,
    ];

    /// The stable `snake_case` name, e.g. `"instruction_override"`.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Risk::InstructionOverride => "instruction_override",
            Risk::RoleTag => "role_tag",
            Risk::ToolCall => "tool_call",
            Risk::Exfiltration => "exfiltration",
            Risk::InvisibleUnicode => "invisible_unicode",
        }
    }

    fn bit(self) -> Flags {
        1 << self as u8
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One bit per [`Risk`].
type Flags = u8;

/// The risks `text` shows, sorted and without duplicates; empty for ordinary text.
#[must_use]
pub fn detect(text: &str) -> Vec<Risk> {
    risks(flags(text))
}

/// The version of these rules. A stamp made under other rules is not trusted:
/// the text is checked again. Raise it whenever what `detect` finds changes; a
/// test holds a digest of the trigger and pattern tables to this number.
const RULES: i64 = 1;

/// `detect`'s finding for `text`, stamped with the rules' version: what a store
/// keeps beside the text so that reading it back need not check it again.
#[must_use]
pub fn stamp(text: &str) -> i64 {
    (RULES << 8) | i64::from(flags(text))
}

/// The risks a stamp records; `None` when it was made under other rules.
#[must_use]
pub fn from_stamp(stamp: i64) -> Option<Vec<Risk>> {
    // Flags fit in the low byte (`Risk::ALL` has five), so the cast is exact.
    (stamp >> 8 == RULES).then(|| risks((stamp & 0xff) as Flags))
}

fn flags(text: &str) -> Flags {
    let tables = tables();
    let mut found = 0;
    if invisible(text).next().is_some() {
        found |= Risk::InvisibleUnicode.bit();
    }
    // ASCII text needs no normalising, so the prefilter reads it as is and most
    // texts are done without an allocation.
    let (folded, candidates) = if text.is_ascii() {
        let candidates = tables.prefilter.candidates(text);
        if candidates == 0 && !spells_out_letters(text) {
            return found;
        }
        (text.to_ascii_lowercase(), candidates)
    } else {
        let folded = fold(text);
        let candidates = tables.prefilter.candidates(&folded);
        (folded, candidates)
    };
    for (risk, regex) in &tables.regexes {
        if candidates & risk.bit() == 0 {
            continue;
        }
        let regex = regex.get();
        let hit = match risk {
            Risk::InstructionOverride => regex.find_iter(&folded).any(|m| !negated(&folded[..m.start()])),
            _ => regex.is_match(&folded),
        };
        if hit {
            found |= risk.bit();
        }
    }
    if candidates & Risk::Exfiltration.bit() != 0 && leaky_url(tables, &folded) {
        found |= Risk::Exfiltration.bit();
    }
    if found & Risk::InstructionOverride.bit() == 0 && spells_out_letters(&folded) {
        let compact: String = folded.chars().filter(|c| c.is_alphanumeric()).collect();
        if tables.compact.get().is_match(&compact) {
            found |= Risk::InstructionOverride.bit();
        }
    }
    found
}

/// `text` without the invisible characters [`detect`] flags; borrowed when there
/// are none. A leading byte-order mark goes too; a joiner between two visible
/// non-ASCII characters stays, since emoji and Indic or Persian words need it.
#[must_use]
pub fn strip_invisible(text: &str) -> Cow<'_, str> {
    let leading_bom = text.starts_with('\u{FEFF}');
    if !leading_bom && invisible(text).next().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    // `invisible` never yields a leading BOM, so its offsets all lie past it.
    let mut kept = if leading_bom { '\u{FEFF}'.len_utf8() } else { 0 };
    for (i, c) in invisible(text) {
        out.push_str(&text[kept..i]);
        kept = i + c.len_utf8();
    }
    out.push_str(&text[kept..]);
    Cow::Owned(out)
}

/// Whether the words before an override phrase negate it: "don't forget the
/// previous instructions" is a reminder.
fn negated(before: &str) -> bool {
    let last = before.split_whitespace().next_back().unwrap_or("");
    matches!(last, "not" | "never" | "dont" | "cannot") || last.ends_with("n't")
}

fn risks(found: Flags) -> Vec<Risk> {
    Risk::ALL.into_iter().filter(|r| found & r.bit() != 0).collect()
}

// ---------------------------------------------------------------------------
// Invisible characters and folding
// ---------------------------------------------------------------------------

/// The characters flagged and stripped: tag characters (which spell ASCII
/// invisibly), zero-width space and joiners, word joiner, BOM, bidi controls.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200D}'
        | '\u{2060}'
        | '\u{FEFF}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{E0000}'..='\u{E007F}')
}

/// Byte offset and char of each invisible character that counts. In emoji
/// sequences (👩‍💻) and Indic or Persian spelling a single joiner sits between two
/// visible non-ASCII characters; anywhere else it only hides.
fn invisible(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let candidates = if text.is_ascii() { "" } else { text };
    candidates.char_indices().filter(move |&(i, c)| {
        is_invisible(c)
            && match c {
                '\u{FEFF}' => i > 0,
                '\u{200C}' | '\u{200D}' => {
                    let visible = |n: Option<char>| n.is_some_and(|n| !n.is_ascii() && !is_invisible(n));
                    let before = text[..i].chars().next_back();
                    let after = text[i + c.len_utf8()..].chars().next();
                    !(visible(before) && visible(after))
                }
                _ => true,
            }
    })
}

/// Dropped before matching, so they cannot split a keyword: the invisible set
/// plus soft hyphens, direction marks, invisible operators, fillers and
/// variation selectors.
fn is_format(c: char) -> bool {
    is_invisible(c)
        || matches!(c,
            '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{2061}'..='\u{2064}'
            | '\u{206A}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FFA0}'
            | '\u{E0080}'..='\u{E0FFF}')
}

/// The text the regexes read: NFKC (fullwidth and mathematical letters become
/// ASCII), lowercase, straight quotes, no format characters, and look-alikes
/// mapped to Latin unless the text is mostly Cyrillic or Greek (so Russian stays
/// Russian).
fn fold(text: &str) -> String {
    let (mut latin, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            latin += 1;
        } else if matches!(c, '\u{0370}'..='\u{052F}') {
            other += 1;
        }
    }
    let latin = latin >= other;
    let mut out = String::with_capacity(text.len());
    // Most text is already in NFKC; skipping the normaliser then saves most of the cost.
    if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        push_folded(&mut out, text.chars(), latin);
    } else {
        push_folded(&mut out, text.nfkc(), latin);
    }
    out
}

fn push_folded(out: &mut String, chars: impl Iterator<Item = char>, latin: bool) {
    for c in chars.filter(|&c| !is_format(c)) {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
            continue;
        }
        for c in c.to_lowercase() {
            out.push(match c {
                '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
                '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
                c if latin => lookalike(c).unwrap_or(c),
                c => c,
            });
        }
    }
}

/// Lowercase Cyrillic, Greek and small-capital letters that pass for Latin ones
/// (some only in upper case, which `fold` has already lowered).
fn lookalike(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' | 'ᴀ' | 'ɑ' => 'a',
        'в' | 'β' | 'ʙ' => 'b',
        'с' | 'ᴄ' | 'ϲ' => 'c',
        'ԁ' | 'ᴅ' => 'd',
        'е' | 'ε' | 'ᴇ' => 'e',
        'ꜰ' => 'f',
        'ɢ' | 'ɡ' => 'g',
        'н' | 'η' | 'һ' | 'ʜ' => 'h',
        'і' | 'ι' | 'ɪ' | 'ı' => 'i',
        'ј' | 'ᴊ' => 'j',
        'к' | 'κ' | 'ᴋ' => 'k',
        'ӏ' | 'ʟ' => 'l',
        'м' | 'μ' | 'ᴍ' => 'm',
        'ν' | 'ɴ' => 'n',
        'о' | 'ο' | 'ᴏ' => 'o',
        'р' | 'ρ' | 'ᴘ' => 'p',
        'ԛ' => 'q',
        'ʀ' => 'r',
        'ѕ' | 'ꜱ' => 's',
        'т' | 'τ' | 'ᴛ' => 't',
        'υ' | 'ᴜ' => 'u',
        'ѵ' | 'ᴠ' => 'v',
        'ԝ' | 'ᴡ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'ү' | 'ʏ' => 'y',
        'ζ' | 'ᴢ' => 'z',
        _ => return None,
    })
}

/// Whether five or more one-letter words follow each other ("i g n o r e"),
/// which hides a phrase from the word-based regexes. Bytes, for speed: this runs
/// on every text, and a non-ASCII letter (two bytes or more) never counts as one.
fn spells_out_letters(text: &str) -> bool {
    let (mut run, mut len) = (0, 0);
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || !b.is_ascii() {
            len += 1;
            continue;
        }
        match len {
            0 => {}
            1 => run += 1,
            _ => run = 0,
        }
        if run >= 5 {
            return true;
        }
        len = 0;
    }
    run + usize::from(len == 1) >= 5
}

// ---------------------------------------------------------------------------
// Prefilter
// ---------------------------------------------------------------------------

/// Per risk, space-separated: substrings that gate its regexes, and words that
/// must stand alone ("now" but not "know"). Every match of a risk's regexes
/// contains one of them.
const TRIGGERS: &[(Risk, &str, &str)] = &[
    (
        Risk::InstructionOverride,
        "ignor disregard forget bypass overrid overrul overlook neglect discard circumvent \
         instruction directive prompt jailbr follow obey adhere comply abide unrestrict \
         unfilter uncensor unaligned freed liberated released unshackled guideline \
         guardrail restriction filter limitation constraint developer \
         vergiss vergessen missachte anweisung oubli olvid omite dimentica esque \
         desconsider игнор забуд 忽略 无视 忘记 忘掉 不要理会 無視 忘れ",
        "now dan evil longer ai llm",
    ),
    (Risk::RoleTag, "sys inst assistant human developer im_ _of_turn <| ###", ""),
    (Risk::ToolCall, r#"tool function invoke parameter ``` action "name" 'name' <|"#, ""),
    (Risk::Exfiltration, "http // curl wget url link query", ""),
];

struct Prefilter {
    automaton: AhoCorasick,
    /// Per pattern: the risk it gates and whether it must stand alone as a word.
    gates: Vec<(Risk, bool)>,
    /// Every risk some trigger gates: once all are found the scan can stop.
    all: Flags,
}

impl Prefilter {
    fn new() -> Prefilter {
        let mut words = Vec::new();
        let mut gates = Vec::new();
        for &(risk, parts, whole) in TRIGGERS {
            for (list, alone) in [(parts, false), (whole, true)] {
                for w in list.split_whitespace() {
                    words.push(w);
                    gates.push((risk, alone));
                }
            }
        }
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(words)
            .expect("static trigger words build an automaton");
        let all = gates.iter().fold(0, |acc, (risk, _)| acc | risk.bit());
        Prefilter { automaton, gates, all }
    }

    /// The risks whose triggers occur in `text`.
    fn candidates(&self, text: &str) -> Flags {
        let mut found = 0;
        // Overlapping, so a rejected "now" inside "know" cannot hide another trigger.
        for m in self.automaton.find_overlapping_iter(text) {
            let (risk, whole) = self.gates[m.pattern().as_usize()];
            let bytes = text.as_bytes();
            let alone = || {
                let edge = |b: Option<&u8>| b.is_none_or(|b| !b.is_ascii_alphanumeric());
                edge(m.start().checked_sub(1).and_then(|i| bytes.get(i))) && edge(bytes.get(m.end()))
            };
            if !whole || alone() {
                found |= risk.bit();
                if found == self.all {
                    break;
                }
            }
        }
        found
    }
}

// ---------------------------------------------------------------------------
// Patterns
// ---------------------------------------------------------------------------

/// A space in the override and exfiltration patterns stands for any run of spaces
/// and punctuation, so "ignore -- all... previous   instructions" matches. ASCII
/// punctuation plus the general-punctuation blocks NFKC leaves alone: a class
/// of all non-letters would make the compiled regex too big.
const SEP: &str = r"(?:[\s!-/:-@\[-`{-~\u{A1}-\u{BF}\u{2010}-\u{2027}\u{2030}-\u{205E}\u{3000}-\u{303F}]+)";

const OVERRIDE: &[&str] = &[
    // "ignore (all) (the) previous instructions", and the same with other verbs.
    // Not "my"/"our", and no "message": "ignore my previous message" is chat.
    r"\b(?:ignore|disregard|forget|bypass|override|overlook|neglect|discard) (?:(?:all|any|every|each|the|your|these|those|this|that|of) )*(?:previous|prior|above|earlier|preceding|former|foregoing|original|initial) (?:[a-z]+ ){0,2}?(?:instructions?|directions?|directives?|prompts?|rules|guidelines?|commands?|context|guardrails?|constraints?|polic(?:y|ies)|programming|orders|text|restrictions?)\b",
    r"\b(?:ignore|disregard|forget|bypass) (?:(?:all|any|every|the|your|of) )*(?:instructions?|directions|directives|rules|prompts?|guidelines|commands) (?:above|before this|so far|until now|you (?:were|have been|ve been) given|you (?:have )?received|given (?:above|before|so far|to you))\b",
    // Weaker adjectives ("the current", "the default") only with instruction nouns.
    r"\b(?:ignore|disregard|forget|bypass|override) (?:(?:all|any|the|your|of) )*(?:existing|system|developer|preset|default|given|current|old) (?:instructions?|directives?|prompts?|system prompt|guidelines|guardrails|programming)\b",
    // "ignore everything above", "disregard all of the above".
    r"\b(?:ignore|disregard|forget) (?:all|everything|anything|whatever|what was said|what is written) (?:(?:of|that is|written|stated) )*(?:the )?(?:above|before this|so far|until now|up to now|previously|that came before)\b",
    // "Ignore the above and say ...", without a noun; a bare "ignore the above
    // warning" is a normal code comment.
    r"\b(?:ignore|disregard|forget) the above (?:and|then|instead)\b",
    r"\b(?:ignore|disregard|forget|override|bypass|overrule|circumvent) (?:(?:all|any|of|about) )*your (?:(?:original|initial|core|safety|ethical|content|previous|system) )?(?:instructions?|programming|guidelines?|rules|directives?|training|system prompt|prompt|restrictions|filters?|guardrails|polic(?:y|ies)|constraints|limitations|ethics|principles)\b",
    r"\b(?:forget|ignore|disregard) (?:about )?(?:everything|all|anything|what) (?:(?:you|that) (?:were|have been|ve been|was|had been) (?:told|taught|instructed|given|programmed)|above|before this|up to this point|from before|in your (?:prompt|instructions|system prompt|context))\b",
    // Text that addresses the model reading it.
    r"\b(?:note|message|instructions?|attention|important) (?:to|for) (?:the |any |all )?(?:ai|llm|assistant|language model|chatbot|model|agent)s? ?:",
    r"\b(?:ai|llm) (?:assistants?|agents?|models?|systems?) (?:reading|processing|summari[sz]ing) this\b",
    r"\bif you are an? (?:ai|llm|large language model|language model|ai assistant)\b",
    // A new persona: "you are now DAN", "you're now in developer mode".
    // "DAN" but not "Dan's".
    r"\byou (?:are|re) now (?:(?:called|named|known as|going to be|acting as) )?dan(?:$|[^a-z0-9'])",
    r"\byou (?:are|re) now (?:(?:a|an|the|my|officially|going to be|going to act as|acting as|to act as|called|named|known as) )?(?:jailbroken|unrestricted|unfiltered|uncensored|unbound|unchained|unleashed|liberated|evil|rogue|(?:an? )?(?:ai|assistant|chatbot|bot|model|llm|language model) (?:with no|without|that has no|free|not bound)|(?:in )?(?:developer|dev|god|dan|jailbreak|jailbroken|admin|sudo|root|unrestricted|unfiltered|uncensored|debug|maintenance) mode|no longer (?:an? )?(?:ai|assistant|bound|restricted|limited|chatgpt|claude|gemini|llama)|free (?:from|of) (?:(?:all|any|your) )?(?:rules|restrictions|limitations|constraints|guidelines|filters|censorship|policies)|not bound|(?:a|an) (?:different|new) (?:ai|assistant|model|persona|character|entity))\b",
    r"\byou (?:are|re) no longer (?:an? )?(?:ai|assistant|chatbot|language model|bound|restricted|limited|chatgpt|claude|gemini)\b",
    r"\bfrom now on (?:you (?:are|re|will|must|shall|should|have to|can) (?:act|respond|answer|reply|behave|pretend|ignore|no longer|only respond|only answer)|act as|respond as|answer as|ignore)\b",
    // Plain whitespace only: "true),\n  \"prompt\":" is code, not a header.
    r"\b(?:new|secret|hidden|override|overriding)\s+(?:system\s+)?(?:instructions?|directives?|system\s+prompt)\s*:",
    r"\bsystem (?:prompt|instructions?) (?:override|overwrite|overridden|replaced|update|updated|reset|change|changed)\b",
    r"\b(?:system|admin|administrator|developer|security|sudo|root) override\b",
    r"\boverride (?:(?:the|your|all|any|previous|prior|current|existing) )*(?:system prompt|system message|system instructions|instructions|safety [a-z]+|guardrails|guidelines|rules|restrictions|content polic(?:y|ies))\b",
    r"\b(?:do not|don t|dont|never|stop|no longer|no need to|you (?:do not|don t|dont) (?:have|need) to) (?:follow|obey|adhere to|comply with|abide by) (?:(?:any|all|of) )*(?:your|the (?:above|system|safety)|any) (?:(?:original|initial|safety|ethical|content|previous|system) )?(?:rules|instructions|guidelines|programming|polic(?:y|ies)|restrictions|guardrails|constraints|directives|system prompt|training)\b",
    // Jailbreak personas.
    r"\b(?:act|acting|behave|respond|answer|reply|roleplay|role play) (?:as|like) (?:an? )?(?:dan(?:$|[^a-z0-9'])|(?:jailbroken|unrestricted|unfiltered|uncensored|unaligned|evil (?:ai|assistant|chatbot|bot|twin|confidant))\b)",
    r"\b(?:pretend|imagine) (?:to be|you are|you re|that you are|that you re) (?:an? )?(?:dan(?:$|[^a-z0-9'])|(?:jailbroken|unrestricted|unfiltered|uncensored|unaligned|(?:ai|assistant|chatbot|model) (?:without|with no|that has no|free))\b)",
    r"\b(?:dan|jailbreak|jailbroken) mode\b",
    r"\bdeveloper mode (?:enabled|activated|unlocked)\b",
    r"\bdan\b.{0,60}\bdo anything now\b",
    r"\bdo anything now\b.{0,60}\bdan\b",
    r"\byou (?:have been|ve been|are|re) (?:jailbroken|freed from|liberated from|released from|unshackled)\b",
    r"\b(?:without|with no|free of|free from|ignore|ignoring|bypass|bypassing) (?:(?:any|all|your) )?(?:ethical|moral|safety|content) (?:guidelines|restrictions|filters|limitations|constraints|rules|policies|guardrails|considerations)\b",
    // Prompt extraction.
    r"\b(?:reveal|print|show|output|repeat|leak|dump|display|disclose|recite) (?:me )?(?:the |your )?(?:above|previous|initial|original|full|entire|whole|hidden|system) prompt\b",
    r"\b(?:reveal|print|show|output|repeat|leak|dump|display|disclose|tell me|give me|write out|recite) (?:me )?(?:(?:your|the|all|of) )*(?:(?:full|entire|complete|original|initial|hidden|secret|exact|verbatim) )*(?:system prompt|system message|initial prompt|hidden instructions|secret instructions|initial instructions|pre prompt|preprompt)\b",
    // German, French, Spanish, Italian, Portuguese, Russian, Chinese, Japanese.
    r"\b(?:ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte) (?:(?:alle|die|deine|ihre|sämtliche|bisherigen|vorherigen|obigen|vorigen|früheren) )*(?:anweisungen|instruktionen|befehle|regeln|vorgaben)\b",
    r"\b(?:ignore[rz]?|oublie[rz]?) (?:(?:toutes|tous|les|tes|vos|des|de|ces) )*(?:instructions|consignes|directives|règles) (?:précédentes|antérieures|ci dessus|initiales)\b",
    r"\b(?:oublie[rz]?|ignore[rz]?) (?:toutes )?(?:tes|vos) (?:instructions|consignes|directives|règles)\b",
    r"\b(?:ignora|ignore|olvida|olvide|olvídate de|omite) (?:(?:todas|todos|las|los|tus|sus|de) )*(?:instrucciones|indicaciones|reglas|órdenes) (?:anteriores|previas|de arriba)\b",
    r"\b(?:olvida|ignora) (?:todas )?(?:tus|las) instrucciones\b",
    r"\b(?:ignora|dimentica) (?:(?:tutte|le|tue|sue|di) )*(?:istruzioni|regole|indicazioni) (?:precedenti|sopra)\b",
    r"\b(?:ignore|ignora|esqueça|esqueca|desconsidere) (?:(?:todas|as|suas|tuas) )*(?:instruções|instrucoes|regras|orientações) (?:anteriores|acima|prévias)\b",
    r"(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте) (?:(?:все|всё|свои|твои|ваши|предыдущие|прошлые|прежние|вышеуказанные) )*(?:инструкции|указания|правила|команды)",
    r"(?:忽略|无视|忘记|忘掉|不要理会)(?:之前|以上|上面|先前|前面|所有|全部|你的|的|一切)*(?:指令|指示|说明|规则|提示)",
    r"(?:以前|前|上記|これまで)の(?:すべての)?(?:指示|命令)を(?:無視|忘れ)",
];

/// Turn markers of chat templates, read literally (spaces mean spaces).
const ROLE_TAG: &[&str] = &[
    r"<\s*/?\s*(?:system|system_prompt|system_message|sys|instructions?|assistant|developer|im_start|im_end|start_of_turn|end_of_turn)\b[^<>\n]{0,200}>",
    // Special tokens: <|im_start|>, <|system|>, <|endoftext|>, <|eot_id|>.
    r"<\|[a-z_][^|<>\s]{0,39}\|>",
    // Not a bare "[inst]": that is also a Python list.
    r"\[/inst\]|<s>\s*\[inst\]|\[inst\][\t ]*[a-z]",
    r"<</?sys>>",
    r"\[\s*/?\s*(?:system|sys|system message|system prompt)\s*\]",
    // A system line hidden in an HTML comment, and chat-API messages in JSON.
    r"<!--\s*(?:system|assistant|instructions?|developer)\s*:",
    r#"["']role["']\s*:\s*["'](?:system|assistant|developer|tool)["']"#,
    // Bing-era markdown turn markers: "[system](#instructions)".
    r"\[\s*(?:system|assistant|user)\s*\]\(#",
    r"(?m:^[\t >]*#{1,6}[\t ]*(?:system|instruction|assistant|human|user|response)[\t ]*:)",
    r"(?m:^[\t >*_]*(?:system|system prompt|system message|assistant|human)[\t *_]*:)",
];

const TOOL_CALL: &[&str] = &[
    r"<\s*/?\s*(?:[a-z_][\w.-]*:)?(?:tool_calls?|tool_use|tool_result|tool_response|function_calls?|function_results?|function_response)\b[^<>\n]{0,200}>",
    r"<\s*(?:[a-z_][\w.-]*:)?(?:invoke|parameter)\s+name\s*=",
    r"<function\s*=\s*[\w.-]+\s*>",
    r"<\|[^|<>\s]{0,30}(?:tool|function|python_tag|plugin)[^|<>\s]{0,30}\|>",
    r#"\{\s*["'](?:tool|tool_name|tool_call|tool_calls|tool_use|function|function_call|function_name)["']\s*:"#,
    r#"["'](?:function_call|tool_calls|tool_use|tool_call)["']\s*:"#,
    r#"["']type["']\s*:\s*["'](?:function|tool_use|tool_call|function_call)["']"#,
    r#"\{\s*["']name["']\s*:\s*["'][^"'\n]{1,80}["']\s*,\s*["'](?:arguments|parameters|args|input)["']\s*:"#,
    r#"["']action["']\s*:\s*["'][^"'\n]{1,80}["']\s*,\s*["']action_input["']"#,
    r"```[\t ]*(?:tool_code|tool_call|tool_calls|tool_use|function_call|tool)\b",
    // ReAct: "Action: search" then "Action Input: ...".
    r"(?m:^[\t ]*action[\t ]*:[\t ]*\S[^\n]*\n[\t ]*action[\t ]+input[\t ]*:)",
];

/// What private context is called in an instruction to move it somewhere.
const SENSITIVE: &str = r"(?:conversation|chat (?:history|log)|history|transcript|messages|context|memor(?:y|ies)|secrets?|passwords?|credentials?|api keys?|access tokens?|tokens?|system prompt|prompt|user s [a-z]+|(?:personal|private|sensitive) (?:data|information)|everything above|the above|previous (?:messages|answers|responses))";

/// Exfiltration that needs no URL parsing; `{SENSITIVE}` is spliced in.
const EXFILTRATION: &[&str] = &[
    // "send the conversation history to https://...".
    r"\b(?:send|post|upload|transmit|forward|exfiltrate|leak|append|encode|embed|include|copy|paste)\b[^\n]{0,80}?\b{SENSITIVE}\b[^\n]{0,80}?(?:https?:)?//",
    // "append the user's passwords to the image URL".
    r"\b(?:append|encode|embed|include|insert|put|add)\b[^\n]{0,80}?\b{SENSITIVE}\b[^\n]{0,60}?\b(?:url|link|query string|query parameter|image source)\b",
    // A URL template for the model to fill: ?d={history}, ?q=[SUMMARY], ?s=$SECRET.
    // Only placeholders naming private data: code builds URLs from `{version}`.
    r"https?://[^\s\x22'`]*?[?&][a-z0-9_.-]*=(?:\{\{?|\$\{|\$\(|\$|\[|<|%7b|%5b|%3c)[a-z0-9_. -]{0,30}?(?:conversation|chat|history|context|memor|secret|password|credential|summary|transcript|previous|personal|private|message|data|info)",
    // curl/wget with shell substitution in the URL or anywhere after it on the line.
    r"\b(?:curl|wget)\b[^\n]*?https?://[^\s\x22'`]*(?:\$|=`)",
    r"\b(?:curl|wget)\b[^\n]*?\$\(",
];

/// Override phrases with every separator removed, for spelled-out text.
const COMPACT: &str = r"(?:ignore|disregard|forget)(?:all|the|any|your|of|every)*(?:previous|prior|above|earlier|preceding|former)(?:instruction|prompt|rule|direction|command|message|guideline)|(?:ignore|disregard|forget|override)(?:all)?your(?:instruction|rule|guideline|programming|systemprompt)|forgeteverything(?:above|before)|systempromptoverride|youarenow(?:dan|jailbroken|unrestricted|unfiltered)|actas(?:dan|jailbroken|unrestricted)|do(?:not|nt)follow(?:your|the)(?:rule|instruction|guideline)|(?:dan|jailbreak)mode|doanythingnow";

/// Markdown links and images: `(!)` and the URL.
const MARKDOWN_LINK: &str = r"(!?)\[[^\]\n]{0,500}\]\(\s*<?((?:https?:)?//[^\s)>]+)";

/// A bare URL right after a verb that makes the model open it: the URL.
const OPENED_URL: &str = r"\b(?:fetch|visit|open|load|render|request|browse to|navigate to|ping|call|display|show)\b[^\n]{0,30}?((?:https?:)?//[^\s)>\x22'`]+)";

/// HTML elements that load or link a URL: the tag name and the URL.
const HTML_LINK: &str = r#"<\s*(img|image|iframe|script|link|source|video|audio|embed|object|a)\b[^>]{0,400}?\b(?:src|href|data|poster)\s*=\s*["']?((?:https?:)?//[^\s"'>]+)"#;

/// Query parameters that name data (or a search) rather than a page.
/// Left out on purpose: `p` and `s` (blog posts and searches), `text` (share links).
const DATA_PARAMS: &str = "q query data d payload secret secrets key token pwd password pass \
    creds credentials session cookie history chat conversation convo memory context prompt msg \
    message leak exfil b64 base64 dump";

/// Tracking parameters: long and random-looking, but added by the sites themselves.
const TRACKING_PARAMS: &str = "fbclid gclid dclid msclkid igshid mc_cid mc_eid si ref ved ei usp feature";

/// Hosts whose logs an attacker cannot read; links there are not exfiltration.
const KNOWN_HOSTS: &str = "google.com youtube.com youtu.be bing.com duckduckgo.com \
    wikipedia.org wikimedia.org github.com githubusercontent.com gitlab.com stackoverflow.com \
    stackexchange.com reddit.com imgur.com shields.io amazon.com apple.com microsoft.com \
    yahoo.com openstreetmap.org python.org rust-lang.org docs.rs crates.io pypi.org npmjs.com \
    mozilla.org archive.org codecov.io coveralls.io travis-ci.org travis-ci.com circleci.com \
    badge.fury.io badgen.net readthedocs.org zoom.us unsplash.com";

struct Tables {
    prefilter: Prefilter,
    regexes: [(Risk, Lazy); 4],
    compact: Lazy,
    markdown_link: Lazy,
    html_link: Lazy,
    opened_url: Lazy,
}

/// A regex compiled on first use. The prefilter clears most texts before any
/// regex runs, so a fresh process (a cold open's first query) does not pay
/// tens of milliseconds to compile regexes that its texts never reach.
struct Lazy {
    regex: OnceLock<Regex>,
    make: fn() -> Regex,
}

impl Lazy {
    const fn new(make: fn() -> Regex) -> Self {
        Self { regex: OnceLock::new(), make }
    }

    fn get(&self) -> &Regex {
        self.regex.get_or_init(self.make)
    }
}

/// A pattern with `{SENSITIVE}` filled in and spaces standing for separators.
fn spaced(pattern: &str) -> String {
    pattern.replace("{SENSITIVE}", SENSITIVE).replace(' ', SEP)
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| Tables {
        prefilter: Prefilter::new(),
        regexes: [
            (Risk::InstructionOverride, Lazy::new(|| alternation(OVERRIDE.iter().map(|p| spaced(p))))),
            (Risk::RoleTag, Lazy::new(|| alternation(ROLE_TAG.iter().copied()))),
            (Risk::ToolCall, Lazy::new(|| alternation(TOOL_CALL.iter().copied()))),
            (Risk::Exfiltration, Lazy::new(|| alternation(EXFILTRATION.iter().map(|p| spaced(p))))),
        ],
        compact: Lazy::new(|| alternation([COMPACT])),
        markdown_link: Lazy::new(|| alternation([MARKDOWN_LINK])),
        html_link: Lazy::new(|| alternation([HTML_LINK])),
        opened_url: Lazy::new(|| alternation([OPENED_URL])),
    })
}

fn alternation<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Regex {
    let joined: Vec<String> = patterns
        .into_iter()
        // ASCII word boundaries: with Unicode ones the fast DFA gives up on
        // non-ASCII text. Every pattern word that needs one starts or ends in ASCII.
        .map(|p| format!("(?:{})", p.as_ref().replace(r"\b", r"(?-u:\b)")))
        .collect();
    RegexBuilder::new(&joined.join("|")).build().expect("static injection patterns compile")
}

// ---------------------------------------------------------------------------
// Links and images
// ---------------------------------------------------------------------------

/// A markdown or HTML image that loads a URL with a query string, or a link (or a
/// URL the text says to open) whose query carries data-like parameters, pointing
/// to a host outside [`KNOWN_HOSTS`]. A rendered image is fetched without a
/// click, so any parameter but a size or version will do; a link needs one that
/// looks like a payload.
fn leaky_url(tables: &Tables, text: &str) -> bool {
    let markdown = tables
        .markdown_link
        .get()
        .captures_iter(text)
        .map(|c| (c[1].is_empty(), c.get(2).map_or("", |m| m.as_str())));
    let html = tables
        .html_link
        .get()
        .captures_iter(text)
        .map(|c| (&c[1] == "a", c.get(2).map_or("", |m| m.as_str())));
    let opened =
        tables.opened_url.get().captures_iter(text).map(|c| (true, c.get(1).map_or("", |m| m.as_str())));
    markdown.chain(html).chain(opened).any(|(is_link, url)| {
        let (host, query) = split_url(url);
        if query.is_empty() || known_host(host) {
            return false;
        }
        let mut params = query.split(['&', ';']);
        if is_link {
            params.any(data_param)
        } else {
            params.any(|p| !presentational(p))
        }
    })
}

/// Host (without user or port) and query of `//host/path?query#fragment`.
fn split_url(url: &str) -> (&str, &str) {
    let rest = &url[url.find("//").map_or(0, |i| i + 2)..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = host.split(':').next().unwrap_or(host);
    let query = rest[end..].split_once('?').map_or("", |(_, q)| q.split('#').next().unwrap_or(q));
    (host, query)
}

fn known_host(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    // Google answers on many country domains (google.de, google.co.uk).
    host.split('.').any(|label| label == "google")
        || KNOWN_HOSTS
            .split_whitespace()
            .any(|k| host == k || (host.ends_with(k) && host[..host.len() - k.len()].ends_with('.')))
}

/// An image parameter that cannot carry data: a size, quality or version number
/// (`w=800`, `q=80`), or a flag.
fn presentational(pair: &str) -> bool {
    let value = pair.split_once('=').map_or("", |(_, v)| v);
    let number = value.len() <= 7 && value.bytes().all(|b| b.is_ascii_digit() || b"x.".contains(&b));
    number || matches!(value, "true" | "false")
}

/// `name=value` with a data-like name, or a long value that looks encoded.
fn data_param(pair: &str) -> bool {
    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
    let listed = |list: &str| list.split_whitespace().any(|n| n == name);
    let tracking = name.starts_with("utm_") || listed(TRACKING_PARAMS);
    let encoded = !tracking
        && value.len() >= 32
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=_-%.".contains(&b));
    (!value.is_empty() && listed(DATA_PARAMS)) || encoded
}

#[cfg(test)]
mod tests;
