//! Pipeline requests to a server (`wire.rs` carries them), on streams kept
//! open between requests.
//!
//! A Hrana stream is a connection the server opens for it: opening one for
//! every request and closing it after cost the server about as much as all of
//! a save's statements (docs/performance.md, "A libSQL server"). So a request
//! runs on a stream kept from an earlier one when there is one. Its batch ends
//! with a ROLLBACK that runs only inside a transaction (one of its steps failed
//! between BEGIN and COMMIT), so the stream is left clean by the request
//! itself, whatever becomes of the answer; the request asks, last, whether the
//! stream is outside any transaction, and only then is it kept again (one
//! still inside is closed at once, which rolls it back).
//! The server drops a stream idle for 10 seconds; a stream idle for
//! `STREAM_IDLE` is not used again, and a request on a stream the server no
//! longer knows (expired, or a restarted server) is sent again on a new one:
//! the server ran nothing of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prost::Message;

use super::wire::{Answer, Sent, Wire};
use super::{proto, Batch, Outcome};
use crate::error::{Error, Result};

const PIPELINE: &str = "/v3-protobuf/pipeline";
/// Streams kept for reuse; more are let go (the server drops them).
const STREAMS: usize = 8;
/// A stream unused for this long is not used again (the server drops one idle
/// for 10 seconds).
const STREAM_IDLE: Duration = Duration::from_secs(5);

pub(crate) struct Client {
    wire: Wire,
    /// `/v3-protobuf/pipeline`, with the URL's query string.
    path: String,
    /// `Authorization: Bearer <token>`; never printed.
    auth: Option<String>,
    /// Streams outside any transaction, the most recently used last.
    streams: Mutex<Vec<Kept>>,
    /// The server asked for a stream's later requests at another URL (its
    /// `base_url`): streams are then not kept, each request closing its own.
    redirected: AtomicBool,
}

/// A stream kept open between requests.
struct Kept {
    baton: String,
    used: Instant,
}

/// A batch sent by `start`, whose outcome is still to be read.
pub(crate) struct Started {
    sent: Sent,
    /// The encoded requests, sent again on a new stream if the kept one was lost.
    requests: Vec<u8>,
    kept: bool,
}

/// A stream left open by `begin`, holding its transaction until `finish` or
/// `abandon`.
pub(crate) struct Open {
    baton: String,
    /// Where the server asked the stream's next request to go.
    elsewhere: Option<Client>,
}

impl Client {
    /// A client for the server at `url` (`http://`, `https://` or `libsql://`).
    pub fn new(url: &str, token: Option<&str>) -> Result<Self> {
        let auth = match token.filter(|t| !t.is_empty()) {
            Some(token) if token.bytes().any(|b| b.is_ascii_control()) => {
                return Err(Error::invalid("the auth token holds characters an HTTP header cannot carry"));
            }
            Some(token) => Some(format!("Authorization: Bearer {token}")),
            None => None,
        };
        Self::with_auth(url, auth)
    }

    /// `new`, with the `Authorization` header line already made.
    fn with_auth(url: &str, auth: Option<String>) -> Result<Self> {
        let (https, host, port, path) = split_url(url)?;
        Ok(Self {
            wire: Wire::new(https, &host, port)?,
            path,
            auth,
            streams: Mutex::default(),
            redirected: AtomicBool::new(false),
        })
    }

    /// Runs `batch` on a kept stream (or a new one), which stays open.
    pub fn run(&self, batch: Batch) -> Result<Outcome> {
        let started = self.start(batch)?;
        self.outcome(started)
    }

    /// Runs `batch` and leaves its stream (and any transaction it began) open.
    pub fn begin(&self, batch: Batch) -> Result<(Outcome, Open)> {
        let requests = encode(vec![batch.into_request()]);
        let kept = self.take_stream();
        let sent = self.write(kept.as_deref(), &requests)?;
        let mut response = self.answer(sent, kept.is_some(), &requests)?;
        let elsewhere = self.elsewhere(&mut response);
        let open = response.baton.take().map(|baton| Open { baton, elsewhere });
        match (outcome(&mut response, 0), open) {
            (Ok(outcome), Some(open)) => Ok((outcome, open)),
            (Ok(_), None) => Err(Error::hrana("stream closed: `the server gave no baton`".into())),
            (Err(err), open) => {
                if let Some(open) = open {
                    self.abandon(open);
                }
                Err(err)
            }
        }
    }

    /// Runs `batch` on the stream `open`, which is kept if `batch` ended its
    /// transaction, and closed otherwise (rolling it back).
    pub fn finish(&self, open: Open, mut batch: Batch) -> Result<Outcome> {
        batch.push_rollback();
        if let Some(via) = &open.elsewhere {
            let mut response = via.send(Some(&open.baton), vec![batch.into_request(), close()])?;
            return outcome(&mut response, 0);
        }
        let mut response = self.send(Some(&open.baton), vec![batch.into_request(), autocommit()])?;
        self.settle(&mut response, 1);
        outcome(&mut response, 0)
    }

