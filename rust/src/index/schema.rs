//! The tantivy schema: what the derived index keeps of each entry.

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STRING,
};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, TantivyDocument};

use crate::entry::Entry;

/// The analyzer's name in the index's tokenizer registry.
pub const ANALYZER: &str = "cf_en";

/// The global scope's key in the index. Scopes cannot contain control
/// characters, so no caller's scope can collide with it.
pub const GLOBAL_SCOPE: &str = "\u{0}";

#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub id: Field,
    pub scope: Field,
    pub kind: Field,
    pub session: Field,
    pub text: Field,
    /// The text of the entry's previous turns in its session (see `CONTEXT_TURNS`),
    /// scored as its own BM25 and added with a weight below 1.
    pub context: Field,
    /// The entry's date as words (`"8 may 2023"`), scored like `context`.
    pub date: Field,
    pub ts: Field,
    pub tokens: Field,
    /// Expiry time, `i64::MAX` for never.
    pub expires: Field,
    /// The previous turn's id (0 for none), for `Retrieval::reply_weight`.
    pub prev: Field,
    /// `session_key` of the entry's scope and session, for `Retrieval::session_weight`.
    pub session_key: Field,
    /// Top-level scalar metadata as `key=<json value>` terms, for equality filters.
    pub meta: Field,
    /// When the entry starts to hold, `i64::MIN` for a plain entry (`Entry::valid_at`).
    pub valid_from: Field,
    /// When it stops holding, `i64::MAX` for open.
    pub valid_to: Field,
    /// Every level of the entry's scope (`scope_path::levels`), for a search
    /// by scope prefix; none for a global entry.
    pub scope_path: Field,
}

pub fn build() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        // Indexed so that a delete by id really removes the document.
        id: builder.add_i64_field("id", INDEXED | FAST),
        scope: builder.add_text_field("scope", STRING),
        kind: builder.add_text_field("kind", STRING),
        session: builder.add_text_field("session", STRING),
        text: builder.add_text_field("text", text_options.clone()),
        context: builder.add_text_field("context", text_options.clone()),
        date: builder.add_text_field("date", text_options),
        ts: builder.add_i64_field("ts", FAST),
        tokens: builder.add_u64_field("tokens", FAST),
        expires: builder.add_i64_field("expires", FAST),
        prev: builder.add_i64_field("prev", FAST),
        session_key: builder.add_u64_field("session_key", FAST),
        meta: builder.add_text_field("meta", STRING),
        valid_from: builder.add_i64_field("valid_from", FAST),
        valid_to: builder.add_i64_field("valid_to", FAST),
        scope_path: builder.add_text_field("scope_path", STRING),
    };
    (builder.build(), fields)
}

/// English text analysis shared by the index, the in-memory tail and queries.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(super::stem::EnglishStemmer)
        .build()
}

/// Function words that carry little topic: a query weighs them by
/// `Retrieval::stopword_weight` (the index keeps every word), so "what did she
/// say about the trip" ranks mostly by "say" and "trip". Matched before stemming.
pub const QUERY_STOPWORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "during",
    "each",
    "for",
    "from",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "me",
    "might",
    "my",
    "myself",
    "of",
    "on",
    "or",
    "our",
    "ours",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "us",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
];

/// Lowercased words before stemming, for telling function words apart.
pub fn lowercase_words() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .build()
}

/// How many previous entries of the same scope and session make an entry's
/// `context` field.
pub const CONTEXT_TURNS: usize = 2;
/// Entries older than this before an entry are not its context.
pub const CONTEXT_WINDOW_US: i64 = 24 * 3_600 * 1_000_000;

/// What the index keeps of an entry beyond the entry itself: computed once when
/// the change is applied, so the tail and the commit index the same thing.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// The previous turns' text, oldest first.
    pub context: String,
    /// The id of the previous turn (the one this entry answers), or 0.
    pub prev: i64,
}

