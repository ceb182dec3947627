// Starts `msclc lsp` for .mscl files: diagnostics as you type, hover, go to
// definition, references, completion, outline and formatting all come from
// the compiler. `msclc.path` names the executable; `msclc.params` sets the
// programs' params as `-D` would (sent again when the settings change).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate() {
  const settings = vscode.workspace.getConfiguration("msclc");
  const server = { command: settings.get("path") || "msclc", args: ["lsp"] };
  client = new LanguageClient("msclc", "msclc", server, {
    documentSelector: [{ scheme: "file", language: "mscl" }],
    initializationOptions: { params: settings.get("params") || {} },
    synchronize: { configurationSection: "msclc" },
  });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
