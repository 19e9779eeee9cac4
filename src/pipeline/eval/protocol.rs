//! The eval workers' wire format (docs/eval-harness.md, "Socket and framing"): every message is
//! a 4-byte big-endian header length, that many bytes of JSON, then `header.payload_bytes` raw
//! bytes. The orchestrator sends a request and reads exactly one reply; `{"ok": false, …}` is
//! the worker's typed error. A worker can be hostile: every length is capped before anything is
//! allocated, and every request has a time limit and stops when the eval is cancelled.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// The largest JSON header accepted (a spec list of thousands of arrays is far below it).
pub const MAX_HEADER_BYTES: u32 = 64 << 20;
/// The largest payload accepted by default (the arrays of one call, on the CPU transport).
pub const DEFAULT_MAX_PAYLOAD_BYTES: u64 = 16 << 30;

/// One message: the JSON header and its payload (empty when there is none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    pub header: Map<String, Value>,
    pub payload: Vec<u8>,
}

impl Message {
    /// A request `{"op": op}` with the fields of `fields` (an object) added.
    pub fn request(op: &str, fields: Value) -> Message {
        let mut header = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        header.insert("op".into(), Value::from(op));
        Message {
            header,
            payload: Vec::new(),
        }
    }

    pub fn with_payload(mut self, payload: Vec<u8>) -> Message {
        self.payload = payload;
        self
    }

    /// A header field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.header.get(key)
    }

    /// The operation of a request (`setup`, `call`, …), for messages.
    pub fn op(&self) -> &str {
        self.get("op").and_then(Value::as_str).unwrap_or("?")
    }
}

/// The error a worker answered with (`{"ok": false, "error": {…}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerError {
    /// `raised`, `bad_output`, `device_fault`, `compile_error` or `protocol`.
    pub kind: String,
    pub message: String,
    pub traceback: Option<String>,
}

/// Why a request got no usable reply.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("the worker closed the connection (it exited or crashed) during `{op}`")]
    Eof { op: String },
    #[error("the worker did not answer `{op}` within {:.0} s", after.as_secs_f64())]
    Timeout { op: String, after: Duration },
    #[error("the eval was cancelled during `{op}`")]
    Cancelled { op: String },
    #[error("socket error during `{op}`: {source}")]
    Io {
        op: String,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed message from the worker during `{op}`: {why}")]
    Malformed { op: String, why: String },
    /// A payload over the connection's limit, refused from its length before it was read.
    #[error(
        "the worker sent a payload of {bytes} bytes during `{op}`, over the {limit}-byte limit"
    )]
    TooLarge { op: String, bytes: u64, limit: u64 },
    #[error("the worker answered `{op}` with an error ({}): {}", error.kind, error.message)]
    Worker { op: String, error: WorkerError },
}

impl ProtocolError {
    /// The worker's own error, when it answered with one.
    pub fn worker_error(&self) -> Option<&WorkerError> {
        match self {
            ProtocolError::Worker { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why reading one frame failed (before the operation's name is attached).
#[derive(Debug)]
enum FrameError {
    Eof,
    Io(std::io::Error),
    Malformed(String),
    TooLarge { bytes: u64, limit: u64 },
}

/// Write one message; `payload_bytes` is set from the payload.
pub async fn write_message<W: AsyncWrite + Unpin>(
    out: &mut W,
    message: &Message,
) -> std::io::Result<()> {
    let mut header = message.header.clone();
    if message.payload.is_empty() {
        header.remove("payload_bytes");
    } else {
        header.insert("payload_bytes".into(), Value::from(message.payload.len()));
    }
    let json = serde_json::to_vec(&Value::Object(header))?;
    let length = u32::try_from(json.len())
        .ok()
        .filter(|&n| n <= MAX_HEADER_BYTES)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a message header of {} bytes is over the {MAX_HEADER_BYTES}-byte limit",
                    json.len()
                ),
            )
        })?;
    out.write_all(&length.to_be_bytes()).await?;
    out.write_all(&json).await?;
    if !message.payload.is_empty() {
        out.write_all(&message.payload).await?;
    }
    out.flush().await
}

/// Read one message; payloads over `max_payload` bytes are refused before any allocation.
async fn read_frame<R: AsyncRead + Unpin>(
    input: &mut R,
    max_payload: u64,
) -> Result<Message, FrameError> {
    let mut length = [0u8; 4];
    if let Err(e) = input.read_exact(&mut length).await {
        return Err(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => FrameError::Eof,
            _ => FrameError::Io(e),
        });
    }
    let length = u32::from_be_bytes(length);
    if length > MAX_HEADER_BYTES {
        return Err(FrameError::Malformed(format!(
            "a header of {length} bytes is over the {MAX_HEADER_BYTES}-byte limit"
        )));
    }
    let mut json = vec![0u8; length as usize];
    read_exact(input, &mut json).await?;
    let header = match serde_json::from_slice::<Value>(&json) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return Err(FrameError::Malformed(
                "the header is not a JSON object".into(),
            ));
        }
        Err(e) => {
            return Err(FrameError::Malformed(format!(
                "the header is not JSON: {e}"
            )));
        }
    };
    let payload_bytes = match header.get("payload_bytes") {
        None | Some(Value::Null) => 0,
        Some(value) => value.as_u64().ok_or_else(|| {
            FrameError::Malformed(format!("`payload_bytes` is {value}, not a byte count"))
        })?,
    };
    if payload_bytes > max_payload {
        return Err(FrameError::TooLarge {
            bytes: payload_bytes,
            limit: max_payload,
        });
    }
    let mut payload = vec![0u8; payload_bytes as usize];
    read_exact(input, &mut payload).await?;
    Ok(Message { header, payload })
}

