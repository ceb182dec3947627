//! Files that import others, open in the editor with them or not: where
//! the problems met in each are published, and definitions across files.

use super::*;

/// A mistake in an imported file is published for that file; its
/// functions complete, and go to definition across files.
#[test]
fn imported_files_get_their_diagnostics_and_definitions() {
    let (dir, _, uri) = temp_uri("imports");
    std::fs::write(
        dir.join("lib.mscl"),
        "fn next(r: int, n: int) -> int {\n    return (r + 1) % n\n}\nfn broken() -> int {\n    return true\n}\n",
    )
    .unwrap();
    let lib_uri = format!("file://{}", dir.join("lib.mscl").display());
    let main = PROGRAM
        .replace("param num_gpus", "import \"lib.mscl\"\nparam num_gpus")
        .replace("(r + 1) % num_gpus", "next(r, num_gpus)");
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &main);
    let in_lib = editor.diagnostics(&lib_uri);
    assert_eq!(in_lib.len(), 1, "{in_lib:?}");
    assert_eq!(in_lib[0]["code"], "E0103");
    assert_eq!(in_lib[0]["range"]["start"]["line"], 4);
    assert_eq!(editor.diagnostics(&uri), Vec::<Value>::new());
    // Completion offers the library's functions, with their signatures.
    let items = editor.at("textDocument/completion", &uri, 8, 0);
    let next = items
        .as_array()
        .or_else(|| items["items"].as_array())
        .and_then(|items| items.iter().find(|i| i["label"] == "next"))
        .unwrap_or_else(|| panic!("{items}"));
    assert_eq!(
        next["detail"], "fn next(r: int, n: int) -> int (from lib.mscl)",
        "{next}"
    );
    // `next` (line 8 of the main file) is defined in lib.mscl.
    let def = editor.at("textDocument/definition", &uri, 8, 16);
    assert_eq!(def["uri"], lib_uri);
    assert_eq!(def["range"]["start"], json!({"line": 0, "character": 3}));
    // Opened alone, the library is checked, not run (it has no program).
    let lib = std::fs::read_to_string(dir.join("lib.mscl")).unwrap();
    editor.open(&lib_uri, &lib.replace("return true", "return 1"));
    assert_eq!(editor.diagnostics(&lib_uri), Vec::<Value>::new());
    // Open, the library's list is its own analysis's: the main file's
    // (of the file on disk) neither replaces it nor, closed, clears it.
    editor.change(&uri, 2, &main);
    assert_eq!(editor.diagnostics(&lib_uri), Vec::<Value>::new());
    editor.change(&lib_uri, 2, &lib);
    assert_eq!(editor.diagnostics(&lib_uri).len(), 1);
    // The main file reads the library as the editor has it, saved or not,
    // and is checked again when it changes: `next` renamed, unsaved.
    editor.change(&lib_uri, 3, &lib.replace("fn next(", "fn next2("));
    let in_main = editor.diagnostics(&uri);
    assert_eq!(in_main.len(), 1, "{in_main:?}");
    assert!(
        in_main[0]["message"].as_str().unwrap().contains("`next`"),
        "{in_main:?}"
    );
    editor.change(&lib_uri, 4, &lib);
    assert_eq!(editor.diagnostics(&uri), Vec::<Value>::new());
    // Renamed again, unsaved, then closed: the disk's text is read again.
    editor.change(&lib_uri, 5, &lib.replace("fn next(", "fn next2("));
    assert_eq!(editor.diagnostics(&uri).len(), 1);
    editor.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": lib_uri}}),
    );
    assert_eq!(editor.diagnostics(&uri), Vec::<Value>::new());
    editor.open(&lib_uri, &lib);
    editor.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(editor.diagnostics(&lib_uri).len(), 1);
    // The standard library is built in: go to definition writes its
    // module out, read-only, to the cache folder, and goes there.
    let std_user = format!("file://{}", dir.join("std_user.mscl").display());
    editor.open(
        &std_user,
        "import \"std/peers\"\nfn f() -> list[int] {\n    return ring_peers(0, 4)\n}\n",
    );
    assert_eq!(editor.diagnostics(&std_user), Vec::<Value>::new());
    let peers = std_cache().join(format!(
        "msclc/{}/std/peers.mscl",
        env!("CARGO_PKG_VERSION")
    ));
    let peers_uri = format!("file://{}", peers.display());
    // A file left by another build of msclc, read-only as written, is
    // written again.
    std::fs::create_dir_all(peers.parent().unwrap()).unwrap();
    if let Ok(meta) = std::fs::metadata(&peers) {
        let mut writable = meta.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        writable.set_readonly(false);
        std::fs::set_permissions(&peers, writable).unwrap();
    }
    std::fs::write(&peers, "fn ring_peers() {}\n").unwrap();
    let mut read_only = std::fs::metadata(&peers).unwrap().permissions();
    read_only.set_readonly(true);
    std::fs::set_permissions(&peers, read_only).unwrap();
    let def = editor.at("textDocument/definition", &std_user, 2, 12);
    assert_eq!(def["uri"], peers_uri, "{def}");
    let text = std::fs::read_to_string(&peers).unwrap();
    assert_eq!(text, include_str!("../../stdlib/peers.mscl"));
    let line = def["range"]["start"]["line"].as_u64().unwrap() as usize;
    let character = def["range"]["start"]["character"].as_u64().unwrap() as usize;
    assert!(
        text.lines().nth(line).unwrap()[character..].starts_with("ring_peers("),
        "{def}"
    );
    assert!(std::fs::metadata(&peers).unwrap().permissions().readonly());
    // The import's path: the module's first line.
    let def = editor.at("textDocument/definition", &std_user, 0, 10);
    assert_eq!(def["uri"], peers_uri, "{def}");
    assert_eq!(def["range"]["start"], json!({"line": 0, "character": 0}));
    let refs = editor.at("textDocument/references", &std_user, 2, 12);
    assert!(
        refs.as_array()
            .is_none_or(|r| r.iter().all(|l| l["uri"] == std_user)),
        "{refs}"
    );
    editor.stop();
}

