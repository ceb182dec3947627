//! `msclc lsp`: the language server, on standard input and output.

use super::outcome::fail;
use msclc::diag::{Code, Diagnostic};
use std::process::ExitCode;

pub(crate) fn exec() -> ExitCode {
    match msclc::lsp::serve() {
        Ok(()) => ExitCode::SUCCESS,
        // Standard input or output failed: the editor went away.
        Err(e) => fail(Diagnostic::plain(
            Code::Unreadable,
            format!("the language server stopped: {e}"),
        )),
    }
}
