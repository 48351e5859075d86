//! Pipeline requests to a server (`wire.rs` carries them).

use prost::Message;

use super::wire::{Sent, Wire};
use super::{proto, Batch, Outcome};
use crate::error::{Error, Result};

const PIPELINE: &str = "/v3-protobuf/pipeline";

pub(crate) struct Client {
    wire: Wire,
    /// `/v3-protobuf/pipeline`, with the URL's query string.
    path: String,
    /// `Authorization: Bearer <token>`; never printed.
    auth: Option<String>,
}

/// A batch sent by `start`, whose outcome is still to be read.
pub(crate) struct Started(Sent);

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
        let (https, host, port, path) = split_url(url)?;
        Ok(Self { wire: Wire::new(https, &host, port)?, path, auth })
    }

    /// Runs `batch` in a stream of its own, closed by the same request.
    pub fn run(&self, batch: Batch) -> Result<Outcome> {
        let mut response = self.send(None, vec![batch.into_request(), close()])?;
        outcome(&mut response, 0)
    }

    /// Runs `batch` and leaves its stream (and any transaction it began) open.
    pub fn begin(&self, batch: Batch) -> Result<(Outcome, Open)> {
        let mut response = self.send(None, vec![batch.into_request()])?;
        let elsewhere = match response.base_url.take() {
            Some(base) => Some(Client::new(&base, None).map(|c| Client { auth: self.auth.clone(), ..c })?),
            None => None,
        };
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

    /// Runs `batch` on the stream `open` and closes it.
    pub fn finish(&self, open: Open, batch: Batch) -> Result<Outcome> {
        let via = open.elsewhere.as_ref().unwrap_or(self);
        let mut response = via.send(Some(open.baton), vec![batch.into_request(), close()])?;
        outcome(&mut response, 0)
    }

    /// Closes the stream `open`, rolling back what it did not commit; a
    /// failure is left to the server, which drops idle streams.
    pub fn abandon(&self, open: Open) {
        let via = open.elsewhere.as_ref().unwrap_or(self);
        let _ = via.send(Some(open.baton), vec![close()]);
    }

    /// `run`'s first half: `batch` is sent, its outcome not yet read.
    pub fn start(&self, batch: Batch) -> Result<Started> {
        self.write(None, vec![batch.into_request(), close()]).map(Started)
    }

    /// `run`'s second half.
    pub fn outcome(&self, started: Started) -> Result<Outcome> {
        outcome(&mut self.read(started.0)?, 0)
    }

    fn send(
        &self,
        baton: Option<String>,
        requests: Vec<proto::StreamRequest>,
    ) -> Result<proto::PipelineResponse> {
        let sent = self.write(baton, requests)?;
        self.read(sent)
    }

    fn write(&self, baton: Option<String>, requests: Vec<proto::StreamRequest>) -> Result<Sent> {
        let body = proto::PipelineRequest { baton, requests }.encode_to_vec();
        let mut headers = vec!["Content-Type: application/x-protobuf"];
        if let Some(auth) = &self.auth {
            headers.push(auth);
        }
        self.wire.send(&self.path, &headers, &body)
    }

    fn read(&self, sent: Sent) -> Result<proto::PipelineResponse> {
        let answer = self.wire.receive(sent)?;
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