/// A problem the main program's run meets in an imported file (an
/// executor limit crossed there, a division by zero) is published for that
/// file, and stays once the file is open too, though the file's own
/// analysis (no program to run) finds nothing; one met in the standard
/// library is placed at the call in the document that met it.
#[test]
fn problems_met_in_an_imported_file_stay_when_it_is_open() {
    let (dir, _, uri) = temp_uri("met-in-imports");
    let lib_path = dir.join("many.mscl");
    let lib = "fn many(r: rank) {\n    for i in 0..70 {\n        r.copy(r.output[0], r.input[0], tb: 0)\n    }\n}\n";
    std::fs::write(&lib_path, lib).unwrap();
    let lib_uri = format!("file://{}", lib_path.display());
    let main = "import \"many.mscl\"\nparam n: int = 2\nprogram \"p\" {\n    collective = allgather(n, chunk_factor: 1, inplace: true)\n}\nmany(rank(0))\n";
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, main);
    let codes = |list: Vec<Value>| -> Vec<String> {
        list.iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(codes(editor.diagnostics(&lib_uri)), ["W0502"]);
    editor.open(&lib_uri, lib);
    let in_lib = editor.diagnostics(&lib_uri);
    assert_eq!(codes(in_lib.clone()), ["W0502"], "{in_lib:?}");
    assert_eq!(in_lib[0]["range"]["start"]["line"], 2);
    // The main file closed, its run's problems in the library go.
    editor.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(editor.diagnostics(&lib_uri), Vec::<Value>::new());

    let std_user = format!("file://{}", dir.join("barrier_user.mscl").display());
    editor.open(
        &std_user,
        "// a comment\nparam n: int = 2\nimport \"std/sync\"\nprogram \"x\" {\n    collective = allgather(n, chunk_factor: 1, inplace: true)\n}\nlet chs = all_pairs_channels(n)\nall_pairs_barrier(chs, n, 5000)\n",
    );
    let met = editor.diagnostics(&std_user);
    assert_eq!(codes(met.clone()), ["E0302"], "{met:?}");
    assert_eq!(
        met[0]["range"]["start"],
        json!({"line": 7, "character": 0}),
        "{met:?}"
    );
    // A warning about an op the standard library made, too: at the call
    // (its signals and its waits, each past the executor's 8 channels).
    let wide = format!("file://{}", dir.join("wide_barrier.mscl").display());
    editor.open(
        &wide,
        "param n: int = 16\nimport \"std/sync\"\nprogram \"x\" {\n    collective = allgather(n, chunk_factor: 1, inplace: true)\n}\nlet chs = all_pairs_channels(n)\nall_pairs_barrier(chs, n, 0)\n",
    );
    let warned = editor.diagnostics(&wide);
    assert_eq!(codes(warned.clone()), ["W0502", "W0502"], "{warned:?}");
    for (w, line) in warned.iter().zip([14, 15]) {
        assert_eq!(
            w["range"]["start"],
            json!({"line": 6, "character": 0}),
            "{w}"
        );
        // Each says where in the library it is: two problems, not one.
        let message = w["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("in std/sync:{line}: ")), "{w}");
    }
    editor.stop();
}

/// An error a call in the document meets in a file it imports is marked
/// in both: in the import where it is, and in the document at the call
/// (the document is what fails), with the way to the import's place.
#[test]
fn an_error_met_in_an_imported_file_marks_the_call_too() {
    let (dir, _, uri) = temp_uri("error-met-in-import");
    let lib_path = dir.join("slices.mscl");
    let lib = "fn bad(r: rank) -> chunk {\n    return r.input[5..9]\n}\n";
    std::fs::write(&lib_path, lib).unwrap();
    let lib_uri = format!("file://{}", lib_path.display());
    let main = "import \"slices.mscl\"\nprogram \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\nlet c = bad(rank(0))\n";
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, main);
    let in_lib = editor.diagnostics(&lib_uri);
    assert_eq!(in_lib.len(), 1, "{in_lib:?}");
    assert_eq!(in_lib[0]["range"]["start"]["line"], 1, "{in_lib:?}");
    let here = editor.diagnostics(&uri);
    assert_eq!(here.len(), 1, "{here:?}");
    assert_eq!(here[0]["code"], in_lib[0]["code"]);
    assert_eq!(here[0]["severity"], 1);
    assert_eq!(
        here[0]["range"]["start"],
        json!({"line": 4, "character": 8}),
        "{here:?}"
    );
    assert!(
        here[0]["message"].as_str().unwrap().starts_with("in "),
        "{here:?}"
    );
    let there = &here[0]["relatedInformation"][0]["location"];
    assert_eq!(there["uri"], lib_uri, "{here:?}");
    assert_eq!(there["range"], in_lib[0]["range"], "{here:?}");
    editor.stop();
}

