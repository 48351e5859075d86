//! The client's half of Hrana's protobuf encoding (`/v3-protobuf/pipeline`):
//! the requests we send and the responses we read, nothing else. Field numbers
//! follow the server's (`libsql-hrana`'s `protobuf.rs`), whose own types encode
//! only what a server sends and decode only what it receives.

use std::collections::HashMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct PipelineRequest {
    #[prost(string, optional, tag = "1")]
    pub baton: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub requests: Vec<StreamRequest>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamRequest {
    #[prost(oneof = "Request", tags = "1, 3, 8")]
    pub request: Option<Request>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Request {
    #[prost(message, tag = "1")]
    Close(Empty),
    #[prost(message, tag = "3")]
    Batch(BatchRequest),
    /// Whether the stream is outside any transaction.
    #[prost(message, tag = "8")]
    GetAutocommit(Empty),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Empty {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchRequest {
    #[prost(message, required, tag = "1")]
    pub batch: Batch,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Batch {
    #[prost(message, repeated, tag = "1")]
    pub steps: Vec<BatchStep>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchStep {
    #[prost(message, optional, tag = "1")]
    pub condition: Option<BatchCond>,
    #[prost(message, required, tag = "2")]
    pub stmt: Stmt,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchCond {
    #[prost(oneof = "Cond", tags = "1")]
    pub cond: Option<Cond>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Cond {
    /// The step runs only if step N succeeded.
    #[prost(uint32, tag = "1")]
    Ok(u32),
    /// The step runs only if the inner condition does not hold.
    #[prost(message, tag = "3")]
    Not(NotCond),
}

/// The one condition we negate: the stream is outside any transaction (a
/// `BatchCond` holding only its field 6).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NotCond {
    #[prost(message, optional, tag = "6")]
    pub is_autocommit: Option<Empty>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Stmt {
    #[prost(string, optional, tag = "1")]
    pub sql: Option<String>,
    #[prost(message, repeated, tag = "3")]
    pub args: Vec<Value>,
    #[prost(bool, optional, tag = "5")]
    pub want_rows: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "Cell", tags = "1, 2, 3, 4, 5")]
    pub cell: Option<Cell>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Cell {
    #[prost(message, tag = "1")]
    Null(Empty),
    #[prost(sint64, tag = "2")]
    Integer(i64),
    #[prost(double, tag = "3")]
    Float(f64),
    #[prost(string, tag = "4")]
    Text(String),
    #[prost(bytes = "vec", tag = "5")]
    Blob(Vec<u8>),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PipelineResponse {
    #[prost(string, optional, tag = "1")]
    pub baton: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub base_url: Option<String>,
    #[prost(message, repeated, tag = "3")]
    pub results: Vec<StreamResult>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamResult {
    #[prost(oneof = "Outcome", tags = "1, 2")]
    pub outcome: Option<Outcome>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Outcome {
    #[prost(message, tag = "1")]
    Ok(StreamResponse),
    #[prost(message, tag = "2")]
    Error(ServerError),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamResponse {
    #[prost(oneof = "Response", tags = "1, 3, 8")]
    pub response: Option<Response>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Response {
    #[prost(message, tag = "1")]
    Close(Empty),
    #[prost(message, tag = "3")]
    Batch(BatchResponse),
    #[prost(message, tag = "8")]
    GetAutocommit(GetAutocommitResponse),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetAutocommitResponse {
    #[prost(bool, tag = "1")]
    pub is_autocommit: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchResponse {
    #[prost(message, required, tag = "1")]
    pub result: BatchResult,
}

/// Each step's result or error, by step number (absent: the step did not run).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchResult {
    #[prost(map = "uint32, message", tag = "1")]
    pub step_results: HashMap<u32, StmtResult>,
    #[prost(map = "uint32, message", tag = "2")]
    pub step_errors: HashMap<u32, ServerError>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StmtResult {
    #[prost(message, repeated, tag = "2")]
    pub rows: Vec<Row>,
    #[prost(uint64, tag = "3")]
    pub affected_row_count: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Row {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerError {
    #[prost(string, tag = "1")]
    pub message: String,
    #[prost(string, tag = "2")]
    pub code: String,
}
