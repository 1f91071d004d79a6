//! MCP messages as they travel: the stdio framing (one JSON-RPC message per line, `tokio-util`'s
//! delimiter codec), the few fields the gateway reads to route and govern a message (borrowed,
//! the rest never parsed), and the exact text that is relayed (MCP "Transports", stdio).
//!
//! What the gateway does not govern is relayed as the very text it received: keys in their
//! order, numbers as written, unknown fields kept, nothing added. A field the gateway must change
//! (a `_warrant` the server put in a tool result, the progress of a call that was held) is changed
//! in place ([`edit`]), every other key and value left as it was.

use bytes::Bytes;
use futures_util::{Sink, Stream, StreamExt as _};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{AnyDelimiterCodec, FramedRead, FramedWrite};

/// A line longer than this (64 MiB) is refused, and ends the stream.
const MAX_LINE: usize = 64 << 20;

/// One line read from a peer: a JSON text (exactly as sent, without its line end), or why it is
/// not one.
pub(super) type Frame = Result<Box<RawValue>, String>;

/// The messages one peer sends, one per line; the stream ends with the peer's end of output (or
/// a read error). A line that is not JSON is an `Err` item, and the lines after it are still read;
/// blank lines are skipped.
pub(super) fn frames<R: AsyncRead + Unpin + Send + 'static>(read: R) -> impl Stream<Item = Frame> + Unpin + Send {
    let codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), b"\n".to_vec(), MAX_LINE);
    FramedRead::new(read, codec)
        .scan((), |(), chunk| {
            std::future::ready(match chunk {
                Ok(bytes) => Some(parse_line(&bytes)),
                // The codec ends the stream after this.
                Err(tokio_util::codec::AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                    Some(Some(Err(format!("a message longer than {MAX_LINE} bytes"))))
                }
                // A read error ends the stream as its end would.
                Err(_) => None,
            })
        })
        .filter_map(std::future::ready)
        .boxed()
}

/// One line as a message: `None` for a blank line.
fn parse_line(line: &[u8]) -> Option<Frame> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 §8.1 lets a parser ignore a byte order mark.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(serde_json::from_slice::<Box<RawValue>>(line).map_err(|e| format!("not JSON: {e}")))
}

/// Writes messages to a peer, one per line.
pub(super) fn sink<W: AsyncWrite + Unpin + Send + 'static>(
    write: W,
) -> impl Sink<Bytes, Error = std::io::Error> + Unpin {
    FramedWrite::new(write, LineEncoder)
}

/// Appends the line end to a message (the text of one JSON value, which has no newline of its own:
/// JSON escapes them inside strings, and the gateway's own messages are written compact).
struct LineEncoder;

impl tokio_util::codec::Encoder<Bytes> for LineEncoder {
    type Error = std::io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut bytes::BytesMut) -> Result<(), std::io::Error> {
        dst.reserve(item.len() + 1);
        dst.extend_from_slice(&item);
        dst.extend_from_slice(b"\n");
        Ok(())
    }
}

/// The fields of a JSON-RPC message the gateway reads; the rest stay unparsed.
#[derive(Deserialize)]
pub(super) struct Envelope<'a> {
    /// The request's id (a request or a response), as written.
    #[serde(borrow, default)]
    pub(super) id: Option<&'a RawValue>,
    /// The method (a request or a notification).
    #[serde(default)]
    pub(super) method: Option<String>,
    /// The parameters, unparsed.
    #[serde(borrow, default)]
    pub(super) params: Option<&'a RawValue>,
    /// A response's result, unparsed.
    #[serde(borrow, default)]
    pub(super) result: Option<&'a RawValue>,
    /// A response's error, unparsed.
    #[serde(borrow, default)]
    pub(super) error: Option<&'a RawValue>,
}

