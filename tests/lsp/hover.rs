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

/// A function, param or `let` hovers with the comment written right above
/// it: the standard library's functions say what they do where a program
/// calls them.
#[test]
fn definitions_hover_with_the_comment_above_them() {
    let (_dir, _, uri) = temp_uri("comment-hover");
    let program = "import \"std/sync\"\n\
        \n\
        // How many GPUs\n\
        // take part.\n\
        param num_gpus: int = 4\n\
        \n\
        program \"h\" {\n    collective = allreduce(num_gpus, chunk_factor: 1, inplace: true)\n}\n\
        \n\
        // The channels, keyed (peer, gpu).\n\
        let channels = all_pairs_channels(num_gpus)\n\
        let tb = 0\n\
        all_pairs_barrier(channels, num_gpus, tb)\n";
    let mut editor = Editor::start(json!({}));
    editor.open(&uri, program);
    let line_of = |text: &str| program.lines().position(|l| l.starts_with(text)).unwrap() as u32;
    let barrier =
        hover_text(&editor.at("textDocument/hover", &uri, line_of("all_pairs_barrier"), 3));
    assert!(barrier.contains("fn all_pairs_barrier("), "{barrier}");
    assert!(
        barrier.ends_with("\nEvery rank signals each peer, then waits for each peer, on thread block `tb`: once it returns, all ranks have reached this point."),
        "{barrier}"
    );
    let param = hover_text(&editor.at("textDocument/hover", &uri, line_of("param"), 8));
    assert!(param.ends_with("\nHow many GPUs take part."), "{param}");
    let channels =
        hover_text(&editor.at("textDocument/hover", &uri, line_of("all_pairs_barrier"), 20));
    assert!(
        channels.ends_with("\nThe channels, keyed (peer, gpu)."),
        "{channels}"
    );
    // No comment right above: the type alone (the blank line ends the
    // comment that the line before had).
    let tb = hover_text(&editor.at("textDocument/hover", &uri, line_of("let tb"), 5));
    assert_eq!(tb, "```mscl\nlet tb: int\n```");
    editor.stop();
}
