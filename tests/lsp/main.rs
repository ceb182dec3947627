//! `msclc lsp` driven over stdio as an editor drives it: initialize, open,
//! change, hover, definition, references, completion, outline, formatting,
//! shutdown; each answer checked as the editor would show it.

#[path = "../common/mod.rs"]
mod common;
mod hover;
mod imports;
mod protocol;
mod unsaved;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// An editor's end of the connection.
struct Editor {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: i64,
    /// Notifications received while waiting for answers.
    notifications: Vec<Value>,
}

impl Editor {
    fn start(options: Value) -> Editor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .arg("lsp")
            // Where go to definition writes the standard library's files.
            .env("XDG_CACHE_HOME", std_cache())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("msclc lsp starts");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut editor = Editor {
            child,
            input,
            output,
            next_id: 0,
            notifications: Vec::new(),
        };
        let init = editor.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": options}),
        );
        assert!(
            init["capabilities"]["hoverProvider"] == json!(true),
            "{init}"
        );
        editor.notify("initialized", json!({}));
        editor
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.input, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.input.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.output.read_line(&mut line).expect("a header");
            assert!(!line.is_empty(), "the server closed the connection");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.output.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.receive();
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{message}");
                return message["result"].clone();
            }
            self.notifications.push(message);
        }
    }

    /// Sends a request msclc does not serve, and reads up to its answer
    /// ("method not found"): what the server sent before has arrived.
    fn round_trip(&mut self) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "probe/unknown", "params": null}));
        loop {
            let message = self.receive();
            if message["id"] == json!(id) {
                assert_eq!(message["error"]["code"], -32601, "{message}");
                return;
            }
            self.notifications.push(message);
        }
    }

    /// The diagnostics last published for `uri`, after a round trip (the
    /// server answers in order, so they have arrived).
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        self.round_trip();
        self.notifications
            .iter()
            .rev()
            .find(|n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["uri"] == uri)
            .map(|n| n["params"]["diagnostics"].as_array().unwrap().clone())
            .expect("diagnostics were published")
    }

    fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        let mut params = json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
        if method == "textDocument/references" {
            params["context"] = json!({"includeDeclaration": true});
        }
        self.request(method, params)
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "mscl", "version": 1, "text": text}}),
        );
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    /// Ends the session; a document opened after `shutdown` is not heard
    /// (its diagnostics would be due after 40 ms).
    fn stop(mut self) {
        self.request("shutdown", json!(null));
        self.open("file:///late.mscl", "let x = (");
        std::thread::sleep(std::time::Duration::from_millis(200));
        self.notify("exit", json!(null));
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "msclc lsp exits 0 after shutdown and exit"
        );
        let mut rest = String::new();
        self.output.read_to_string(&mut rest).unwrap();
        assert!(!rest.contains("late.mscl"), "{rest}");
    }
}

const PROGRAM: &str = r#"param num_gpus: int in [2, 4, 8] = 2

program "ring" {
    collective = allgather(num_gpus, chunk_factor: 1, inplace: false)
}

for r in 0..num_gpus {
    let peer = (r + 1) % num_gpus
    let ch = memory_channel(peer, r)
    let back = memory_channel((r + num_gpus - 1) % num_gpus, r)
    rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)
    ch.put(rank(peer).output[r], rank(r).input[0], tb: 0)
    ch.signal(tb: 0, data_sync: before)
    back.wait(tb: 0, data_sync: after)
}
"#;

/// A scratch folder for the test `name`, to hold until the test ends, and
/// the path and URI of a program in it.
/// The cache folder of every server the tests start, under the build's
/// own temporary folder: the tests leave the user's `~/.cache` alone.
fn std_cache() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lsp-cache")
}

fn temp_uri(name: &str) -> (common::Scratch, std::path::PathBuf, String) {
    let dir = common::scratch(&format!("lsp-{name}"));
    let path = dir.join("ring.mscl");
    let uri = format!("file://{}", path.display());
    (dir, path, uri)
}

