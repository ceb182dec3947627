//! What hovering says of the words of the language that are no names: the
//! `pipeline` statement and its settings.

use super::*;

/// The `pipeline` keyword and its settings' names say what they do, in a
/// pipeline at the top level and in a loop's body alike; the values still
/// hover with their type.
#[test]
fn a_pipeline_and_its_settings_hover_with_what_they_do() {
    let (_dir, _, uri) = temp_uri("pipeline-hover");
    let program = PROGRAM.replace(
        "    rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n",
        "    pipeline(unit_size: 1 << 20, num_chunks: 1) {\n        rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n    }\n",
    );
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, &program);
    let line = program
        .lines()
        .position(|l| l.contains("pipeline("))
        .unwrap() as u32;
    let keyword = editor.at("textDocument/hover", &uri, line, 6);
    assert!(
        hover_text(&keyword).contains("pipeline(unit_size: int, num_chunks: int)"),
        "{keyword}"
    );
    assert_eq!(
        keyword["range"]["start"],
        json!({"line": line, "character": 4})
    );
    let unit = hover_text(&editor.at("textDocument/hover", &uri, line, 15));
    assert!(unit.starts_with("```mscl\nunit_size: int\n```"), "{unit}");
    assert!(unit.contains("`unitSize`"), "{unit}");
    let count = hover_text(&editor.at("textDocument/hover", &uri, line, 36));
    assert!(
        count.starts_with("```mscl\nnum_chunks: int\n```"),
        "{count}"
    );
    let value = hover_text(&editor.at("textDocument/hover", &uri, line, 25));
    assert_eq!(value, "```mscl\nint\n```");
    editor.stop();
}