async fn read_exact<R: AsyncRead + Unpin>(input: &mut R, buf: &mut [u8]) -> Result<(), FrameError> {
    input
        .read_exact(buf)
        .await
        .map(|_| ())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => FrameError::Eof,
            _ => FrameError::Io(e),
        })
}

/// A reply is `{"ok": true, …}` or the worker's error.
fn into_reply(op: &str, reply: Message) -> Result<Message, ProtocolError> {
    match reply.get("ok") {
        Some(Value::Bool(true)) => Ok(reply),
        Some(Value::Bool(false)) => {
            let error = reply.get("error").cloned().unwrap_or(Value::Null);
            let text = |key: &str| error.get(key).and_then(Value::as_str).map(str::to_string);
            Err(ProtocolError::Worker {
                op: op.to_string(),
                error: WorkerError {
                    kind: text("kind").unwrap_or_else(|| "protocol".into()),
                    message: text("message")
                        .unwrap_or_else(|| "the worker gave no error message".into()),
                    traceback: text("traceback"),
                },
            })
        }
        _ => Err(ProtocolError::Malformed {
            op: op.to_string(),
            why: "the reply has no boolean `ok`".into(),
        }),
    }
}

/// The orchestrator's end of one worker's connection.
#[derive(Debug)]
pub struct Connection {
    stream: UnixStream,
    cancel: CancellationToken,
    max_payload: u64,
}

impl Connection {
    /// Requests stop with [`ProtocolError::Cancelled`] when `cancel` fires.
    pub fn new(stream: UnixStream, cancel: CancellationToken) -> Self {
        Connection {
            stream,
            cancel,
            max_payload: DEFAULT_MAX_PAYLOAD_BYTES,
        }
    }

    pub fn with_max_payload(mut self, max_payload: u64) -> Self {
        self.max_payload = max_payload;
        self
    }

    /// The largest payload the next replies may carry (a candidate's: what its outputs can
    /// hold, from the reference's).
    pub fn set_max_payload(&mut self, max_payload: u64) {
        self.max_payload = max_payload;
    }

