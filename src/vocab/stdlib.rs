//! The standard library (stdlib/): modules of functions written in the
//! language, built into the binary so that `import "std/NAME"` works
//! wherever msclc is installed. They have no file on the user's machine.

use crate::syntax::ast::StmtKind;

/// Each module's name (`sync` of `std/sync`) and text.
const MODULES: &[(&str, &str)] = &[
    ("peers", include_str!("../../stdlib/peers.mscl")),
    ("sync", include_str!("../../stdlib/sync.mscl")),
];

/// The modules' names, as an import names them after `std/`.
pub fn names() -> impl Iterator<Item = &'static str> {
    MODULES.iter().map(|(name, _)| *name)
}

/// The text of standard module `name` (`std/sync`), if it is one.
pub fn text(name: &str) -> Option<&'static str> {
    let module = name.strip_prefix("std/")?;
    MODULES
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, text)| *text)
}

/// Whether `name`, a source's name, is a module of the standard library.
pub fn is_module(name: &str) -> bool {
    text(name).is_some()
}

/// The module that defines function `name` (`std/sync` for
/// `all_pairs_barrier`), for the error of a program that calls it
/// without the import. Parses the modules: only that error asks.
pub fn defining(name: &str) -> Option<String> {
    functions()
        .find(|(_, function)| function == name)
        .map(|(module, _)| module)
}

/// The function of the standard library nearest `name` by spelling
/// (`ring_peers` for `ring_peer`), and its module: what a program that
/// calls a name defined nowhere may mean.
pub fn nearest(name: &str) -> Option<(String, String)> {
    functions()
        .filter_map(|(module, f)| Some((crate::diag::spelling::near(name, &f)?, f, module)))
        .min()
        .map(|(_, f, module)| (module, f))
}

/// Every function of the standard library, with its module (`std/sync`).
fn functions() -> impl Iterator<Item = (String, String)> {
    MODULES.iter().flat_map(|(module, text)| {
        let stmts = crate::syntax::parse(0, text).unwrap_or_default();
        stmts.into_iter().filter_map(move |s| match s.kind {
            StmtKind::Fn(f) => Some((format!("std/{module}"), f.name.name.clone())),
            _ => None,
        })
    })
}
