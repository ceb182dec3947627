//! `msclc lsp`: the language server, on standard input and output.
//!
//! Built on `lsp-server` and `lsp-types`, the synchronous scaffold that
//! rust-analyzer uses: one loop reads a message, answers it and goes on.
//! Every answer comes from the compiler's own stages: a document is
//! analysed on open and on each change (`driver::analyze`: parse, check
//! keeping an `Index` of names and types, evaluate with the params the
//! editor set, the passes and their warnings), and requests read that
//! analysis. While a document does not parse (most keystrokes leave it
//! half-written), requests read the last analysis that did.

mod complete;
mod diagnostics;
mod features;
mod position;
mod readable;
mod std_files;
mod transport;
mod uri;

use crate::driver::{self, Analysis};
use diagnostics::{diagnostics_by_file, publish};
use lsp_server::{ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use transport::Incoming;
use uri::{path_of, uri_of};

/// How long the server waits after an edit for the next one before it
/// analyses: while an editor sends keystrokes faster than that, each
/// document is analysed once for the burst, in its latest text.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(40);

/// Serves one editor over standard input and output until it exits (or
/// closes the stream). Nothing the editor sends ends it: a message that
/// cannot be read gets a JSON-RPC parse error, a request before
/// `initialize` an error, and the session goes on. Whether it ended as the
/// protocol has it: an `exit` after `shutdown` (or the stream closed);
/// an `exit` without one is the editor's mistake, exit code 1.
pub fn serve() -> Result<bool, String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        loop {
            let incoming = transport::read(&mut input);
            let end = matches!(incoming, Incoming::End);
            if sender.send(incoming).is_err() || end {
                return;
            }
        }
    });
    let mut session = Session {
        output: std::io::stdout().lock(),
        server: None,
        shut_down: false,
        pending: Vec::new(),
    };
    session.run(&receiver)
}

/// One editor's session: the server once initialized, and the edits not
/// yet analysed.
struct Session<W: std::io::Write> {
    output: W,
    server: Option<Server>,
    /// After `shutdown`: only `exit` is left to come.
    shut_down: bool,
    /// Documents edited since the last analysis: their latest text.
    pending: Vec<(Uri, String)>,
}

impl<W: std::io::Write> Session<W> {
    fn run(&mut self, incoming: &std::sync::mpsc::Receiver<Incoming>) -> Result<bool, String> {
        use std::sync::mpsc::RecvTimeoutError;
        loop {
            let next = if self.pending.is_empty() {
                incoming.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                incoming.recv_timeout(SETTLE)
            };
            match next {
                Err(RecvTimeoutError::Timeout) => self.analyse_pending()?,
                Err(RecvTimeoutError::Disconnected) | Ok(Incoming::End) => return Ok(true),
                Ok(Incoming::Malformed(why)) => {
                    self.error_reply(serde_json::Value::Null, ErrorCode::ParseError, &why)?
                }
                Ok(Incoming::Invalid { id, why }) => {
                    self.error_reply(id, ErrorCode::InvalidRequest, &why)?
                }
                Ok(Incoming::Message(Message::Request(request))) => self.request(request)?,
                Ok(Incoming::Message(Message::Notification(n))) => {
                    if n.method == notif::Exit::METHOD {
                        return Ok(self.shut_down);
                    }
                    // After `shutdown`, only `exit` is heard.
                    if !self.shut_down {
                        self.notification(n)?;
                    }
                }
                Ok(Incoming::Message(Message::Response(_))) => {}
            }
        }
    }

    fn send(&mut self, message: Message) -> Result<(), String> {
        message.write(&mut self.output).map_err(|e| e.to_string())
    }

