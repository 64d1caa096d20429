package lsp

import (
	"path/filepath"
	"strings"
)

// A Language is what one kind of server serves.
type Language struct {
	// Name keys the configuration ([lsp.servers.NAME]) and the servers.
	Name string
	// Command is the server's command line by default.
	Command []string
	// Version is the arguments that make Command's program print its
	// version; nil when it has none (pyright-langserver takes no
	// arguments but --stdio).
	Version []string
	// IDs maps a file extension to the LSP languageId of such files.
	IDs map[string]string
}

// Languages are the servers meka knows, by name.
var Languages = []Language{
	{Name: "go", Command: []string{"gopls"}, Version: []string{"version"}, IDs: map[string]string{".go": "go"}},
	{Name: "typescript", Command: []string{"typescript-language-server", "--stdio"}, Version: []string{"--version"}, IDs: map[string]string{
		".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
		".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
	}},
	{Name: "python", Command: []string{"pyright-langserver", "--stdio"}, IDs: map[string]string{".py": "python", ".pyi": "python"}},
	{Name: "rust", Command: []string{"rust-analyzer"}, Version: []string{"--version"}, IDs: map[string]string{".rs": "rust"}},
	{Name: "c", Command: []string{"clangd"}, Version: []string{"--version"}, IDs: map[string]string{
		".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
	}},
}

// LanguageNames lists the names of Languages, in order.
func LanguageNames() []string {
	out := make([]string, len(Languages))
	for i, l := range Languages {
		out[i] = l.Name
	}
	return out
}

// languageOf returns the language serving path and the file's languageId.
func languageOf(path string) (*Language, string) {
	ext := strings.ToLower(filepath.Ext(path))
	for i := range Languages {
		if id, ok := Languages[i].IDs[ext]; ok {
			return &Languages[i], id
		}
	}
	return nil, ""
}
