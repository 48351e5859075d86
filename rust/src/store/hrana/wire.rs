//! HTTP/1.1 POSTs over kept-alive sockets, on the calling thread.
//!
//! A request sent through an async client crosses threads four times on its
//! way out and back (the caller, the client's connection task, the reactor,
//! the caller again); on a small machine each wake-up costs more than the
//! server's own work on a short statement. Here the thread that asks writes
//! the request and reads the answer on a blocking socket, and the kernel wakes
//! it itself. `https://` runs rustls over the same socket, with the platform's
//! roots and `SSL_CERT_FILE` (as libSQL's own client).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use crate::error::{Error, Result};

/// How long a connection may take, and a request's answer may keep the
/// caller waiting, before the call fails (retryable).
const CONNECT: Duration = Duration::from_secs(10);
const ANSWER: Duration = Duration::from_secs(120);
/// Idle connections kept for reuse.
const KEPT: usize = 16;

/// Where requests go: one server (scheme, host and port).
pub(super) struct Wire {
    host: String,
    port: u16,
    /// The `Host` header.
    authority: String,
    tls: Option<Arc<ClientConfig>>,
    idle: Mutex<Vec<Link>>,
}

/// One connection to the server.
struct Link {
    stream: Stream,
    /// Read past the end of the last answer (never, with one request at a time).
    buf: Vec<u8>,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A request written, whose answer is still to be read (by `Wire::receive`).
pub(super) struct Sent(Link);

/// A server's answer: its status and body.
pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Wire {
    /// For `scheme://host[:port]` (`http` or `https`).
    pub fn new(https: bool, host: &str, port: Option<u16>) -> Result<Self> {
        let port = port.unwrap_or(if https { 443 } else { 80 });
        let bare = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        let authority =
            if port == if https { 443 } else { 80 } { host.to_owned() } else { format!("{host}:{port}") };
        let tls = if https { Some(tls_config()?) } else { None };
        Ok(Self { host: bare, port, authority, tls, idle: Mutex::new(Vec::new()) })
    }

    /// POSTs `body` to `path` with `headers` (each a full `Name: value` line
    /// without its CRLF): the request is written, and `receive` reads its
    /// answer. A kept connection the server closed meanwhile is found before
    /// anything is written, and another one is used.
    pub fn send(&self, path: &str, headers: &[&str], body: &[u8]) -> Result<Sent> {
        let mut request = Vec::with_capacity(body.len() + 256);
        let _ = write!(
            request,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        for header in headers {
            request.extend_from_slice(header.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body);
        let mut link = match self.kept() {
            Some(link) => link,
            None => self.connect()?,
        };
        link.stream.write_all(&request).and_then(|()| link.stream.flush()).map_err(|err| lost(&err))?;
        Ok(Sent(link))
    }

    /// The answer to a request `send` wrote.
    pub fn receive(&self, sent: Sent) -> Result<Answer> {
        let mut link = sent.0;
        let (answer, reusable) = read_answer(&mut link).map_err(|err| lost(&err))?;
        if reusable {
            let mut idle = self.idle.lock();
            if idle.len() < KEPT {
                idle.push(link);
            }
        }
        Ok(answer)
    }

    /// A `Wire` to the same server that takes over the idle connections.
    pub fn detach(&self) -> Self {
        Self {
            host: self.host.clone(),
            port: self.port,
            authority: self.authority.clone(),
            tls: self.tls.clone(),
            idle: Mutex::new(std::mem::take(&mut *self.idle.lock())),
        }
    }

    /// An idle connection the server has not closed.
    fn kept(&self) -> Option<Link> {
        loop {
            let link = self.idle.lock().pop()?;
            if open(link.stream.socket()) {
                return Some(link);
            }
        }
    }

    fn connect(&self) -> Result<Link> {
        let addrs = (self.host.as_str(), self.port).to_socket_addrs().map_err(|err| lost(&err))?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT) {
                Ok(socket) => {
                    socket.set_nodelay(true).map_err(|err| lost(&err))?;
                    socket.set_read_timeout(Some(ANSWER)).map_err(|err| lost(&err))?;
                    socket.set_write_timeout(Some(ANSWER)).map_err(|err| lost(&err))?;
                    let stream = match &self.tls {
                        None => Stream::Plain(socket),
                        Some(config) => {
                            let name = ServerName::try_from(self.host.clone()).map_err(|err| {
                                Error::invalid(format!("{:?} is not a host name: {err}", self.host))
                            })?;
                            let conn = ClientConnection::new(Arc::clone(config), name)
                                .map_err(|err| Error::hrana(format!("http error: `{err}`")))?;
                            Stream::Tls(Box::new(StreamOwned::new(conn, socket)))
                        }
                    };
                    return Ok(Link { stream, buf: Vec::new() });
                }
                Err(err) => last = Some(err),
            }
        }
        let err = last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address for the host"));
        Err(lost(&err))
    }
}

/// Whether a kept socket is still open: no data and no end of stream wait on it.
fn open(socket: &TcpStream) -> bool {
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a local, on a socket this process owns.
    let got = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            std::ptr::addr_of_mut!(byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

/// Reads the answer to the request just written; whether the connection may
/// be reused.
fn read_answer(link: &mut Link) -> io::Result<(Answer, bool)> {
    let buf = &mut link.buf;
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let (status, head_len, length, chunked, close) = loop {
        let n = link.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let status = response.code.unwrap_or(0);
                let (mut length, mut chunked, mut close) = (None, false, false);
                for h in response.headers.iter() {
                    let value = std::str::from_utf8(h.value).unwrap_or("").trim();
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = value.parse::<usize>().ok();
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        chunked = value.to_ascii_lowercase().contains("chunked");
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        close = value.eq_ignore_ascii_case("close");
                    }
                }
                break (status, head_len, length, chunked, close);
            }
            Ok(httparse::Status::Partial) => {}
            Err(err) => return Err(io::Error::new(io::ErrorKind::InvalidData, err)),
        }
    };
    let mut rest = buf.split_off(head_len);
    let body = if chunked {
        dechunk(&mut link.stream, rest)?
    } else if let Some(length) = length {
        while rest.len() < length {
            let n = link.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the answer was cut off"));
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(length);
        rest
    } else {
        link.stream.read_to_end(&mut rest)?;
        return Ok((Answer { status, body: rest }, false));
    };
    Ok((Answer { status, body }, !close))
}

/// A chunked body, starting with `have` already read.
fn dechunk(stream: &mut Stream, mut have: Vec<u8>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut at = 0;
    let mut more = |have: &mut Vec<u8>| -> io::Result<()> {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the answer was cut off"));
        }
        have.extend_from_slice(&chunk[..n]);
        Ok(())
    };
    loop {
        let line_end = loop {
            if let Some(i) = have[at..].windows(2).position(|w| w == b"\r\n") {
                break at + i;
            }
            more(&mut have)?;
        };
        let line = std::str::from_utf8(&have[at..line_end]).unwrap_or("");
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a bad chunk size"))?;
        at = line_end + 2;
        while have.len() < at + size + 2 {
            more(&mut have)?;
        }
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&have[at..at + size]);
        at += size + 2;
    }
}

/// rustls with the platform's roots, and `SSL_CERT_FILE`'s when it is set.
fn tls_config() -> Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs()
        .map_err(|err| Error::plain_storage(format!("cannot load the TLS root certificates: {err}")))?;
    let (added, _) = roots.add_parsable_certificates(found);
    if added == 0 {
        return Err(Error::plain_storage(
            "no TLS root certificate was found: give a PEM bundle in the SSL_CERT_FILE environment variable",
        ));
    }
    Ok(Arc::new(ClientConfig::builder().with_root_certificates(roots).with_no_client_auth()))
}

/// A failed exchange: a lost connection (retryable), or a certificate that
/// is not trusted.
fn lost(err: &io::Error) -> Error {
    Error::hrana(format!("http error: `{err}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined() {
        // A body read in full already needs no more reads from the stream.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let socket = TcpStream::connect(listener.local_addr().expect("an address")).expect("connects");
        let mut stream = Stream::Plain(socket);
        let body =
            dechunk(&mut stream, b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n".to_vec()).expect("a body");
        assert_eq!(body, b"hello world");
    }
}