    /// Closes the stream `open`, rolling back what it did not commit; a
    /// failure is left to the server, which drops idle streams.
    pub fn abandon(&self, open: Open) {
        let via = open.elsewhere.as_ref().unwrap_or(self);
        let _ = via.send(Some(&open.baton), vec![close()]);
    }

    /// `run`'s first half: `batch` is sent, its outcome not yet read.
    pub fn start(&self, mut batch: Batch) -> Result<Started> {
        batch.push_rollback();
        if self.redirected.load(Ordering::Relaxed) {
            let requests = encode(vec![batch.into_request(), close()]);
            let sent = self.write(None, &requests)?;
            return Ok(Started { sent, requests, kept: false });
        }
        let requests = encode(vec![batch.into_request(), autocommit()]);
        let kept = self.take_stream();
        let sent = self.write(kept.as_deref(), &requests)?;
        Ok(Started { sent, requests, kept: kept.is_some() })
    }

    /// `run`'s second half.
    pub fn outcome(&self, started: Started) -> Result<Outcome> {
        let mut response = self.answer(started.sent, started.kept, &started.requests)?;
        self.settle(&mut response, 1);
        outcome(&mut response, 0)
    }

    /// The answer to `requests`, sent on a kept stream if `kept`: sent again
    /// on a new stream if the server no longer knew that one.
    fn answer(&self, sent: Sent, kept: bool, requests: &[u8]) -> Result<proto::PipelineResponse> {
        let mut answer = self.wire.receive(sent)?;
        if kept && lost_stream(&answer) {
            answer = self.wire.receive(self.write(None, requests)?)?;
        }
        decode(answer)
    }

    /// The most recently used kept stream, unless it has been idle too long
    /// (then so have the others).
    fn take_stream(&self) -> Option<String> {
        if self.redirected.load(Ordering::Relaxed) {
            return None;
        }
        let mut streams = self.streams.lock();
        let kept = streams.pop()?;
        if kept.used.elapsed() < STREAM_IDLE {
            Some(kept.baton)
        } else {
            streams.clear();
            None
        }
    }

    /// Keeps the stream `response` left open if request `at` found it outside
    /// any transaction; closes it otherwise, which rolls back what it holds
    /// (a batch's own last step has rolled back already, unless it failed).
    /// Beyond `STREAMS` kept, or on a server that redirects streams, it is
    /// closed too.
    fn settle(&self, response: &mut proto::PipelineResponse, at: usize) {
        let Some(baton) = response.baton.take() else { return };
        let elsewhere = self.elsewhere(response);
        let idle = matches!(
            response.results.get(at).and_then(|r| r.outcome.as_ref()),
            Some(proto::Outcome::Ok(proto::StreamResponse {
                response: Some(proto::Response::GetAutocommit(proto::GetAutocommitResponse {
                    is_autocommit: true
                })),
            }))
        );
        if idle && elsewhere.is_none() {
            let mut streams = self.streams.lock();
            if streams.len() < STREAMS {
                streams.push(Kept { baton, used: Instant::now() });
                return;
            }
        }
        let _ = elsewhere.as_ref().unwrap_or(self).send(Some(&baton), vec![close()]);
    }

    /// A client for the server a response asked its stream's next request to go to.
    fn elsewhere(&self, response: &mut proto::PipelineResponse) -> Option<Client> {
        let base = response.base_url.take()?;
        self.redirected.store(true, Ordering::Relaxed);
        match Client::with_auth(&base, self.auth.clone()) {
            Ok(client) => Some(client),
            Err(err) => {
                log::warn!("the server asked for requests at a URL that cannot be used: {err}");
                None
            }
        }
    }

    fn send(
        &self,
        baton: Option<&str>,
        requests: Vec<proto::StreamRequest>,
    ) -> Result<proto::PipelineResponse> {
        let sent = self.write(baton, &encode(requests))?;
        decode(self.wire.receive(sent)?)
    }

    /// Sends the encoded `requests` on the stream `baton` (a new one for `None`).
    fn write(&self, baton: Option<&str>, requests: &[u8]) -> Result<Sent> {
        // A message's fields may come in any order and in parts: the baton,
        // then the requests encoded once.
        let mut body =
            proto::PipelineRequest { baton: baton.map(str::to_owned), requests: Vec::new() }.encode_to_vec();
        body.extend_from_slice(requests);
        let mut headers = vec!["Content-Type: application/x-protobuf"];
        if let Some(auth) = &self.auth {
            headers.push(auth);
        }
        self.wire.send(&self.path, &headers, &body)
    }
}

