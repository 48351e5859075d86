//! A bulk save fed a chunk at a time: the caller converts and hands over the
//! next chunk while this one is prepared and written, all in one transaction.
//! Neither side ever holds the whole batch.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::Memory;
use crate::entry::NewEntry;
use crate::error::{Error, Result};
use crate::store::now_micros;

/// `(id, created)` per item, in order.
type Saved = Vec<(i64, bool)>;

enum Message {
    Chunk(Vec<NewEntry>),
    /// Commit what was handed over.
    Done,
}

/// One open bulk save. Dropped (or `abort`ed) before `finish`, it rolls back:
/// nothing of it is kept.
pub struct BulkSave {
    sender: Option<SyncSender<Message>>,
    writer: Option<JoinHandle<Result<Saved>>>,
    memory: Arc<Memory>,
    /// Items handed over so far: the number of the next chunk's first.
    given: usize,
}

impl BulkSave {
    /// Starts a bulk save on its own thread, which takes the store's writer
    /// once the first chunk arrives and holds it until the end.
    pub fn start(memory: Arc<Memory>) -> Result<Self> {
        memory.check_open()?;
        // A rendezvous: a chunk is handed over when the writer is ready for it.
        let (sender, receiver) = sync_channel::<Message>(0);
        let saving = Arc::clone(&memory);
        let writer = std::thread::Builder::new()
            .name("contextforge-bulk".to_owned())
            .spawn(move || {
                // Should this thread drop the store last (a bulk save rolled
                // back after its handle closed), the store's drop needs the runtime.
                let _ctx = crate::runtime::runtime().enter();
                let mut first = match receiver.recv() {
                    Ok(Message::Chunk(chunk)) => Some(chunk),
                    Ok(Message::Done) => return Ok(Vec::new()),
                    Err(_) => return Err(abandoned()),
                };
                let mut ended = false;
                let chunks = std::iter::from_fn(move || {
                    if let Some(chunk) = first.take() {
                        return Some(Ok(chunk));
                    }
                    if ended {
                        return None;
                    }
                    match receiver.recv() {
                        Ok(Message::Chunk(chunk)) => Some(Ok(chunk)),
                        Ok(Message::Done) => {
                            ended = true;
                            None
                        }
                        Err(_) => {
                            ended = true;
                            Some(Err(abandoned()))
                        }
                    }
                });
                let written = saving.save_chunks(chunks, now_micros())?;
                Ok(written.into_iter().map(|w| (w.id, w.seq.is_some())).collect())
            })
            .map_err(|err| Error::Internal(format!("cannot start a thread: {err}")))?;
        Ok(Self { sender: Some(sender), writer: Some(writer), memory, given: 0 })
    }

    /// Hands over the next chunk, once the writer is ready for it. An item
    /// that is not valid (named by its place in the whole batch) ends the
    /// bulk save: nothing of it is kept.
    pub fn add(&mut self, entries: Vec<NewEntry>) -> Result<()> {
        let first = self.given;
        self.given += entries.len();
        let checked =
            self.memory.check_open().and_then(|()| self.memory.validate_items(&entries, Some(first)));
        if let Err(err) = checked {
            self.abort();
            return Err(err);
        }
        let Some(sender) = &self.sender else {
            return Err(Error::invalid("this bulk save has ended"));
        };
        if sender.send(Message::Chunk(entries)).is_ok() {
            return Ok(());
        }
        // The writer stopped: a chunk failed to write. Its error is the answer.
        self.sender = None;
        Err(self.join().err().unwrap_or_else(abandoned))
    }

    /// Commits every chunk handed over; returns `(id, created)` per item, in order.
    pub fn finish(mut self) -> Result<Saved> {
        let Some(sender) = self.sender.take() else {
            return Err(Error::invalid("this bulk save has ended"));
        };
        // Refused only when the writer already stopped: `join` has its error.
        let _ = sender.send(Message::Done);
        drop(sender);
        self.join()
    }

    /// Ends the bulk save without keeping anything: the writer rolls back.
    pub fn abort(&mut self) {
        self.sender = None;
    }

    fn join(&mut self) -> Result<Saved> {
        let writer = self.writer.take().ok_or_else(|| Error::invalid("this bulk save has ended"))?;
        writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

fn abandoned() -> Error {
    Error::invalid("the bulk save ended before it was finished: nothing of it was saved")
}