fn hover_text(hover: &Value) -> String {
    hover["contents"]["value"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The lines where each of a list of locations starts.
fn start_lines(locations: &Value) -> Vec<i64> {
    locations
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["range"]["start"]["line"].as_i64().unwrap())
        .collect()
}

fn labels(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_editor_gets_diagnostics_hover_definitions_and_completions() {
    let (_dir, _, uri) = temp_uri("session");
    let mut editor = Editor::start(json!({"params": {"num_gpus": 4}}));

    // A misspelt name: an error at its place, with its code.
    editor.open(&uri, &PROGRAM.replace("(peer, r)", "(peeer, r)"));
    let diagnostics = editor.diagnostics(&uri);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let d = &diagnostics[0];
    assert_eq!(d["code"], "E0101");
    assert_eq!(d["severity"], 1);
    assert_eq!(d["range"]["start"], json!({"line": 8, "character": 28}));
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `peer`?"),
        "{d}"
    );

    // Fixed: the diagnostics are cleared.
    editor.change(&uri, 2, PROGRAM);
    assert_eq!(editor.diagnostics(&uri), Vec::<Value>::new());

    // Hover: a variable's type, a param's value in the editor's settings,
    // a builtin's signature and documentation.
    let ch = hover_text(&editor.at("textDocument/hover", &uri, 11, 5));
    assert!(ch.contains("let ch: memory_channel"), "{ch}");
    let param = hover_text(&editor.at("textDocument/hover", &uri, 6, 15));
    assert!(
        param.contains("param num_gpus: int in [2, 4, 8] = 2"),
        "{param}"
    );
    assert!(param.contains("set to `4`"), "{param}");
    let builtin = hover_text(&editor.at("textDocument/hover", &uri, 8, 15));
    assert!(
        builtin.contains("memory_channel(dst_rank: int, src_rank: int) -> memory_channel"),
        "{builtin}"
    );
    let method = hover_text(&editor.at("textDocument/hover", &uri, 12, 8));
    assert!(
        method.contains("Signals the peer's paired channel."),
        "{method}"
    );
    // A keyword argument's name: the parameter it sets, not the call.
    let line = PROGRAM.lines().nth(13).unwrap();
    let column = line.find("data_sync:").unwrap() as u32 + 2;
    let kwarg = editor.at("textDocument/hover", &uri, 13, column);
    assert!(
        hover_text(&kwarg).contains("data_sync: sync_type = both"),
        "{kwarg}"
    );
    assert!(
        hover_text(&kwarg).contains("a keyword argument of `wait`"),
        "{kwarg}"
    );
    // A program option: its type and what it sets.
    let option = hover_text(&editor.at("textDocument/hover", &uri, 3, 8));
    assert!(option.contains("collective: collective"), "{option}");
    assert!(
        option.contains("every rank's input and output chunks"),
        "{option}"
    );

    // Go to definition and find references of `peer`.
    let def = editor.at("textDocument/definition", &uri, 11, 16);
    assert_eq!(def["uri"], uri);
    assert_eq!(def["range"]["start"], json!({"line": 7, "character": 8}));
    let lines = start_lines(&editor.at("textDocument/references", &uri, 7, 9));
    assert_eq!(lines, vec![7, 8, 11]);

    // Completion while typing: the text does not parse, the last analysis
    // that did gives the receiver's type.
    let typing = PROGRAM.replace("    back.wait(tb: 0, data_sync: after)\n", "    ch.\n");
    editor.change(&uri, 3, &typing);
    let methods = labels(&editor.at("textDocument/completion", &uri, 13, 7));
    for m in ["signal", "wait", "put", "reduce", "src_rank"] {
        assert!(methods.contains(&m.to_string()), "{m} in {methods:?}");
    }
    assert!(!methods.contains(&"copy".to_string()), "{methods:?}");
    // A builtin's signature beside its name, a parameter that may be left
    // out said so.
    let items = editor.at("textDocument/completion", &uri, 13, 7);
    let items = items
        .as_array()
        .or_else(|| items["items"].as_array())
        .unwrap();
    let put = items.iter().find(|i| i["label"] == "put").unwrap();
    let detail = put["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("memory_channel.put(dst_chunk: chunk, src_chunk: chunk")
            && detail.contains("tb_group: tb_group (optional)"),
        "{put}"
    );
    assert!(put["documentation"].is_string(), "{put}");
    let typing = PROGRAM.replace(
        "    back.wait(tb: 0, data_sync: after)\n",
        "    rank(r).copy(\n",
    );
    editor.change(&uri, 4, &typing);
    let inside = labels(&editor.at("textDocument/completion", &uri, 13, 17));
    for expected in [
        "tb:",
        "dst_chunk:",
        "peer",
        "ch",
        "num_gpus",
        "after",
        "memory_channel",
    ] {
        assert!(
            inside.contains(&expected.to_string()),
            "{expected} in {inside:?}"
        );
    }

    // The outline.
    editor.change(&uri, 5, PROGRAM);
    let symbols = editor.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let names = labels(&json!(symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!({"label": s["name"]}))
        .collect::<Vec<_>>()));
    assert_eq!(names, vec!["num_gpus", "program \"ring\""]);

    // While the text does not parse, the last analysis that did is read
    // across the edit since: the places after it moved down three lines,
    // and the edit's own text has no answer from an analysis of other text.
    let typing = PROGRAM.replace(
        "    let ch = memory_channel(peer, r)\n",
        "    let ch = memory_channel(peer, r)\n\n\n    ch.\n",
    );
    editor.change(&uri, 6, &typing);
    let def = editor.at("textDocument/definition", &uri, 14, 16);
    assert_eq!(def["range"]["start"], json!({"line": 7, "character": 8}));
    let lines = start_lines(&editor.at("textDocument/references", &uri, 7, 9));
    assert_eq!(lines, vec![7, 8, 14]);
    let hover = editor.at("textDocument/hover", &uri, 14, 5);
    assert_eq!(hover["range"]["start"], json!({"line": 14, "character": 4}));
    assert_eq!(editor.at("textDocument/hover", &uri, 11, 5), Value::Null);

    // Formatting: one edit that gives `msclc fmt`'s text.
    editor.change(&uri, 7, &PROGRAM.replace("    let peer", "let   peer"));
    let edits = editor.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(edits.as_array().unwrap().len(), 1, "{edits}");
    assert_eq!(edits[0]["newText"], PROGRAM);

    editor.stop();
}

/// While a line is typed: completion after `.` reads the receiver's
/// binding in sight of the cursor (not one of the same name elsewhere), in
/// a file opened half typed too, and nothing inside a comment or a string;
/// a name's range that ends where the typing starts stays the name's; a
/// file of lone carriage returns has its lines (its diagnostics and
/// formatting are of them).
#[test]
fn typing_reads_the_scope_at_the_cursor() {
    let (_dir, _, uri) = temp_uri("typing");
    let mut editor = Editor::start(json!({}));
    let head =
        "program \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\n";
    let loops = "for g in 0..2 {\n    let c = memory_channel(1 - g, g)\n    c.signal(tb: 0)\n    c.wait(tb: 0)\n}\nfor g in 0..2 {\n    let c = port_channel(1 - g, g)\n    c.signal(tb: 1)\n    c.wait(tb: 1)\n}\n";
    editor.open(&uri, &format!("{head}{loops}"));
    assert_eq!(editor.diagnostics(&uri), Vec::<Value>::new());
    let typing = loops.replacen("    c.wait(tb: 0)\n", "    c.wait(tb: 0)\n    c.\n", 1);
    editor.change(&uri, 2, &format!("{head}{typing}"));
    let methods = labels(&editor.at("textDocument/completion", &uri, 7, 6));
    assert!(methods.contains(&"put_packets".to_string()), "{methods:?}");
    assert!(
        !methods.contains(&"flush".to_string()),
        "a memory channel: {methods:?}"
    );
    for inside in ["    // c.", "    let s = \"c."] {
        let typing = loops.replacen(
            "    c.wait(tb: 0)\n",
            &format!("    c.wait(tb: 0)\n{inside}\n"),
            1,
        );
        editor.change(&uri, 3, &format!("{head}{typing}"));
        let column = inside.len() as u32;
        let items = editor.at("textDocument/completion", &uri, 7, column);
        assert_eq!(labels(&items), Vec::<String>::new(), "{inside}");
    }
    // `c.signal` becomes `c.signal.(`: `signal` is still `signal`, without the dot.
    editor.change(
        &uri,
        4,
        &format!(
            "{head}{}",
            loops.replacen("    c.signal(tb: 0)", "    c.signal.(tb: 0)", 1)
        ),
    );
    let hover = editor.at("textDocument/hover", &uri, 5, 8);
    assert_eq!(
        hover["range"]["end"],
        json!({"line": 5, "character": 12}),
        "{hover}"
    );

    // A file opened half typed, never parsed: its line being typed is
    // left out to read the rest.
    let (_fresh_dir, _, fresh) = temp_uri("typing_fresh");
    editor.open(&fresh, &format!("{head}{typing}"));
    let methods = labels(&editor.at("textDocument/completion", &fresh, 7, 6));
    assert!(methods.contains(&"signal".to_string()), "{methods:?}");
    assert!(!methods.contains(&"flush".to_string()), "{methods:?}");

    let lone_cr = format!("{head}let  a = nope\n").replace('\n', "\r");
    editor.change(&uri, 5, &lone_cr);
    let diagnostics = editor.diagnostics(&uri);
    assert_eq!(
        diagnostics[0]["range"]["start"],
        json!({"line": 3, "character": 9}),
        "{diagnostics:?}"
    );
    let edits = editor.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(
        edits[0]["range"]["end"],
        json!({"line": 4, "character": 0}),
        "{edits}"
    );
    editor.stop();
}

/// Warnings come with their related places; params from the settings
/// change what the program evaluates to.
#[test]
fn warnings_and_settings_reach_the_editor() {
    let (_dir, path, uri) = temp_uri("warnings");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/ring_one_block.mscl"),
    )
    .unwrap();
    std::fs::write(&path, &text).unwrap();
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &text);
    assert_eq!(
        editor.diagnostics(&uri),
        Vec::<Value>::new(),
        "fine at its default size"
    );
    editor.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"msclc": {"params": {"n": 16}}}}),
    );
    let warnings = editor.diagnostics(&uri);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["code"], "W0502");
    assert_eq!(warnings[0]["severity"], 2);
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("when r = 0"),
        "{}",
        warnings[0]
    );
    // The settings' params at their top, as some clients send them, too;
    // and settings with none set the defaults again.
    for (settings, count) in [
        (json!({"params": {"n": 16}}), 1),
        (json!({}), 0),
        (json!({"msclc": {"params": {"n": 16}}}), 1),
    ] {
        editor.notify(
            "workspace/didChangeConfiguration",
            json!({ "settings": settings }),
        );
        assert_eq!(editor.diagnostics(&uri).len(), count, "{settings}");
    }
    // A setting that is no value of its param's type is said as the
    // editor's setting, not as a command line's `-D`.
    editor.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"params": {"n": "abc"}}}),
    );
    let said = editor.diagnostics(&uri);
    let message = said[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the editor's setting params.n = abc: `abc` is not a valid int"),
        "{said:?}"
    );
    editor.stop();
}