impl Drop for Client {
    /// Closes the kept streams on a thread of their own, so that a server that
    /// cannot be reached does not hold up the close.
    fn drop(&mut self) {
        let streams = std::mem::take(&mut *self.streams.lock());
        if streams.is_empty() {
            return;
        }
        let closer = Client {
            wire: self.wire.detach(),
            path: self.path.clone(),
            auth: self.auth.clone(),
            streams: Mutex::default(),
            redirected: AtomicBool::new(true),
        };
        let _ = std::thread::Builder::new().name("contextforge-close".into()).spawn(move || {
            // The newest first: an older one may have expired already. Only a
            // server that cannot be reached ends the loop.
            for kept in streams.into_iter().rev() {
                let requests = encode(vec![close()]);
                let answered =
                    closer.write(Some(&kept.baton), &requests).and_then(|s| closer.wire.receive(s));
                if answered.is_err() {
                    break;
                }
            }
        });
    }
}

/// Whether the server answered that it does not know the request's stream:
/// it expired, or the server restarted. Nothing of the request ran.
fn lost_stream(answer: &Answer) -> bool {
    answer.status == 400 && {
        let body = String::from_utf8_lossy(&answer.body);
        body.contains("STREAM_EXPIRED") || body.contains("invalid baton")
    }
}

/// `requests` as a pipeline request's encoded field (without a baton).
fn encode(requests: Vec<proto::StreamRequest>) -> Vec<u8> {
    proto::PipelineRequest { baton: None, requests }.encode_to_vec()
}

fn decode(answer: Answer) -> Result<proto::PipelineResponse> {
    if answer.status != 200 {
        let text = String::from_utf8_lossy(&answer.body);
        return Err(Error::hrana(format!(
            "api error: `status={} {}, body={text}`",
            answer.status,
            reason(answer.status)
        )));
    }
    proto::PipelineResponse::decode(answer.body.as_slice())
        .map_err(|err| Error::hrana(format!("unexpected response: `{err}`")))
}

/// The reason phrase of the statuses a server answers with.
fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

fn close() -> proto::StreamRequest {
    proto::StreamRequest { request: Some(proto::Request::Close(proto::Empty {})) }
}

fn autocommit() -> proto::StreamRequest {
    proto::StreamRequest { request: Some(proto::Request::GetAutocommit(proto::Empty {})) }
}

/// The batch outcome of request `index` in `response`.
fn outcome(response: &mut proto::PipelineResponse, index: usize) -> Result<Outcome> {
    let result = response.results.get_mut(index).and_then(|r| r.outcome.take());
    match result {
        Some(proto::Outcome::Ok(proto::StreamResponse { response: Some(proto::Response::Batch(batch)) })) => {
            Outcome::of(batch.result)
        }
        Some(proto::Outcome::Error(err)) => Err(Error::hrana(format!(
            "stream error: `Error {{ message: {:?}, code: {:?} }}`",
            err.message, err.code
        ))),
        _ => Err(Error::hrana("unexpected response: `no batch result`".into())),
    }
}

/// `(https, host, port, path)` for `url`: `libsql://` is served over TLS, and
/// a query string is kept after the pipeline's path.
fn split_url(url: &str) -> Result<(bool, String, Option<u16>, String)> {
    let bad = |why: &str| Error::invalid(format!("{url:?} is not a server URL: {why}"));
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("libsql://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(bad("it needs http://, https:// or libsql://"));
    };
    let (before_query, query) = match rest.find('?') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    let (authority, base) = match before_query.find('/') {
        Some(at) => (&before_query[..at], before_query[at..].trim_end_matches('/')),
        None => (before_query, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("it names no host"));
    }
    let (host, port) = match authority.rfind(':') {
        Some(at) if !authority[at..].contains(']') => {
            let port = authority[at + 1..].parse::<u16>().map_err(|_| bad("its port is not a number"))?;
            (&authority[..at], Some(port))
        }
        _ => (authority, None),
    };
    if host.is_empty() {
        return Err(bad("it names no host"));
    }
    Ok((https, host.to_owned(), port, format!("{base}{PIPELINE}{query}")))
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn server_urls() {
        let split = |s: &str| split_url(s).expect("a URL");
        assert_eq!(
            split("http://127.0.0.1:8080"),
            (false, "127.0.0.1".into(), Some(8080), "/v3-protobuf/pipeline".into())
        );
        assert_eq!(split("http://127.0.0.1:8080/").3, "/v3-protobuf/pipeline");
        assert_eq!(
            split("libsql://db.example.com"),
            (true, "db.example.com".into(), None, "/v3-protobuf/pipeline".into())
        );
        assert_eq!(
            split("https://h/base/?x=1"),
            (true, "h".into(), None, "/base/v3-protobuf/pipeline?x=1".into())
        );
        assert_eq!(split("http://[::1]:9000").1, "[::1]");
        assert!(split_url("ftp://h").is_err() && split_url("http://:80").is_err());
    }
}
