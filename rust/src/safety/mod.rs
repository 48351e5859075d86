//! Safety checks on memory content, which goes back to a model verbatim.
//!
//! [`injection`] flags stored prompt injection ([`detect`]) and removes hidden
//! characters before untrusted text is rendered ([`strip_invisible`]).

pub mod injection;

pub use injection::{detect, strip_invisible, Risk};