    /// Send `request` and read its one reply within `limit`. A connection whose request timed
    /// out or was cancelled is out of step: the caller ends the worker.
    pub async fn request(
        &mut self,
        request: &Message,
        limit: Duration,
    ) -> Result<Message, ProtocolError> {
        let op = request.op().to_string();
        let max_payload = self.max_payload;
        let exchange = async {
            write_message(&mut self.stream, request)
                .await
                .map_err(|e| match e.kind() {
                    // The worker is gone: writing to its closed socket says so.
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                        ProtocolError::Eof { op: op.clone() }
                    }
                    _ => ProtocolError::Io {
                        op: op.clone(),
                        source: e,
                    },
                })?;
            match read_frame(&mut self.stream, max_payload).await {
                Ok(reply) => into_reply(&op, reply),
                Err(FrameError::Eof) => Err(ProtocolError::Eof { op: op.clone() }),
                Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    Err(ProtocolError::Eof { op: op.clone() })
                }
                Err(FrameError::Io(source)) => Err(ProtocolError::Io {
                    op: op.clone(),
                    source,
                }),
                Err(FrameError::Malformed(why)) => Err(ProtocolError::Malformed {
                    op: op.clone(),
                    why,
                }),
                Err(FrameError::TooLarge { bytes, limit }) => Err(ProtocolError::TooLarge {
                    op: op.clone(),
                    bytes,
                    limit,
                }),
            }
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ProtocolError::Cancelled { op: op.clone() }),
            answered = tokio::time::timeout(limit, exchange) => {
                answered.unwrap_or_else(|_| Err(ProtocolError::Timeout { op: op.clone(), after: limit }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A worker end that answers each request with `answer(request)`.
    fn fake_worker(
        mut stream: UnixStream,
        answer: impl Fn(Message) -> Option<Message> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Ok(request) = read_frame(&mut stream, u64::MAX).await {
                match answer(request) {
                    Some(reply) => write_message(&mut stream, &reply).await.unwrap(),
                    None => return,
                }
            }
        })
    }

    fn ok(fields: Value) -> Message {
        let mut m = Message::request("x", fields);
        m.header.remove("op");
        m.header.insert("ok".into(), Value::Bool(true));
        m
    }

    #[tokio::test]
    async fn a_request_and_its_reply_carry_header_and_payload() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        fake_worker(theirs, |request| {
            let mut reply = ok(json!({
                "seen_op": request.op(),
                "payload_bytes_seen": request.get("payload_bytes").cloned(),
                "echo": request.get("trial").cloned(),
            }));
            reply.payload = request.payload.iter().rev().copied().collect();
            Some(reply)
        });
        let mut conn = Connection::new(ours, CancellationToken::new());
        let request = Message::request("call", json!({"trial": 7})).with_payload(vec![1, 2, 3]);
        let reply = conn
            .request(&request, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(reply.get("seen_op"), Some(&json!("call")));
        assert_eq!(reply.get("payload_bytes_seen"), Some(&json!(3)));
        assert_eq!(reply.get("echo"), Some(&json!(7)));
        assert_eq!(reply.payload, vec![3, 2, 1]);
        // A reply without payload has none.
        let reply = conn
            .request(&Message::request("bye", json!({})), Duration::from_secs(5))
            .await
            .unwrap();
        assert!(reply.payload.is_empty());
    }

    #[tokio::test]
    async fn the_frame_is_a_big_endian_length_then_json_then_payload() {
        let mut bytes = Vec::new();
        let message = Message::request("setup", json!({})).with_payload(vec![9]);
        write_message(&mut bytes, &message).await.unwrap();
        let length = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        let header: Value = serde_json::from_slice(&bytes[4..4 + length]).unwrap();
        assert_eq!(header, json!({"op": "setup", "payload_bytes": 1}));
        assert_eq!(&bytes[4 + length..], &[9]);
    }

    #[tokio::test]
    async fn a_worker_error_is_typed() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        fake_worker(theirs, |_| {
            let mut reply = Message::default();
            reply.header.insert("ok".into(), json!(false));
            reply.header.insert(
                "error".into(),
                json!({"kind": "raised", "message": "boom", "traceback": "tb"}),
            );
            Some(reply)
        });
        let mut conn = Connection::new(ours, CancellationToken::new());
        let err = conn
            .request(&Message::request("call", json!({})), Duration::from_secs(5))
            .await
            .unwrap_err();
        let worker = err.worker_error().expect("a worker error");
        assert_eq!(worker.kind, "raised");
        assert_eq!(worker.message, "boom");
        assert_eq!(worker.traceback.as_deref(), Some("tb"));
    }

    #[tokio::test]
    async fn a_closed_connection_is_eof() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        fake_worker(theirs, |_| None);
        let mut conn = Connection::new(ours, CancellationToken::new());
        let err = conn
            .request(&Message::request("call", json!({})), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ProtocolError::Eof { ref op } if op == "call"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_silent_worker_times_out_and_a_cancelled_request_stops() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let cancel = CancellationToken::new();
        let mut conn = Connection::new(ours, cancel.clone());
        let err = conn
            .request(
                &Message::request("time", json!({})),
                Duration::from_millis(50),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ProtocolError::Timeout { .. }), "{err}");
        cancel.cancel();
        let err = conn
            .request(
                &Message::request("time", json!({})),
                Duration::from_millis(50),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ProtocolError::Cancelled { .. }), "{err}");
    }

    #[tokio::test]
    async fn oversized_and_malformed_frames_are_refused() {
        // A payload over the limit is refused before it is read.
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        tokio::spawn(async move {
            let _ = read_frame(&mut theirs, u64::MAX).await;
            let mut reply = ok(json!({}));
            reply.payload = vec![0; 100];
            write_message(&mut theirs, &reply).await.unwrap();
        });
        let mut conn = Connection::new(ours, CancellationToken::new()).with_max_payload(10);
        let err = conn
            .request(&Message::request("call", json!({})), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("over the 10-byte limit"), "{err}");

        // A header length over the cap, and a header that is not an object.
        for frame in [
            (MAX_HEADER_BYTES + 1).to_be_bytes().to_vec(),
            [&2u32.to_be_bytes()[..], b"[]"].concat(),
        ] {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            tokio::spawn(async move {
                let _ = read_frame(&mut theirs, u64::MAX).await;
                theirs.write_all(&frame).await.unwrap();
            });
            let mut conn = Connection::new(ours, CancellationToken::new());
            let err = conn
                .request(&Message::request("call", json!({})), Duration::from_secs(5))
                .await
                .unwrap_err();
            assert!(matches!(err, ProtocolError::Malformed { .. }), "{err}");
        }
        // A reply without `ok`.
        let (ours, theirs) = UnixStream::pair().unwrap();
        fake_worker(theirs, |_| Some(Message::default()));
        let mut conn = Connection::new(ours, CancellationToken::new());
        let err = conn
            .request(&Message::request("call", json!({})), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no boolean `ok`"), "{err}");
    }
}
