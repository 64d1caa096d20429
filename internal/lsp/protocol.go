package lsp

import (
	"net/url"
	"path/filepath"
	"strings"
)

// The LSP 3.17 messages meka sends and reads, only the fields it uses.
// The connection itself (framing, ids, responses) is go.lsp.dev/jsonrpc2.

const (
	methodInitialize         = "initialize"
	methodInitialized        = "initialized"
	methodShutdown           = "shutdown"
	methodExit               = "exit"
	methodDidOpen            = "textDocument/didOpen"
	methodDidChange          = "textDocument/didChange"
	methodDidClose           = "textDocument/didClose"
	methodPublishDiagnostics = "textDocument/publishDiagnostics"
	methodConfiguration      = "workspace/configuration"
	methodWorkspaceFolders   = "workspace/workspaceFolders"
	methodProgress           = "$/progress"
	// methodPing is a request no server knows: the specification has a
	// server answer an unknown "$/" request with MethodNotFound, so any
	// answer at all says the server still reads its input.
	methodPing = "$/meka/ping"
)

type initializeParams struct {
	ProcessID        int                `json:"processId"`
	ClientInfo       clientInfo         `json:"clientInfo"`
	RootURI          string             `json:"rootUri"`
	WorkspaceFolders []workspaceFolder  `json:"workspaceFolders"`
	Capabilities     clientCapabilities `json:"capabilities"`
}

type clientInfo struct {
	Name string `json:"name"`
}

type workspaceFolder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

type clientCapabilities struct {
	Workspace    workspaceCapabilities    `json:"workspace"`
	TextDocument textDocumentCapabilities `json:"textDocument"`
	// Window asks for work-done progress: a server loading a workspace
	// says so, which tells it from one that hangs.
	Window windowCapabilities `json:"window"`
}

type windowCapabilities struct {
	WorkDoneProgress bool `json:"workDoneProgress"`
}

// progressParams is $/progress; Value.Kind is "begin", "report" or "end".
type progressParams struct {
	Token any `json:"token"`
	Value struct {
		Kind string `json:"kind"`
	} `json:"value"`
}

type workspaceCapabilities struct {
	Configuration    bool `json:"configuration"`
	WorkspaceFolders bool `json:"workspaceFolders"`
}

type textDocumentCapabilities struct {
	PublishDiagnostics publishDiagnosticsCapabilities `json:"publishDiagnostics"`
}

type publishDiagnosticsCapabilities struct {
	VersionSupport bool `json:"versionSupport"`
}

type textDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int32  `json:"version"`
	Text       string `json:"text"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type versionedTextDocument struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
}

type contentChange struct {
	Text string `json:"text"`
}

type didChangeParams struct {
	TextDocument   versionedTextDocument `json:"textDocument"`
	ContentChanges []contentChange       `json:"contentChanges"`
}

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type didCloseParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

type publishDiagnosticsParams struct {
	URI         string           `json:"uri"`
	Version     *int32           `json:"version,omitempty"`
	Diagnostics []wireDiagnostic `json:"diagnostics"`
}

type wireDiagnostic struct {
	Range    wireRange `json:"range"`
	Severity int       `json:"severity,omitempty"`
	Source   string    `json:"source,omitempty"`
	Message  string    `json:"message"`
}

type wireRange struct {
	Start wirePosition `json:"start"`
}

type wirePosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type configurationParams struct {
	Items []struct{} `json:"items"`
}

// fileURI is the file URI of an absolute path.
func fileURI(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// uriPath is the path of a file URI, "" for another URI. Servers spell
// URIs their own way (escapes, drive letter case), so paths compare.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	p := u.Path
	if len(p) > 2 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // /C:/x on Windows
	}
	return filepath.Clean(filepath.FromSlash(p))
}
