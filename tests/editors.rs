//! The editor grammars colour every word the language reserves or names:
//! keywords (from the lexer's own list), named constants, builtin functions
//! and operation names (from the builtin table), type names (from the
//! type checker's), fields. A new keyword, builtin or type without colour fails
//! here.

use msclc::syntax::lexer::KEYWORDS;
use msclc::vocab::{signatures, Field, CONSTANTS, TYPE_NAMES};
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

/// Every word the grammars must colour.
fn words() -> Vec<String> {
    let mut words: Vec<String> = KEYWORDS.iter().map(|w| w.to_string()).collect();
    words.extend(CONSTANTS.iter().map(|(w, _)| w.to_string()));
    words.extend(signatures().iter().map(|s| s.name.to_string()));
    words.extend(TYPE_NAMES.iter().map(|(w, _)| w.to_string()));
    words.extend(Field::NAMES.iter().map(|w| w.to_string()));
    // The generic types, written with their elements' (`list[int]`).
    words.extend(["list".to_string(), "map".to_string()]);
    words.sort();
    words.dedup();
    words
}

/// Whether `word` is one alternative of a regex or keyword list in `grammar`
/// (delimited by `(`, `|`, `)`, spaces or a Vim `\(`/`\|`/`\)`).
fn names(grammar: &str, word: &str) -> bool {
    grammar.match_indices(word).any(|(at, _)| {
        let before = grammar[..at].chars().last();
        let after = grammar[at + word.len()..].chars().next();
        let left = matches!(before, Some('(' | '|' | ' '));
        let right = matches!(after, Some(')' | '|' | ' ' | '\\' | '\n'));
        left && right
    })
}

/// The words `path`'s grammar does not colour.
fn uncoloured(path: &str) -> Vec<String> {
    let grammar = read(path);
    words()
        .into_iter()
        .filter(|w| !names(&grammar, w))
        .collect()
}

#[test]
fn vscode_grammar_colours_every_word() {
    let missing = uncoloured("editors/vscode/syntaxes/mscl.tmLanguage.json");
    assert!(
        missing.is_empty(),
        "not coloured in the VS Code grammar: {missing:?}"
    );
}

#[test]
fn vim_syntax_colours_every_word() {
    let missing = uncoloured("editors/vim/syntax/mscl.vim");
    assert!(
        missing.is_empty(),
        "not coloured in the Vim syntax: {missing:?}"
    );
}

#[test]
fn grammar_files_are_well_formed() {
    let json: serde_json::Value =
        serde_json::from_str(&read("editors/vscode/syntaxes/mscl.tmLanguage.json")).expect("JSON");
    assert_eq!(json["scopeName"], "source.mscl");
    let package: serde_json::Value =
        serde_json::from_str(&read("editors/vscode/package.json")).expect("JSON");
    assert_eq!(
        package["contributes"]["languages"][0]["extensions"][0],
        ".mscl"
    );
    let config: serde_json::Value =
        serde_json::from_str(&read("editors/vscode/language-configuration.json")).expect("JSON");
    assert_eq!(config["comments"]["lineComment"], "//");
}

/// The VS Code client sends the server saved files and unsaved buffers
/// alike; the server (tests/lsp) checks a document named by any URI.
#[test]
fn vscode_client_serves_unsaved_buffers_too() {
    let client = read("editors/vscode/extension.js");
    for scheme in ["file", "untitled"] {
        assert!(
            client.contains(&format!("{{ scheme: \"{scheme}\", language: \"mscl\" }}")),
            "no {scheme} documents in the client's documentSelector"
        );
    }
}