/// A named constant's hover gives the type it has where it stands: `none`
/// is a sync setting in an op and a replication policy in the program.
#[test]
fn a_constant_hovers_with_the_type_of_its_place() {
    let (_dir, _, uri) = temp_uri("none");
    let text = "param pol: replication_policy = none\nprogram \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n    replication_policy = none\n}\nmemory_channel(1, 0).signal(tb: 0, data_sync: none)\nmemory_channel(0, 1).wait(tb: 0)\n";
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, text);
    for (line, character, ty) in [
        (0, 33, "none: replication_policy"),
        (3, 26, "none: replication_policy"),
        (5, 48, "none: sync_type"),
    ] {
        let hover = editor.at("textDocument/hover", &uri, line, character);
        assert!(
            hover_text(&hover).contains(ty),
            "{line}:{character}: {hover}"
        );
    }
    editor.stop();
}

impl Editor {
    /// Sends raw bytes, as a broken or hostile client might.
    fn send_raw(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).unwrap();
        self.input.flush().unwrap();
    }

    /// The next message that answers no request of ours (a parse error's
    /// id is null).
    fn next_error(&mut self) -> Value {
        loop {
            let message = self.receive();
            if message.get("error").is_some() {
                return message;
            }
            self.notifications.push(message);
        }
    }
}
