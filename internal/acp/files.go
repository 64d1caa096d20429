package acp

import (
	"context"
	"errors"
	"fmt"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
)

// editorFiles serves a session's file reads and writes through the
// client's fs/read_text_file and fs/write_text_file, so edits land in the
// editor's buffers and its review. ResourceNotFound means the client does
// not serve the path: the host falls back to the disk, and says so in the
// write's result. Any other error fails the call.
type editorFiles struct {
	s         *server
	sessionID string
}

var (
	_ host.Files     = (*editorFiles)(nil)
	_ host.LineFiles = (*editorFiles)(nil)
)

// callCtx detaches a request from the turn: a cancel does not cut short
// an fs/* request in progress, which could leave a buffer half-written;
// the connection's end does.
func (f *editorFiles) callCtx() (context.Context, context.CancelFunc) {
	return context.WithCancel(f.s.base)
}

func (f *editorFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, cancel := f.callCtx()
	defer cancel()
	var resp ReadTextFileResponse
	err := f.s.conn.Call(c, "fs/read_text_file", ReadTextFileRequest{SessionID: f.sessionID, Path: path}, &resp)
	if err != nil {
		return nil, fsError("read", path, err)
	}
	return []byte(resp.Content), nil
}

// ReadFileLines asks the client for limit lines from line.
func (f *editorFiles) ReadFileLines(ctx context.Context, path string, line, limit int) ([]byte, error) {
	c, cancel := f.callCtx()
	defer cancel()
	var resp ReadTextFileResponse
	err := f.s.conn.Call(c, "fs/read_text_file", ReadTextFileRequest{SessionID: f.sessionID, Path: path, Line: &line, Limit: &limit}, &resp)
	if err != nil {
		return nil, fsError("read", path, err)
	}
	return []byte(resp.Content), nil
}

func (f *editorFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	c, cancel := f.callCtx()
	defer cancel()
	if err := f.s.conn.Call(c, "fs/write_text_file", WriteTextFileRequest{SessionID: f.sessionID, Path: path, Content: string(data)}, nil); err != nil {
		return fsError("write", path, err)
	}
	return nil
}

// fsError maps the client's answer: ResourceNotFound is "not served".
func fsError(op, path string, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		if rpc.Code == jsonrpc.ResourceNotFound {
			return fmt.Errorf("%s %s through the editor: %w", op, path, host.ErrNotServed)
		}
		return fmt.Errorf("%s %s through the editor: the editor answered %d %s", op, path, rpc.Code, rpc.Message)
	}
	return fmt.Errorf("%s %s through the editor: %w", op, path, err)
}