    /// JSON-RPC's answer to what it cannot read: an error with no id.
    /// An error answer to a message that could not be read as a request
    /// (written here: `lsp_server` has no id for it).
    fn error_reply(
        &mut self,
        id: serde_json::Value,
        code: lsp_server::ErrorCode,
        why: &str,
    ) -> Result<(), String> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": code as i32, "message": why},
        })
        .to_string();
        write!(self.output, "Content-Length: {}\r\n\r\n{body}", body.len())
            .and_then(|()| self.output.flush())
            .map_err(|e| e.to_string())
    }

    fn request(&mut self, request: Request) -> Result<(), String> {
        use lsp_server::ErrorCode;
        let refuse = |request: &Request, code: ErrorCode, message: &str| {
            Response::new_err(request.id.clone(), code as i32, message.to_string())
        };
        let response = match (&mut self.server, request.method.as_str()) {
            (None, req::Initialize::METHOD) => {
                let options = request.params.get("initializationOptions");
                self.server = Some(Server {
                    documents: HashMap::new(),
                    defines: params_from(options),
                });
                let result = InitializeResult {
                    capabilities: capabilities(),
                    server_info: Some(ServerInfo {
                        name: "msclc".into(),
                        version: Some(env!("CARGO_PKG_VERSION").into()),
                    }),
                };
                Response::new_ok(request.id, result)
            }
            (None, _) => refuse(
                &request,
                ErrorCode::ServerNotInitialized,
                "the server is not initialized yet: send `initialize` first",
            ),
            (Some(_), req::Initialize::METHOD) => refuse(
                &request,
                ErrorCode::InvalidRequest,
                "the server is already initialized",
            ),
            (Some(_), _) if self.shut_down => refuse(
                &request,
                ErrorCode::InvalidRequest,
                "the server is shut down: only `exit` is left",
            ),
            (Some(_), req::Shutdown::METHOD) => {
                self.shut_down = true;
                Response::new_ok(request.id, serde_json::Value::Null)
            }
            (Some(_), _) => {
                // Answers read the latest text.
                self.analyse_pending()?;
                match &mut self.server {
                    Some(server) => server.answer(request),
                    None => return Ok(()),
                }
            }
        };
        self.send(Message::Response(response))
    }

    fn notification(&mut self, n: Notification) -> Result<(), String> {
        if self.server.is_none() {
            return Ok(());
        }
        let n = match into_edit(n) {
            Ok(edit) => {
                // Analysed when the burst of edits ends (`run`).
                if let Some((uri, text)) = edit {
                    self.pending.retain(|(u, _)| *u != uri);
                    self.pending.push((uri, text));
                }
                return Ok(());
            }
            Err(other) => other,
        };
        // A closed document's pending edit goes with it; any other
        // notification sees every document's latest text.
        if n.method == notif::DidCloseTextDocument::METHOD {
            let closed = n
                .params
                .pointer("/textDocument/uri")
                .and_then(|u| u.as_str());
            self.pending.retain(|(uri, _)| Some(uri.as_str()) != closed);
        }
        self.analyse_pending()?;
        let Some(server) = &mut self.server else {
            return Ok(());
        };
        for out in server.notice(n) {
            self.send(Message::Notification(out))?;
        }
        Ok(())
    }

    /// Analyses each document edited since the last analysis, once, and
    /// publishes its diagnostics.
    fn analyse_pending(&mut self) -> Result<(), String> {
        let Some(server) = &mut self.server else {
            self.pending.clear();
            return Ok(());
        };
        let mut out = Vec::new();
        for (uri, text) in std::mem::take(&mut self.pending) {
            out.extend(server.update(uri, text));
        }
        for n in out {
            self.send(Message::Notification(n))?;
        }
        Ok(())
    }
}

