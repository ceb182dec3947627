// Starts `msclc lsp` for .mscl files: diagnostics as you type, hover, go to
// definition, references, completion, outline and formatting all come from
// the compiler. `msclc.path` names the executable (the server restarts when
// it changes); `msclc.params` sets the programs' params as `-D` would (sent
// again when the settings change).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

async function start() {
  const settings = vscode.workspace.getConfiguration("msclc");
  const command = settings.get("path") || "msclc";
  client = new LanguageClient(
    "msclc",
    "msclc",
    { command, args: ["lsp"] },
    {
      // Unsaved buffers too: the server checks the text it is sent, and
      // names an untitled one by its URI in messages.
      documentSelector: [
        { scheme: "file", language: "mscl" },
        { scheme: "untitled", language: "mscl" },
      ],
      initializationOptions: { params: settings.get("params") || {} },
      synchronize: { configurationSection: "msclc" },
    },
  );
  try {
    await client.start();
  } catch (e) {
    client = undefined;
    // Most often the command is not there: say which one was tried and
    // where to name another.
    const choice = await vscode.window.showErrorMessage(
      `msclc: cannot start \`${command} lsp\` (${e && e.message ? e.message : e}). ` +
        "Install msclc (`cargo install --path .` in its repository) or set msclc.path to the command.",
      "Open Settings",
    );
    if (choice === "Open Settings") {
      vscode.commands.executeCommand("workbench.action.openSettings", "msclc.path");
    }
  }
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("msclc.path")) {
        if (client) {
          await client.stop();
        }
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