/// What a message is.
pub(super) enum Kind<'a> {
    /// A request: its id and method.
    Request(&'a RawValue, &'a str),
    /// A notification: its method.
    Notification(&'a str),
    /// A response (a result or an error) to the request with this id.
    Response(&'a RawValue),
}

impl<'a> Envelope<'a> {
    /// Reads the envelope of one message.
    ///
    /// # Errors
    /// Not a JSON object, a field of the wrong type, a key twice, or neither a request, a
    /// notification nor a response (JSON-RPC 2.0 §4, §5).
    pub(super) fn read(message: &'a RawValue) -> Result<Self, String> {
        if !message.get().starts_with('{') {
            return Err("not a JSON-RPC message (a JSON object); batches are not part of MCP".into());
        }
        serde_json::from_str(message.get()).map_err(|e| format!("not a JSON-RPC message: {e}"))
    }

    /// What the message is.
    ///
    /// # Errors
    /// Neither a request, a notification nor a response.
    pub(super) fn kind(&self) -> Result<Kind<'_>, String> {
        match (self.id, self.method.as_deref()) {
            (Some(id), Some(m)) => Ok(Kind::Request(id, m)),
            (None, Some(m)) => Ok(Kind::Notification(m)),
            (Some(id), None) if self.result.is_some() != self.error.is_some() => Ok(Kind::Response(id)),
            _ => Err("not a request, a notification or a response".into()),
        }
    }
}

/// A map key for a request id (or a progress token): its JSON value written compact, so `"a"` and
/// `"\u0061"` are the same id.
pub(super) fn key(raw: &RawValue) -> String {
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(v) => v.to_string(),
        Err(_) => raw.get().to_owned(),
    }
}

/// A JSON-RPC error response to the request `id` (the id as the peer wrote it, `null` when it
/// could not be read).
pub(super) fn error(id: Option<&RawValue>, code: i32, message: &str) -> Bytes {
    let e = rmcp::ErrorData::new(rmcp::model::ErrorCode(code), message.to_owned(), None);
    response_with(id, "error", &e)
}

/// A JSON-RPC result response to the request `id`.
pub(super) fn result<T: serde::Serialize>(id: &RawValue, result: &T) -> Bytes {
    response_with(Some(id), "result", result)
}

fn response_with<T: serde::Serialize>(id: Option<&RawValue>, field: &str, body: &T) -> Bytes {
    let id = id.map_or(Value::Null, |raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null));
    let mut m = serde_json::Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    m.insert("id".into(), id);
    m.insert(field.into(), serde_json::to_value(body).unwrap_or(Value::Null));
    Bytes::from(Value::Object(m).to_string())
}

/// A notification the gateway sends itself.
pub(super) fn notification(method: &str, params: Value) -> Bytes {
    Bytes::from(json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
}

/// A request the gateway sends itself (to the server).
pub(super) fn request(id: &str, method: &str, params: Option<Value>) -> Bytes {
    let mut m = serde_json::Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    m.insert("id".into(), json!(id));
    m.insert("method".into(), json!(method));
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Bytes::from(Value::Object(m).to_string())
}

/// One JSON object's members, in their order, each value as written.
pub(super) type Members = IndexMap<String, Box<RawValue>>;

/// Changes the object at `path` (keys from the top) inside `message` with `change`, leaving every
/// other member, at every level, as written; `Ok(None)` when a level is missing or not an object
/// (nothing to change).
///
/// # Errors
/// A level could not be read as an object, or written back.
pub(super) fn edit(
    message: &RawValue,
    path: &[&str],
    change: &mut dyn FnMut(&mut Members) -> bool,
) -> Result<Option<Box<RawValue>>, String> {
    let mut members: Members = serde_json::from_str(message.get()).map_err(|e| e.to_string())?;
    let Some((first, rest)) = path.split_first() else {
        if !change(&mut members) {
            return Ok(None);
        }
        return serde_json::value::to_raw_value(&members).map(Some).map_err(|e| e.to_string());
    };
    let Some(inner) = members.get(*first).filter(|v| v.get().starts_with('{')) else { return Ok(None) };
    let Some(edited) = edit(inner, rest, change)? else { return Ok(None) };
    if let Some(slot) = members.get_mut(*first) {
        *slot = edited;
    }
    serde_json::value::to_raw_value(&members).map(Some).map_err(|e| e.to_string())
}

/// `message` on one line: the whitespace outside its strings removed when it has a line break
/// (a server over HTTP may pretty-print; a stdio line must hold no newline). Every key, value and
/// number stays as written; JSON strings hold no raw line break, so none is touched.
pub(super) fn one_line(message: Box<RawValue>) -> Box<RawValue> {
    let text = message.get();
    if !text.contains(['\n', '\r']) {
        return message;
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            out.push(c);
        }
    }
    serde_json::from_str(&out).unwrap_or(message)
}

