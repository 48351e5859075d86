//! Pipeline requests over HTTP(S), with the connector libSQL's own client
//! uses (rustls, the platform's roots and `SSL_CERT_FILE`, `http://` too).

use bytes::Bytes;
use hyper::client::HttpConnector;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Body, Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use prost::Message;

use super::{proto, Batch, Outcome};
use crate::error::{Error, Result};

const PIPELINE: &str = "/v3-protobuf/pipeline";

pub(crate) struct Client {
    http: hyper::Client<HttpsConnector<HttpConnector>, Body>,
    pipeline: Uri,
    /// `Bearer <token>`, marked sensitive; never printed.
    auth: Option<HeaderValue>,
}

/// A stream left open by `begin`, holding its transaction until `finish` or
/// `abandon`.
pub(crate) struct Open {
    baton: String,
    url: Uri,
}

impl Client {
    /// A client for the server at `url` (`http://`, `https://` or `libsql://`).
    pub fn new(url: &str, token: Option<&str>) -> Result<Self> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|err| Error::plain_storage(format!("cannot load the TLS root certificates: {err}")))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let auth = match token.filter(|t| !t.is_empty()) {
            Some(token) => {
                let mut value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
                    Error::invalid("the auth token holds characters an HTTP header cannot carry")
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Self { http: hyper::Client::builder().build(connector), pipeline: pipeline_url(url)?, auth })
    }

    /// Runs `batch` in a stream of its own, closed by the same request.
    pub async fn run(&self, batch: Batch) -> Result<Outcome> {
        let mut response = self.send(&self.pipeline, None, vec![batch.into_request(), close()]).await?;
        outcome(&mut response, 0)
    }

    /// Runs `batch` and leaves its stream (and any transaction it began) open.
    pub async fn begin(&self, batch: Batch) -> Result<(Outcome, Open)> {
        let mut response = self.send(&self.pipeline, None, vec![batch.into_request()]).await?;
        let baton = response.baton.take();
        let url = match response.base_url.take() {
            Some(base) => pipeline_url(&base)?,
            None => self.pipeline.clone(),
        };
        let open = baton.map(|baton| Open { baton, url });
        match (outcome(&mut response, 0), open) {
            (Ok(outcome), Some(open)) => Ok((outcome, open)),
            (Ok(_), None) => Err(Error::hrana("stream closed: `the server gave no baton`".into())),
            (Err(err), open) => {
                if let Some(open) = open {
                    self.abandon(open).await;
                }
                Err(err)
            }
        }
    }

    /// Runs `batch` on the stream `open` and closes it.
    pub async fn finish(&self, open: Open, batch: Batch) -> Result<Outcome> {
        let mut response =
            self.send(&open.url, Some(open.baton), vec![batch.into_request(), close()]).await?;
        outcome(&mut response, 0)
    }

    /// Closes the stream `open`, rolling back what it did not commit; a
    /// failure is left to the server, which drops idle streams.
    pub async fn abandon(&self, open: Open) {
        let _ = self.send(&open.url, Some(open.baton), vec![close()]).await;
    }

    async fn send(
        &self,
        url: &Uri,
        baton: Option<String>,
        requests: Vec<proto::StreamRequest>,
    ) -> Result<proto::PipelineResponse> {
        let body = proto::PipelineRequest { baton, requests }.encode_to_vec();
        let mut request = Request::post(url.clone()).header(CONTENT_TYPE, "application/x-protobuf");
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let request = request.body(Body::from(body)).map_err(|err| Error::Internal(err.to_string()))?;
        let response = self.http.request(request).await.map_err(transport)?;
        let status = response.status();
        let body: Bytes = hyper::body::to_bytes(response.into_body()).await.map_err(transport)?;
        if status != StatusCode::OK {
            let text = String::from_utf8_lossy(&body);
            return Err(Error::hrana(format!("api error: `status={status}, body={text}`")));
        }
        proto::PipelineResponse::decode(body)
            .map_err(|err| Error::hrana(format!("unexpected response: `{err}`")))
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

fn transport(err: hyper::Error) -> Error {
    Error::hrana(format!("http error: `{err}`"))
}

/// `{url}/v3-protobuf/pipeline`, keeping a query string; `libsql://` is
/// served over TLS.
fn pipeline_url(url: &str) -> Result<Uri> {
    let url = match url.strip_prefix("libsql://") {
        Some(rest) => format!("https://{rest}"),
        None => url.to_owned(),
    };
    let (base, query) = match url.find('?') {
        Some(at) => (&url[..at], &url[at..]),
        None => (url.as_str(), ""),
    };
    format!("{}{PIPELINE}{query}", base.trim_end_matches('/'))
        .parse()
        .map_err(|err| Error::invalid(format!("{url:?} is not a server URL: {err}")))
}

#[cfg(test)]
mod tests {
    use super::pipeline_url;

    #[test]
    fn pipeline_urls() {
        let url = |s: &str| pipeline_url(s).expect("a URL").to_string();
        assert_eq!(url("http://127.0.0.1:8080"), "http://127.0.0.1:8080/v3-protobuf/pipeline");
        assert_eq!(url("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/v3-protobuf/pipeline");
        assert_eq!(url("libsql://db.example.com"), "https://db.example.com/v3-protobuf/pipeline");
        assert_eq!(url("https://h/?x=1"), "https://h/v3-protobuf/pipeline?x=1");
    }
}
