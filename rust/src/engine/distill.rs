//! The engine side of distillation: scrub, chunk, and the offline extractor.
//! Model calls and merging live in the Python facade; saving uses `save_detailed`.

use super::Memory;
use crate::distill::{self, Chunk, Distilled, ExtractOptions, Message};
use crate::error::{Error, Result};
use crate::scrub::{ScrubOptions, Scrubber};

impl Memory {
    /// The transcript as a model may see it: secrets are always redacted here,
    /// whatever the store's setting, and personal data when the store redacts it.
    pub fn scrub_transcript(&self, messages: &[Message]) -> Result<Vec<Message>> {
        self.check_open()?;
        if messages.iter().all(|m| m.text.trim().is_empty()) {
            return Err(Error::invalid("the transcript is empty"));
        }
        let scrubber = Scrubber::new(ScrubOptions { secrets: true, pii: self.config.scrub.pii });
        Ok(distill::scrub_messages(messages, &scrubber))
    }

    /// Splits scrubbed messages into chunks of at most `max_tokens` in the store's
    /// tokenizer, on message and then sentence boundaries.
    pub fn chunk_transcript(&self, messages: &[Message], max_tokens: u32) -> Result<Vec<Chunk>> {
        self.check_open()?;
        distill::chunk(messages, max_tokens, &self.tokens)
    }

    /// The offline extractive distiller over scrubbed messages.
    pub fn extract_facts(&self, messages: &[Message], options: ExtractOptions) -> Result<Distilled> {
        self.check_open()?;
        Ok(distill::extract(messages, options, &self.tokens))
    }
}