/// A JSON value as a raw value.
pub(super) fn raw(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The message's text, to send.
pub(super) fn bytes(message: &RawValue) -> Bytes {
    Bytes::copy_from_slice(message.get().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_of(s: &str) -> Box<RawValue> {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn an_edit_changes_one_member_and_keeps_the_rest_as_written() {
        let m = raw_of(
            r#"{"jsonrpc":"2.0","id":7,"result":{"z":1,"_meta":{"b":1.0,"_warrant":{"x":1},"a":2},"a":[1, 2]}}"#,
        );
        let edited = edit(&m, &["result", "_meta"], &mut |meta| meta.shift_remove("_warrant").is_some())
            .expect("edit")
            .expect("changed");
        assert_eq!(edited.get(), r#"{"jsonrpc":"2.0","id":7,"result":{"z":1,"_meta":{"b":1.0,"a":2},"a":[1, 2]}}"#);
        // Nothing to change: nothing written.
        assert!(edit(&m, &["result", "missing"], &mut |_| true).expect("edit").is_none());
        assert!(edit(&m, &["result", "a"], &mut |_| true).expect("edit").is_none(), "an array is not an object");
    }

    #[test]
    fn envelopes_tell_requests_notifications_and_responses_apart() {
        let kinds = |s: &str| {
            let m = raw_of(s);
            let e = Envelope::read(&m).map_err(|e| e.to_string())?;
            e.kind().map(|k| match k {
                Kind::Request(id, m) => format!("request {} {m}", id.get()),
                Kind::Notification(m) => format!("notification {m}"),
                Kind::Response(id) => format!("response {}", id.get()),
            })
        };
        assert_eq!(
            kinds(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#).as_deref(),
            Ok("request \"a\" tools/list")
        );
        assert_eq!(
            kinds(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).as_deref(),
            Ok("notification notifications/initialized")
        );
        assert_eq!(kinds(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).as_deref(), Ok("response 3"));
        assert!(kinds(r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{}}"#).is_err());
        assert!(kinds(r#"{"jsonrpc":"2.0","id":3,"method":"a","method":"b"}"#).is_err(), "a key twice");
        assert!(kinds(r#"[{"jsonrpc":"2.0","id":3,"method":"a"}]"#).is_err(), "a batch");
        assert!(kinds(r#"{"jsonrpc":"2.0","id":3,"method":5}"#).is_err());
        assert_eq!(key(&raw_of(r#""\u0061""#)), key(&raw_of(r#""a""#)));
    }

    #[test]
    fn a_pretty_printed_message_is_put_on_one_line_as_written() {
        let m = raw_of("{\n  \"b\": 1.50,\n  \"a\": \"x y\\n\\\"z\\\"\",\r\n\t\"c\": [1, 2]\n}");
        assert_eq!(one_line(m).get(), r#"{"b":1.50,"a":"x y\n\"z\"","c":[1,2]}"#);
        let flat = raw_of(r#"{"a": 1}"#);
        assert_eq!(one_line(flat).get(), r#"{"a": 1}"#, "a message with no line break is left as written");
    }

    #[test]
    fn lines_are_parsed_blank_ones_skipped_and_bad_ones_reported() {
        assert!(parse_line(b"  \r").is_none());
        assert_eq!(
            parse_line(b"\xEF\xBB\xBF{\"a\": 1}\r").and_then(Result::ok).map(|r| r.get().to_owned()).as_deref(),
            Some("{\"a\": 1}")
        );
        assert!(matches!(parse_line(b"{\"a\":"), Some(Err(_))));
    }
}