/// An opened or changed document's new text (`Ok(None)` for one whose
/// parameters do not read), or the notification back when it is another.
fn into_edit(n: Notification) -> Result<Option<(Uri, String)>, Notification> {
    match n.method.as_str() {
        notif::DidOpenTextDocument::METHOD => Ok(n
            .extract::<DidOpenTextDocumentParams>(notif::DidOpenTextDocument::METHOD)
            .ok()
            .map(|p| (p.text_document.uri, p.text_document.text))),
        // Full synchronisation: the last change is the whole text.
        notif::DidChangeTextDocument::METHOD => Ok(n
            .extract::<DidChangeTextDocumentParams>(notif::DidChangeTextDocument::METHOD)
            .ok()
            .and_then(|p| {
                let text = p.content_changes.into_iter().last()?.text;
                Some((p.text_document.uri, text))
            })),
        _ => Err(n),
    }
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".into(), "(".into(), ",".into()]),
            ..CompletionOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}

/// The params an editor sets, as `-D` would: `{"params": {"num_gpus": 4}}`
/// in `initializationOptions` or in the settings, at the top or under
/// `msclc` in either (clients nest settings by extension, or not).
fn params_from(options: Option<&serde_json::Value>) -> Vec<(String, String)> {
    let params = options.and_then(|o| o.get("params").or_else(|| o.get("msclc")?.get("params")));
    let Some(serde_json::Value::Object(params)) = params else {
        return Vec::new();
    };
    params
        .iter()
        .map(|(name, value)| {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (name.clone(), text)
        })
        .collect()
}

/// An open document.
pub(crate) struct Document {
    uri: Uri,
    path: PathBuf,
    text: String,
    /// The analysis of `text`.
    analysis: Analysis,
    /// While `text` does not parse: the last version that did, and its
    /// analysis.
    fallback: Option<(String, Analysis)>,
    /// What its analysis found, per file: itself (an empty list too) and
    /// the files it imports that it found problems in. A file's published
    /// list is what every open document's analysis found in it.
    found: Vec<(Uri, Vec<lsp_types::Diagnostic>)>,
    /// The params it was analysed with, as `-D` would set them.
    defines: Vec<(String, String)>,
}

impl Document {
    /// Whether its program imports the file at `path` (in its last
    /// analysis that parsed), or could not read an import: a file opened
    /// or changed may be the one it lacked.
    fn imports(&self, path: &Path) -> bool {
        let analysis = match (&self.analysis.program, &self.fallback) {
            (None, Some((_, analysis))) => analysis,
            _ => &self.analysis,
        };
        let path = crate::files::lexical(path);
        let lacks_one = self
            .analysis
            .diagnostics
            .iter()
            .any(|d| d.code == crate::diag::Code::Import);
        lacks_one
            || analysis
                .sources
                .names()
                .skip(1)
                .any(|name| crate::files::lexical(Path::new(name)) == path)
    }

    /// The analysis requests read, for the text now: of the current text
    /// when it parses, else of the last that did.
    pub(crate) fn readable(&self) -> readable::Readable<'_> {
        let (then, analysis) = match (&self.analysis.program, &self.fallback) {
            (None, Some((text, analysis))) => (text, analysis),
            _ => (&self.text, &self.analysis),
        };
        readable::Readable::new(analysis, then, &self.text)
    }
}

struct Server {
    documents: HashMap<String, Document>,
    /// The params the editor set, as `-D NAME=VALUE` would.
    defines: Vec<(String, String)>,
}

impl Server {
    /// The answer to a request (JSON-RPC's "method not found" for one
    /// msclc does not serve).
    fn answer(&mut self, request: Request) -> Response {
        let id = request.id.clone();
        let result = match request.method.as_str() {
            req::HoverRequest::METHOD => self.on::<req::HoverRequest>(request, |doc, p| {
                features::hover(doc, p.text_document_position_params.position)
            }),
            req::GotoDefinition::METHOD => self.on::<req::GotoDefinition>(request, |doc, p| {
                features::definition(doc, p.text_document_position_params.position)
                    .map(GotoDefinitionResponse::Scalar)
            }),
            req::References::METHOD => self.on::<req::References>(request, |doc, p| {
                let importers: Vec<&Document> = self
                    .documents
                    .values()
                    .filter(|d| d.uri != doc.uri && d.imports(&doc.path))
                    .collect();
                features::references(
                    doc,
                    p.text_document_position.position,
                    p.context.include_declaration,
                    &importers,
                )
            }),
            req::Completion::METHOD => self.on::<req::Completion>(request, |doc, p| {
                Some(CompletionResponse::Array(complete::items(
                    doc,
                    p.text_document_position.position,
                )))
            }),
            req::DocumentSymbolRequest::METHOD => self
                .on::<req::DocumentSymbolRequest>(request, |doc, _| {
                    Some(DocumentSymbolResponse::Nested(features::symbols(doc)))
                }),
            req::Formatting::METHOD => {
                self.on::<req::Formatting>(request, |doc, _| features::formatting(doc))
            }
            method => {
                let message = format!("msclc does not serve `{method}`");
                return Response::new_err(
                    id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    message,
                );
            }
        };
        match result {
            Ok(value) => Response::new_ok(id, value),
            Err(message) => {
                Response::new_err(id, lsp_server::ErrorCode::InvalidParams as i32, message)
            }
        }
    }

