//! Distillation: long transcripts into a summary and durable facts.
//!
//! This module is the engine half, with no model and no Python: [`chunk`] splits a
//! (scrubbed) transcript into pieces that fit a model's context, and [`extract`] is
//! an offline, extractive distiller used when no model is configured. Calling a
//! model, merging chunk results and saving them live in the Python package
//! `contextforge.distill` and the bindings.
//!
//! # Chunking
//!
//! [`chunk`] renders each message as one line, `"Speaker: text"`, and packs whole
//! messages into chunks of at most `max_tokens` tokens, counted exactly in the
//! store's tokenizer. Only a message too long to fit alone is cut: between
//! sentences, then words, then characters, each finer cut used only inside a piece
//! the coarser one could not fit. Its parts go into consecutive chunks of their
//! own, each repeating the speaker label. Order is kept and no text is lost or
//! repeated (whitespace at the edges of a message or part is trimmed).
//!
//! # Extraction: what it can and cannot do
//!
//! [`extract`] splits messages into sentences and scores each one:
//!
//! - **cue phrases** give a kind and a bonus: decisions ("we decided", "let's go
//!   with", "agreed"), corrections ("actually", "no, it's", "correction", "I
//!   meant"), preferences ("I prefer", "I like", "I hate", "always", "never") and
//!   state or change ("is now", "moved to", "currently", "started", "deadline");
//! - **recurrence**: content words (not stopwords, lightly stemmed) that occur in
//!   other messages mark a topic the conversation returns to;
//! - **specifics**: numbers, capitalised names inside the sentence, and time
//!   expressions ("yesterday", "last week", month and day names);
//! - first-person statements, and the first and last tenth of a long transcript,
//!   get a small bonus;
//! - very short sentences, sentences with fewer than two content words, questions
//!   and social filler ("thanks", "that's awesome") are damped.
//!
//! The best sentences above a floor ([`MIN_FACT_SCORE`]) become facts, skipping
//! near-duplicates (content-word overlap), up to `max_facts`, in transcript order,
//! each prefixed with its speaker. The summary is the `summary_sentences` most
//! central sentences (recurring terms, fewer cue bonuses), in transcript order.
//!
//! It **cannot** paraphrase, resolve pronouns ("she", "it", "that one"), combine
//! facts spread over several sentences, tell which of two conflicting statements
//! is current, resolve relative dates ("yesterday") to calendar dates, or judge
//! importance the way a reader would: it ranks sentences by surface signals, and
//! its cue lists are English only. A fact is always a verbatim sentence of the
//! transcript (possibly cut to `max_fact_chars`), so it never invents anything;
//! it may miss what matters, and keeps some chatter. Use a model distiller when
//! quality matters; this one is for offline use, tests and a floor to compare with.

mod chunk;
mod extract;
mod text;

pub use chunk::{chunk, Chunk, MIN_CHUNK_TOKENS};
pub use extract::{extract, Distilled, ExtractOptions, Fact, FactKind, MIN_FACT_SCORE};

use crate::scrub::Scrubber;

/// One message of a transcript: who spoke (if known) and what they said.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Message {
    pub speaker: Option<String>,
    pub text: String,
}

impl Message {
    pub fn new(speaker: Option<&str>, text: impl Into<String>) -> Message {
        Message { speaker: speaker.map(str::to_string), text: text.into() }
    }
}

/// The transcript with secrets redacted in every speaker and text, as the first
/// step before any model (or [`chunk`]) sees it.
pub fn scrub_messages(messages: &[Message], scrubber: &Scrubber) -> Vec<Message> {
    messages
        .iter()
        .map(|m| Message {
            speaker: m.speaker.as_deref().map(|s| scrubber.scrub(s).into_owned()),
            text: scrubber.scrub(&m.text).into_owned(),
        })
        .collect()
}
