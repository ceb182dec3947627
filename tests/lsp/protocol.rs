//! The server as a protocol peer: malformed or fuzzed messages, requests
//! before `initialize` or not served, absurd lengths, bursts and runaway
//! programs end in errors or answers, never in a dead session.

use super::*;

/// Nothing an editor sends ends the session: malformed messages get a
/// JSON-RPC parse error each, and the server goes on answering.
#[test]
fn malformed_messages_get_errors_and_the_server_goes_on() {
    let (_dir, path, uri) = temp_uri("malformed");
    std::fs::write(&path, PROGRAM).unwrap();
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, PROGRAM);
    let bad: [&[u8]; 5] = [
        b"Content-Length: 9\r\n\r\n{not json",
        b"Content-Length: 3\r\n\r\n\xff\xfe\xfd",
        b"Content-Type: application/json\r\n\r\n",
        b"Content-Length: many\r\n\r\n",
        b"Content-Length: 70000000\r\n\r\n",
    ];
    for (i, bytes) in bad.iter().enumerate() {
        editor.send_raw(bytes);
        if i == 4 {
            // Announced 70 MB, more than the server reads: it skips them
            // as they come, without holding them.
            editor.send_raw(&vec![b' '; 70_000_000]);
        }
        let error = editor.next_error();
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["code"], -32700, "{error}");
    }
    // LF-only headers are read as CRLF ones.
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": 7, "character": 9}}})
    .to_string();
    editor.send_raw(format!("Content-Length: {}\n\n{body}", body.len()).as_bytes());
    let hover = loop {
        let m = editor.receive();
        if m["id"] == 99 {
            break m;
        }
    };
    assert!(hover_text(&hover["result"]).contains("peer"), "{hover}");
    editor.stop();
}

/// A request before `initialize` is refused, not fatal; a length too large
/// for any integer ends the stream's reading, not the process with a panic.
#[test]
fn requests_before_initialize_and_absurd_lengths_do_not_kill_the_server() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut editor = Editor {
        input: child.stdin.take().unwrap(),
        output: BufReader::new(child.stdout.take().unwrap()),
        child,
        next_id: 0,
        notifications: Vec::new(),
    };
    editor.send(json!({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {}}));
    let refused = editor.next_error();
    assert_eq!(refused["id"], 1);
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let init = editor.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert_eq!(init["serverInfo"]["name"], "msclc");
    editor.send_raw(b"Content-Length: 18446744073709551615\r\n\r\n{}");
    drop(editor.input);
    let out = editor.child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

/// A request msclc does not serve gets JSON-RPC's "method not found"
/// (-32601), not an answer of nothing; an `exit` with no `shutdown` before
/// it ends the server with exit code 1, as the protocol has it.
#[test]
fn unserved_requests_are_not_found_and_an_early_exit_is_code_1() {
    let mut editor = Editor::start(json!(null));
    editor.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "textDocument/foldingRange",
        "params": {"textDocument": {"uri": "file:///x.mscl"}}}),
    );
    let refused = editor.next_error();
    assert_eq!(refused["id"], 7);
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    // Params a request does not take: -32602, said in words.
    editor.send(
        json!({"jsonrpc": "2.0", "id": 8, "method": "textDocument/hover", "params": {"x": 1}}),
    );
    let refused = editor.next_error();
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("the params of `textDocument/hover` are not what it takes: missing field"),
        "{refused}"
    );
    editor.notify("exit", json!(null));
    let status = editor.child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}

