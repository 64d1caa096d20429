package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzConn feeds arbitrary bytes to a Conn whose handler exercises every
// path (results, errors, panics, AfterResponse, calls back to the peer,
// cancellation): Serve never panics or hangs, and every line it writes is a
// valid JSON-RPC 2.0 message.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}` + "\n",
		`{"jsonrpc":"2.0","id":"x","method":"after","params":[1]}` + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"call"}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":3,"method":"wait"}` + "\n" + `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}` + "\n",
		"{bad\n[]\n" + `{"jsonrpc":"2.0","id":null,"method":"echo"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer // written only under the conn's write token
		var conn *Conn
		h := funcs{
			handle: func(ctx context.Context, req *Request) (any, error) {
				switch req.Method {
				case "echo":
					return req.Params, nil
				case "error":
					return nil, NewError(InvalidParams, "Invalid params", req.Params)
				case "fail":
					return nil, errors.New("internal")
				case "panic":
					panic("handler")
				case "after":
					AfterResponse(ctx, func() { _ = conn.Notify(ctx, "session/update", req.Params) })
					return struct{}{}, nil
				case "call":
					var res json.RawMessage
					err := conn.Call(ctx, "fs/read_text_file", req.Params, &res)
					return res, err
				case "wait":
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return nil, NewError(MethodNotFound, "Method not found", nil)
			},
			notify: func(ctx context.Context, n *Notification) {
				if n.Method == "notify" {
					_ = conn.Notify(ctx, "echo", n.Params)
				}
			},
		}
		conn = NewConn(bytes.NewReader(data), &out, h, Options{MaxLineBytes: 256})
		if err := conn.Serve(context.Background()); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			t.Fatalf("output does not end with a newline: %q", out.Bytes())
		}
		for line := range bytes.SplitSeq(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(out.Bytes()) == 0 {
				break
			}
			if err := checkMessage(line); err != nil {
				t.Fatalf("invalid output line %q: %v", line, err)
			}
		}
	})
}

// checkMessage reports whether line is one valid JSON-RPC 2.0 message as
// this package writes them.
func checkMessage(line []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return errors.New("not a JSON object")
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return errors.New(`jsonrpc is not "2.0"`)
	}
	id, hasID := m["id"]
	if method, ok := m["method"]; ok {
		var s string
		if json.Unmarshal(method, &s) != nil || isNull(method) {
			return errors.New("method is not a string")
		}
		if hasID && !validID(id) {
			return errors.New("request id is not a number or string")
		}
		if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' {
			return errors.New("params is not structured")
		}
		if _, ok := m["result"]; ok {
			return errors.New("request with a result")
		}
		if _, ok := m["error"]; ok {
			return errors.New("request with an error")
		}
		return onlyKeys(m, "jsonrpc", "id", "method", "params")
	}
	if !hasID || !(validID(id) || isNull(id)) {
		return errors.New("response id is not a number, string or null")
	}
	result, hasResult := m["result"]
	errMember, hasError := m["error"]
	if hasResult == hasError {
		return errors.New("response needs exactly one of result and error")
	}
	if hasResult && len(result) == 0 {
		return errors.New("empty result")
	}
	if hasError {
		var e map[string]json.RawMessage
		if json.Unmarshal(errMember, &e) != nil || e == nil {
			return errors.New("error is not an object")
		}
		var code int
		var msg string
		if json.Unmarshal(e["code"], &code) != nil || isNull(e["code"]) {
			return errors.New("error code is not an integer")
		}
		if json.Unmarshal(e["message"], &msg) != nil || isNull(e["message"]) {
			return errors.New("error message is not a string")
		}
		if err := onlyKeys(e, "code", "message", "data"); err != nil {
			return err
		}
	}
	return onlyKeys(m, "jsonrpc", "id", "result", "error")
}

func onlyKeys(m map[string]json.RawMessage, keys ...string) error {
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			n++
		}
	}
	if n != len(m) {
		return errors.New("unexpected members")
	}
	return nil
}

// FuzzSplit checks the hand-rolled member splitter against encoding/json.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"}]\"","b":[{}]}}`,
		`{ "id" : "x" , "result" : null , "error" : { "code" : 1 } }`,
		`{"\u0069d":1,"id":2,"method":"a","method":"b","params":[1,[2,[3]]],"x":true}`,
		`{"result":-1.5e+10,"error":false,"jsonrpc":"\u0032.0"}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || data[skipSpace(data, 0)] != '{' {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("Unmarshal of valid JSON: %v", err)
		}
		env := split(data)
		for key, got := range map[string]json.RawMessage{
			"jsonrpc": env.jsonrpc, "id": env.id, "method": env.method,
			"params": env.params, "result": env.result, "error": env.err,
		} {
			if string(got) != string(want[key]) {
				t.Fatalf("member %s: split %q, encoding/json %q", key, got, want[key])
			}
		}
	})
}