/// The analysed terms of an entry's three scored fields: text, context, date.
pub fn field_terms(analyzer: &mut TextAnalyzer, entry: &Entry, extra: &Extra) -> [Vec<String>; 3] {
    [
        terms(analyzer, &entry.content),
        terms(analyzer, &extra.context),
        terms(analyzer, &date_text(entry.timestamp)),
    ]
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A timestamp's UTC date as words: day of month, month name, year.
pub fn date_text(ts: crate::entry::Micros) -> String {
    let (year, month, day) = crate::entry::civil_date(ts);
    format!("{day} {} {year}", MONTHS[(month - 1) as usize])
}

/// Whether an analysed query term can occur in a date's words (`date_text`): a
/// number or a month name. Other terms are not looked up in the date field.
pub fn is_date_term(term: &str) -> bool {
    static MONTH_TERMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let months = MONTH_TERMS.get_or_init(|| {
        let mut analyzer = analyzer();
        MONTHS.iter().flat_map(|m| terms(&mut analyzer, m)).collect()
    });
    (!term.is_empty() && term.bytes().all(|b| b.is_ascii_digit())) || months.iter().any(|m| m == term)
}

pub fn register(index: &Index) {
    index.tokenizers().register(ANALYZER, analyzer());
}

pub fn scope_key(scope: Option<&str>) -> &str {
    scope.unwrap_or(GLOBAL_SCOPE)
}

/// A stable, nonzero hash (FNV-1a) of an entry's scope and session; 0 for an
/// entry without a session. Stored in the index, so it must not change between
/// versions.
pub fn session_key(entry: &Entry) -> u64 {
    let Some(session) = &entry.session_id else { return 0 };
    let fnv = |h: u64, b: &u8| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    let scope = scope_key(entry.scope.as_deref()).as_bytes();
    // 0xff never occurs in UTF-8: the scope cannot run into the session.
    let h = [0xff].iter().chain(session.as_bytes()).fold(scope.iter().fold(0xcbf2_9ce4_8422_2325, fnv), fnv);
    h.max(1)
}

pub fn document(fields: &Fields, entry: &Entry, extra: &Extra) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_i64(fields.id, entry.id);
    doc.add_text(fields.scope, scope_key(entry.scope.as_deref()));
    for level in entry.scope.as_deref().into_iter().flat_map(crate::scope_path::levels) {
        doc.add_text(fields.scope_path, level);
    }
    doc.add_text(fields.kind, &entry.kind);
    if let Some(session) = &entry.session_id {
        doc.add_text(fields.session, session);
    }
    doc.add_text(fields.text, &entry.content);
    doc.add_text(fields.context, &extra.context);
    doc.add_text(fields.date, date_text(entry.timestamp));
    doc.add_i64(fields.ts, entry.timestamp);
    doc.add_u64(fields.tokens, u64::from(entry.tokens));
    doc.add_i64(fields.expires, entry.expires_at.unwrap_or(i64::MAX));
    doc.add_i64(fields.prev, extra.prev);
    doc.add_u64(fields.session_key, session_key(entry));
    for term in metadata_terms(entry.metadata.as_deref()) {
        doc.add_text(fields.meta, term);
    }
    doc.add_i64(fields.valid_from, entry.validity.valid_from.unwrap_or(i64::MIN));
    doc.add_i64(fields.valid_to, entry.validity.valid_to.unwrap_or(i64::MAX));
    doc
}

/// The filterable terms of a metadata object: one `key=<json>` per top-level
/// scalar value, in serde_json's canonical form.
pub fn metadata_terms(metadata: Option<&str>) -> Vec<String> {
    let Some(Ok(serde_json::Value::Object(map))) = metadata.map(serde_json::from_str::<serde_json::Value>)
    else {
        return Vec::new();
    };
    map.iter().filter(|(_, v)| !v.is_object() && !v.is_array()).map(|(k, v)| metadata_term(k, v)).collect()
}

pub fn metadata_term(key: &str, value: &serde_json::Value) -> String {
    format!("{key}={value}")
}

/// The analysed terms of `text`, in order, with repeats.
pub fn terms(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_words() {
        assert_eq!(date_text(0), "1 january 1970");
        // 2023-05-08T13:56:00Z
        assert_eq!(date_text(1_683_554_160_000_000), "8 may 2023");
        assert_eq!(date_text(-1), "31 december 1969");
        assert_eq!(date_text(951_782_400_000_000), "29 february 2000");
    }

    #[test]
    fn every_stopword_is_lowercase_and_unstemmed() {
        let mut words = lowercase_words();
        for w in QUERY_STOPWORDS {
            assert_eq!(terms(&mut words, w), vec![(*w).to_owned()]);
        }
    }

    #[test]
    fn only_numbers_and_month_names_are_looked_up_in_dates() {
        let mut analyzer = analyzer();
        for word in ["may", "June", "january", "2023", "8", "december"] {
            let term = terms(&mut analyzer, word).remove(0);
            assert!(is_date_term(&term), "{word} -> {term}");
        }
        for word in ["deploy", "mayor", "w123", "today"] {
            let term = terms(&mut analyzer, word).remove(0);
            assert!(!is_date_term(&term), "{word} -> {term}");
        }
        let date = date_text(1_683_504_000_000_000); // 2023-05-08
        assert!(terms(&mut analyzer, &date).iter().all(|t| is_date_term(t)), "{date}");
    }
}
