//! The language server's framing: `Content-Length` headers, a blank line,
//! a JSON-RPC message. An editor keeps one server for a whole session, so
//! nothing it sends may end the server: a message that cannot be read is
//! reported (`Incoming::Malformed`) and the next one is read, and a length
//! too large to hold is skipped as it streams past, never allocated.

use lsp_server::Message;
use std::io::{BufRead, Read};

/// The largest message body read: far above a document of the largest
/// source msclc reads (16 MB) in JSON.
pub const MAX_BODY: usize = 64 << 20;

/// The largest header line: `Content-Length: <digits>` and its kin are short.
const MAX_HEADER_LINE: usize = 4 << 10;

/// What came in.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// A message that could not be read, and why; the stream goes on.
    Malformed(String),
    /// JSON that is no JSON-RPC message (no method, an id of another
    /// type than an integer or a string), with its id where it has one.
    Invalid {
        id: serde_json::Value,
        why: String,
    },
    /// The editor closed the stream.
    End,
}

/// Reads the next message from `input`.
pub fn read(input: &mut impl BufRead) -> Incoming {
    let mut length: Option<u64> = None;
    let mut saw_header = false;
    loop {
        let line = match read_header_line(input) {
            Ok(Some(line)) => line,
            Ok(None) if saw_header => {
                return Incoming::Malformed("the stream ended inside a header".into())
            }
            Ok(None) => return Incoming::End,
            Err(why) => return Incoming::Malformed(why),
        };
        // Headers end with an empty line; CRLF is the protocol's, a bare LF
        // is taken too.
        let line = resynchronized(line.trim_end_matches(['\r', '\n']));
        if line.is_empty() {
            if !saw_header {
                continue;
            }
            break;
        }
        saw_header = true;
        let Some((name, value)) = line.split_once(':') else {
            return Incoming::Malformed(format!("a header line without `:`: {:?}", clip(line)));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            match value.trim().parse::<u64>() {
                Ok(n) => length = Some(n),
                Err(_) => {
                    return Incoming::Malformed(format!(
                        "Content-Length {:?} is not a byte count",
                        clip(value.trim())
                    ))
                }
            }
        }
    }
    let Some(length) = length else {
        return Incoming::Malformed("a message without Content-Length".into());
    };
    if length > MAX_BODY as u64 {
        // Skipped as it streams past: nothing of that size is allocated.
        let skipped = std::io::copy(&mut input.take(length), &mut std::io::sink());
        return match skipped {
            Ok(n) if n == length => Incoming::Malformed(format!(
                "a message of {length} bytes, more than the {MAX_BODY} msclc reads: skipped"
            )),
            _ => Incoming::End,
        };
    }
    let mut body = Vec::with_capacity(length as usize);
    match input.take(length).read_to_end(&mut body) {
        Ok(n) if n as u64 == length => {}
        _ => return Incoming::End,
    }
    let Ok(text) = String::from_utf8(body) else {
        return Incoming::Malformed("a message that is not UTF-8".into());
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => return Incoming::Malformed(format!("a message that is not JSON: {e}")),
    };
    // An id the protocol does not allow would read as a notification,
    // which is never answered: the editor would wait for ever.
    let id = value.get("id").cloned();
    let id_allowed = id
        .as_ref()
        .is_none_or(|id| id.is_string() || id.as_i64().is_some_and(|n| i32::try_from(n).is_ok()));
    let echoed = match &id {
        Some(id) if id.is_string() || id.is_number() => id.clone(),
        _ => serde_json::Value::Null,
    };
    if !id_allowed {
        return Incoming::Invalid {
            id: echoed,
            why: "a request id is a 32-bit integer or a string".into(),
        };
    }
    match serde_json::from_value::<Message>(value) {
        Ok(message) => Incoming::Message(message),
        Err(e) => Incoming::Invalid {
            id: echoed,
            why: format!("not a JSON-RPC request, response or notification: {e}"),
        },
    }
}

/// A header line, or what of it follows the leftovers of a message whose
/// Content-Length fell short of its body (`..."}Content-Length: 52`): the
/// rest of that body is dropped, so that the next message is read whole,
/// not run into its predecessor's tail for the rest of the session.
fn resynchronized(line: &str) -> &str {
    const HEADER: &str = "content-length:";
    match line.to_ascii_lowercase().rfind(HEADER) {
        Some(at) => &line[at..],
        None => line,
    }
}