/// Find references from the file that defines a function finds its uses
/// in the open files that import it too.
#[test]
fn references_from_a_library_reach_the_files_that_import_it() {
    let (dir, _, uri) = temp_uri("refs-across");
    let lib_path = dir.join("peers.mscl");
    let lib = "fn next_peer(r: int, n: int) -> int {\n    return (r + 1) % n\n}\n";
    std::fs::write(&lib_path, lib).unwrap();
    let lib_uri = format!("file://{}", lib_path.display());
    let main = PROGRAM
        .replace("param num_gpus", "import \"peers.mscl\"\nparam num_gpus")
        .replace("(r + 1) % num_gpus", "next_peer(r, num_gpus)");
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &main);
    editor.open(&lib_uri, lib);
    let refs = editor.at("textDocument/references", &lib_uri, 0, 3);
    let places: Vec<(String, i64)> = refs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["uri"].as_str().unwrap().to_string(),
                l["range"]["start"]["line"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(places.contains(&(lib_uri.clone(), 0)), "{refs}");
    assert!(places.contains(&(uri.clone(), 8)), "{refs}");
    assert_eq!(places.len(), 2, "{refs}");
    editor.stop();
}

/// References come in the order of the files and of their lines, whatever
/// order the checker met them in (a function's body, checked after the
/// top level, uses `num_gpus` above the top level's uses), each once.
#[test]
fn references_are_listed_in_the_order_of_the_text() {
    let (_dir, path, uri) = temp_uri("refs-order");
    let lib_path = path.parent().unwrap().join("a_lib.mscl");
    let lib = "fn wrap(r: int, n: int) -> int {\n    return r % n\n}\n";
    std::fs::write(&lib_path, lib).unwrap();
    let lib_uri = format!("file://{}", lib_path.display());
    let main = PROGRAM
        .replace(
            "param num_gpus: int in [2, 4, 8] = 2\n",
            "param num_gpus: int in [2, 4, 8] = 2\nimport \"a_lib.mscl\"\nfn next(r: int) -> int {\n    return wrap(r + 1, num_gpus)\n}\n",
        )
        .replace("(r + 1) % num_gpus", "next(r)");
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &main);
    editor.open(&lib_uri, lib);
    let lines = start_lines(&editor.at("textDocument/references", &uri, 0, 7));
    assert_eq!(lines, vec![0, 3, 7, 10, 13, 13], "{main}");
    // From the library: its own definition first (its file's name comes
    // first), then the use in the file that imports it.
    let refs = editor.at("textDocument/references", &lib_uri, 0, 4);
    let places: Vec<(&str, i64)> = refs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["uri"].as_str().unwrap(),
                l["range"]["start"]["line"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        vec![(lib_uri.as_str(), 0), (uri.as_str(), 3)],
        "{refs}"
    );
    editor.stop();
}