/// A document importing `/dev/stdin` (the server's own input) gets a
/// diagnostic instead of hanging the server; a burst of edits is analysed
/// once, so an answer after a thousand of them comes at once; a runaway
/// loop ends within the editor's budget.
#[test]
fn imports_bursts_and_runaway_loops_keep_the_server_responsive() {
    let (_dir, _, uri) = temp_uri("responsive");
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &format!("import \"/dev/stdin\"\n{PROGRAM}"));
    let diagnostics = editor.diagnostics(&uri);
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("only files are imported"),
        "{diagnostics:?}"
    );
    let started = std::time::Instant::now();
    for version in 0..1000 {
        let text = PROGRAM.replace(
            "num_gpus: int = 2",
            &format!("num_gpus: int = {}", 2 + version % 6),
        );
        editor.change(&uri, version + 2, &text);
    }
    let hover = editor.at("textDocument/hover", &uri, 7, 9);
    assert!(hover_text(&hover).contains("peer"), "{hover}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let runaway = format!("{PROGRAM}\nfor i in 0..1000000000 {{ let x = i }}\n");
    let started = std::time::Instant::now();
    editor.change(&uri, 2000, &runaway);
    let diagnostics = editor.diagnostics(&uri);
    assert!(!diagnostics.is_empty(), "the runaway loop is reported");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // Past the editor's budget, which `msclc check` may well get through:
    // a warning that checking stopped there, not an error of the program.
    let said = &diagnostics[0];
    assert_eq!(said["severity"], 2, "{said}");
    let message = said["message"].as_str().unwrap();
    assert!(
        message.starts_with("the editor stopped checking here: this program runs too long")
            && message.contains("`msclc check FILE` checks it in full")
            && !message.contains("--max-ops"),
        "{said}"
    );
    editor.stop();
}

/// Fuzzed messages, seeded (`MSCLC_FUZZ_SEED`, `MSCLC_FUZZ_CASES`): valid
/// requests and notifications with their bodies mutated byte by byte
/// (bytes changed, dropped, repeated, the text cut short, JSON values
/// swapped for others), framed with their true length, interleaved with
/// valid requests that must each be answered; the session then ends as it
/// should. Bounded: 400 messages by default, a few seconds.
#[test]
fn fuzzed_messages_do_not_end_the_session() {
    let seed: u64 = common::env_number("MSCLC_FUZZ_SEED", 2026);
    let cases: usize = common::env_number("MSCLC_FUZZ_CASES", 400);
    eprintln!("lsp fuzz: MSCLC_FUZZ_SEED={seed} MSCLC_FUZZ_CASES={cases}");
    let (_dir, path, uri) = temp_uri("fuzz");
    std::fs::write(&path, PROGRAM).unwrap();
    let mut editor = Editor::start(json!({}));
    // Our own requests' ids stay clear of the fuzzed ones (1 to 4, give or
    // take a mutated digit).
    editor.next_id = 1_000_000;
    editor.open(&uri, PROGRAM);
    let position = json!({"textDocument": {"uri": uri}, "position": {"line": 7, "character": 9}});
    let seeds = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": position}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/completion", "params": position}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/definition", "params": position}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "textDocument/formatting", "params": {"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 9}, "contentChanges": [{"text": PROGRAM}]}}),
        json!({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"msclc": {"params": {"num_gpus": 3}}}}}),
    ];
    let odd_values = [
        json!(null),
        json!(-1),
        json!(1e308),
        json!("\u{0}"),
        json!([[]]),
        json!({"a": {}}),
        json!(u64::MAX),
    ];
    let mut draw = common::Draw(seed);
    let started = std::time::Instant::now();
    for i in 0..cases {
        let mut message = seeds[draw.below(seeds.len())].clone();
        // Structural: a value somewhere replaced by an odd one.
        if draw.below(3) == 0 {
            let odd = odd_values[draw.below(odd_values.len())].clone();
            match draw.below(4) {
                0 => message["params"] = odd,
                1 => message["method"] = odd,
                2 => message["params"]["position"] = odd,
                _ => message["params"]["textDocument"]["uri"] = odd,
            }
        }
        let mut body = message.to_string().into_bytes();
        // Bytewise: a few changes.
        for _ in 0..draw.below(4) {
            if body.is_empty() {
                break;
            }
            let at = draw.below(body.len());
            match draw.below(4) {
                0 => body[at] = (draw.next() & 0xff) as u8,
                1 => {
                    body.remove(at);
                }
                2 => body.insert(at, body[at]),
                _ => body.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&body);
        if text.contains("exit") || text.contains("shutdown") || text.contains("initialize") {
            continue;
        }
        let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        framed.extend(&body);
        editor.send_raw(&framed);
        if i % 25 == 24 {
            let hover = editor.at("textDocument/hover", &uri, 7, 9);
            assert!(hover.is_null() || hover["contents"].is_object(), "{hover}");
        }
    }
    // The document as the editor last sent it whole, and an answer on it.
    editor.change(&uri, 100, PROGRAM);
    let hover = editor.at("textDocument/hover", &uri, 7, 9);
    assert!(hover_text(&hover).contains("peer"), "{hover}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    editor.stop();
}