/// One header line, at most `MAX_HEADER_LINE` bytes (a longer one is
/// consumed to its end and refused); `None` at the end of the stream.
fn read_header_line(input: &mut impl BufRead) -> Result<Option<String>, String> {
    let mut line = Vec::new();
    let read = input
        .take(MAX_HEADER_LINE as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string())?;
    if read == 0 {
        return Ok(None);
    }
    if line.len() > MAX_HEADER_LINE && !line.ends_with(b"\n") {
        let mut rest = Vec::new();
        let _ = input.read_until(b'\n', &mut rest);
        return Err(format!("a header line longer than {MAX_HEADER_LINE} bytes"));
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| "a header line that is not UTF-8".to_string())
}

/// At most 60 characters of `text`, for a message about it.
fn clip(text: &str) -> String {
    text.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> Vec<String> {
        let mut input = std::io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            match read(&mut input) {
                Incoming::End => return out,
                Incoming::Message(m) => {
                    out.push(format!("message {}", serde_json::to_string(&m).unwrap()))
                }
                Incoming::Malformed(why) => out.push(format!("malformed: {why}")),
                Incoming::Invalid { id, why } => out.push(format!("invalid {id}: {why}")),
            }
        }
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn bad_messages_are_reported_and_the_next_one_is_read() {
        let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let mut stream = Vec::new();
        stream.extend(framed("{not json").as_bytes());
        stream.extend(format!("Content-Length: {}\n\n{exit}", exit.len()).as_bytes());
        stream.extend(b"Content-Length: 3\r\n\r\n\xff\xfe\xfd");
        stream.extend(b"Content-Length: twelve\r\n\r\n");
        stream.extend(b"Content-Type: x\r\n\r\n");
        // A length short of its body: the rest runs into the next header.
        stream.extend(format!("Content-Length: 10\r\n\r\n{exit}{}", framed(exit)).as_bytes());
        stream.extend(b"Content-Length: 3000000000\r\n\r\nshort");
        let got = all(&stream);
        assert!(
            got[0].starts_with("malformed: a message that is not JSON"),
            "{got:?}"
        );
        assert_eq!(got[1], r#"message {"method":"exit"}"#);
        assert_eq!(got[2], "malformed: a message that is not UTF-8");
        assert!(
            got[3].starts_with("malformed: Content-Length \"twelve\""),
            "{got:?}"
        );
        assert_eq!(got[4], "malformed: a message without Content-Length");
        assert!(got[5].starts_with("malformed: a message that is not JSON"));
        assert_eq!(got[6], r#"message {"method":"exit"}"#, "{got:?}");
        // 3 GB announced, 5 bytes sent: the stream ends, nothing allocated.
        assert_eq!(got.len(), 7, "{got:?}");
    }

    /// JSON that is not a message is an invalid request, answered with
    /// its id where it has one; an id past 32 bits or a fraction too,
    /// rather than a notification never answered.
    #[test]
    fn json_that_is_no_message_is_invalid_with_its_id() {
        let mut stream = Vec::new();
        for body in [
            "{}",
            "42",
            r#"{"jsonrpc":"2.0","id":77,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":2147483648,"method":"shutdown"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"shutdown"}"#,
        ] {
            stream.extend(framed(body).as_bytes());
        }
        let got = all(&stream);
        let ids: Vec<&str> = got
            .iter()
            .map(|g| {
                g.strip_prefix("invalid ")
                    .unwrap()
                    .split(':')
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            ids,
            ["null", "null", "77", "2147483648", "1.5", "null"],
            "{got:?}"
        );
    }

    #[test]
    fn an_absurd_length_is_skipped_not_allocated() {
        let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let big = MAX_BODY + 1;
        let mut stream = format!("Content-Length: {big}\r\n\r\n").into_bytes();
        stream.resize(stream.len() + big, b' ');
        stream.extend(framed(exit).as_bytes());
        let got = all(&stream);
        assert!(got[0].contains("skipped"), "{got:?}");
        assert_eq!(got[1], r#"message {"method":"exit"}"#);
        let huge = all(b"Content-Length: 18446744073709551615\r\n\r\n");
        assert!(huge.is_empty(), "{huge:?}");
    }
}
