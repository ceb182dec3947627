//! `msclc lsp`: the language server, on standard input and output.

use super::outcome::fail;
use msclc::diag::{Code, Diagnostic};
use std::process::ExitCode;

pub(crate) fn exec() -> ExitCode {
    match msclc::lsp::serve() {
        Ok(true) => ExitCode::SUCCESS,
        // `exit` before `shutdown`: 1, as the protocol has it.
        Ok(false) => ExitCode::from(1),
        // Standard input or output failed: the editor went away.
        Err(e) => fail(Diagnostic::plain(
            Code::Unreadable,
            format!("the language server stopped: {e}"),
        )),
    }
}
