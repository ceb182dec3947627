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
    MODULES.iter().find_map(|(module, text)| {
        let stmts = crate::syntax::parse(0, text).ok()?;
        let defines = |s: &crate::syntax::ast::Stmt| matches!(&s.kind, StmtKind::Fn(f) if f.name.name == name);
        stmts.iter().any(defines).then(|| format!("std/{module}"))
    })
}
