//! `file://` URIs and the paths they name, both ways (RFC 8089): an
//! editor names documents by URI, the compiler reads paths.

use lsp_types::Uri;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The file a `file://` URI names (another scheme: a name for messages).
pub(super) fn path_of(uri: &Uri) -> PathBuf {
    let text = uri.as_str();
    let Some(rest) = text.strip_prefix("file://") else {
        return PathBuf::from(text);
    };
    // `file://host/share/x` names a file on `host` (RFC 8089): a network
    // path, `//host/share/x`, never `host/share/x` under the server's
    // working folder; `file://localhost/x` is `/x`.
    let path = match rest.find('/') {
        Some(0) => rest.to_string(),
        Some(slash) if rest[..slash].eq_ignore_ascii_case("localhost") => rest[slash..].to_string(),
        _ => format!("//{rest}"),
    };
    PathBuf::from(percent_decode(&path))
}

/// The `file://` URI of an absolute path.
pub(super) fn uri_of(path: &Path) -> Option<Uri> {
    let mut text = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                text.push(byte as char)
            }
            _ => text.push_str(&format!("%{byte:02X}")),
        }
    }
    Uri::from_str(&text).ok()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| {
            std::str::from_utf8(h)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        });
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_and_paths_round_trip() {
        let path = Path::new("/tmp/a dir/ring+1.mscl");
        let uri = uri_of(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/ring%2B1.mscl");
        assert_eq!(path_of(&uri), path);
        // A host names a network path, not one under the working folder.
        let on = |text: &str| path_of(&Uri::from_str(text).unwrap());
        assert_eq!(on("file://localhost/tmp/x.mscl"), Path::new("/tmp/x.mscl"));
        assert_eq!(
            on("file://host/share/x.mscl"),
            Path::new("//host/share/x.mscl")
        );
    }
}
