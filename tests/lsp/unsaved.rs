//! Documents that are no file on disk: an editor's unsaved buffer, named
//! by a URI of another scheme than `file`.

use super::*;

/// An untitled buffer gets its diagnostics, under its own URI, and its
/// imports of the standard library resolve.
#[test]
fn an_untitled_buffer_gets_diagnostics() {
    let uri = "untitled:Untitled-1";
    let text = PROGRAM.replace("param num_gpus", "import \"std/sync\"\nparam num_gpus")
        + "let x = 1 + true\n";
    let mut editor = Editor::start(json!({}));
    editor.open(uri, &text);
    let diagnostics = editor.diagnostics(uri);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["code"], "E0103", "{diagnostics:?}");
    assert_eq!(
        diagnostics[0]["range"]["start"]["line"],
        text.lines().count() - 1,
        "{diagnostics:?}"
    );
    editor.stop();
}