    /// Runs `handle` on the request's parameters and its document.
    fn on<R>(
        &self,
        request: Request,
        handle: impl FnOnce(&Document, R::Params) -> R::Result,
    ) -> Result<serde_json::Value, String>
    where
        R: req::Request,
        R::Params: serde::de::DeserializeOwned + HasDocument,
        R::Result: serde::Serialize,
    {
        let (_, params) = request
            .extract::<R::Params>(R::METHOD)
            .map_err(|e| match e {
                lsp_server::ExtractError::JsonError { method, error } => {
                    format!("the params of `{method}` are not what it takes: {error}")
                }
                lsp_server::ExtractError::MethodMismatch(r) => {
                    format!("internal error: `{}` taken for `{}`", r.method, R::METHOD)
                }
            })?;
        let Some(doc) = self.documents.get(params.document().as_str()) else {
            return Ok(serde_json::Value::Null);
        };
        let result = handle(doc, params);
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    /// Acts on a notification other than an edit (`into_edit`); the
    /// notifications to send back.
    fn notice(&mut self, n: Notification) -> Vec<Notification> {
        match n.method.as_str() {
            notif::DidCloseTextDocument::METHOD => {
                let Ok(p) =
                    n.extract::<DidCloseTextDocumentParams>(notif::DidCloseTextDocument::METHOD)
                else {
                    return Vec::new();
                };
                match self.documents.remove(p.text_document.uri.as_str()) {
                    // The files it found problems in lose those; the files
                    // importing it read it from the disk again.
                    Some(doc) => {
                        let mut out = self.republish(doc.found.into_iter().map(|(uri, _)| uri));
                        out.extend(self.analyse_importers(&doc.uri));
                        out
                    }
                    None => Vec::new(),
                }
            }
            notif::DidChangeConfiguration::METHOD => {
                let Ok(p) = n
                    .extract::<DidChangeConfigurationParams>(notif::DidChangeConfiguration::METHOD)
                else {
                    return Vec::new();
                };
                self.defines = params_from(Some(&p.settings));
                let open: Vec<(Uri, String)> = self
                    .documents
                    .values()
                    .map(|d| (d.uri.clone(), d.text.clone()))
                    .collect();
                open.into_iter()
                    .flat_map(|(uri, text)| self.update(uri, text))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Analyses the new text of `uri`, then the open files that import
    /// it (they read its text as the editor has it, saved or not); the
    /// diagnostics to publish.
    fn update(&mut self, uri: Uri, text: String) -> Vec<Notification> {
        let mut out = self.analyse(uri.clone(), text);
        out.extend(self.analyse_importers(&uri));
        out
    }

    /// Analyses again the open files that import `uri`'s file.
    fn analyse_importers(&mut self, uri: &Uri) -> Vec<Notification> {
        let path = path_of(uri);
        let importers: Vec<(Uri, String)> = self
            .documents
            .values()
            .filter(|d| d.uri != *uri && d.imports(&path))
            .map(|d| (d.uri.clone(), d.text.clone()))
            .collect();
        importers
            .into_iter()
            .flat_map(|(importer, text)| self.analyse(importer, text))
            .collect()
    }

    /// Analyses the new text of `uri`, its imports as the editor has
    /// those open in it; its diagnostics to publish.
    fn analyse(&mut self, uri: Uri, text: String) -> Vec<Notification> {
        let path = path_of(&uri);
        let limits = crate::eval::Limits::editor();
        let documents = &self.documents;
        let read = |full: &Path| match documents
            .values()
            .find(|d| crate::files::lexical(&d.path) == crate::files::lexical(full))
        {
            Some(open) => Ok(open.text.clone()),
            None => driver::read_import(full),
        };
        let analyse =
            |text: String| driver::analyze_with(&path, text, &self.defines, limits, &read);
        let analysis = analyse(text.clone());
        let key = uri.as_str().to_string();
        let parsed_before = self
            .documents
            .get(&key)
            .is_some_and(|old| old.analysis.program.is_some() || old.fallback.is_some());
        let repaired = match analysis.program {
            None if !parsed_before => readable::repaired(&text, &analysis, analyse),
            _ => None,
        };
        let (previous, fallback) = match self.documents.remove(&key) {
            Some(old) if analysis.program.is_none() => {
                let fallback = match old.analysis.program {
                    Some(_) => Some((old.text, old.analysis)),
                    None => old.fallback,
                };
                (old.found, fallback)
            }
            Some(old) => (old.found, None),
            None => (Vec::new(), None),
        };
        let fallback = fallback.or(repaired);
        let found = diagnostics_by_file(&analysis, &uri);
        // The files it found problems in before and now: each gets its
        // list again (one it no longer finds any in, the others' only).
        let mut touched: Vec<Uri> = previous.into_iter().map(|(u, _)| u).collect();
        touched.extend(found.iter().map(|(u, _)| u.clone()));
        self.documents.insert(
            key,
            Document {
                uri,
                path,
                text,
                analysis,
                fallback,
                found,
                defines: self.defines.clone(),
            },
        );
        self.republish(touched.into_iter())
    }

    /// The diagnostics of each of `files` (once each, in order): what the
    /// analyses of the open documents found in it, each problem once (a
    /// file and a file importing it both find its own errors).
    fn republish(&self, files: impl Iterator<Item = Uri>) -> Vec<Notification> {
        let mut done: Vec<Uri> = Vec::new();
        for file in files {
            if !done.contains(&file) {
                done.push(file);
            }
        }
        done.into_iter()
            .map(|file| {
                let mut list: Vec<lsp_types::Diagnostic> = Vec::new();
                let found = self.documents.values().flat_map(|d| &d.found);
                for d in found.filter(|(u, _)| *u == file).flat_map(|(_, l)| l) {
                    if !list.contains(d) {
                        list.push(d.clone());
                    }
                }
                publish(file, list)
            })
            .collect()
    }
}

/// The LSP range of `span`, in the file it points into: its lines found
/// in the analysis's table of them, so that a file's outline or a name's
/// thousand uses cost no more than the text they cover.
pub(crate) fn range_of(analysis: &Analysis, span: crate::diag::Span) -> Range {
    let sources = &analysis.sources;
    let text = sources.source(span.file);
    let position = |offset: u32| {
        let offset = (offset as usize).min(text.len());
        let line = sources.line_of(span.file, offset);
        position::position_on_line(text, line, offset)
    };
    Range::new(position(span.start), position(span.end))
}

/// The URI of file `file` of an analysis: the document's own for the main
/// file, the imported file's path for the others; none for a module of
/// the standard library, which is no file.
pub(crate) fn file_uri(analysis: &Analysis, file: u32, uri: &Uri) -> Option<Uri> {
    if file == 0 {
        return Some(uri.clone());
    }
    let name = analysis.sources.name(file).unwrap_or_default();
    if crate::vocab::stdlib::is_module(&name) {
        return None;
    }
    let imported = PathBuf::from(&name);
    let full = if imported.is_absolute() {
        imported
    } else {
        std::env::current_dir().unwrap_or_default().join(imported)
    };
    uri_of(&full)
}

/// The document a request is about.
trait HasDocument {
    fn document(&self) -> &Uri;
}

impl HasDocument for HoverParams {
    fn document(&self) -> &Uri {
        &self.text_document_position_params.text_document.uri
    }
}

impl HasDocument for GotoDefinitionParams {
    fn document(&self) -> &Uri {
        &self.text_document_position_params.text_document.uri
    }
}

impl HasDocument for ReferenceParams {
    fn document(&self) -> &Uri {
        &self.text_document_position.text_document.uri
    }
}

impl HasDocument for CompletionParams {
    fn document(&self) -> &Uri {
        &self.text_document_position.text_document.uri
    }
}

impl HasDocument for DocumentSymbolParams {
    fn document(&self) -> &Uri {
        &self.text_document.uri
    }
}

impl HasDocument for DocumentFormattingParams {
    fn document(&self) -> &Uri {
        &self.text_document.uri
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span's range, from the analysis's table of lines, is the one a
    /// reading of the whole text gives, at every byte: multibyte
    /// characters, CRLF, a last line without its line end.
    #[test]
    fn ranges_from_the_line_table_are_those_of_the_text() {
        let text = "// é😀\r\nprogram \"t\" {\n\n  collective = allgather(2, chunk_factor: 1, inplace: true)\r} // ü\rlet x = 1";
        let analysis = driver::analyze(
            Path::new("t.mscl"),
            text.to_string(),
            &[],
            crate::eval::Limits::editor(),
        );
        let lines = position::Lines::new(text);
        for start in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            let span = crate::diag::Span {
                file: 0,
                start: start as u32,
                end: text.len() as u32,
            };
            assert_eq!(
                range_of(&analysis, span),
                lines.range(start, text.len()),
                "at {start}"
            );
        }
    }
}
