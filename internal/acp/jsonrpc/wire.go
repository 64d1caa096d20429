package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Request is an inbound request. ID is the peer's id, echoed verbatim in the
// response: a JSON number or string.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage // nil when absent or null
}

// Notification is an inbound notification.
type Notification struct {
	Method string
	Params json.RawMessage // nil when absent or null
}

type kind int

const (
	kindRequest kind = iota + 1
	kindNotification
	kindResponse
)

// message is one inbound line, classified.
type message struct {
	kind   kind
	id     json.RawMessage
	method string
	params json.RawMessage
	result json.RawMessage
	err    json.RawMessage // the response's error member, undecoded
}

var jsonNull = json.RawMessage("null")

// parse classifies one line. When the line is not a message to serve it
// returns the error to answer with and the id to answer to (null when the id
// could not be determined, as JSON-RPC 2.0 §5 requires). The message's
// slices point into line.
func parse(line []byte) (m message, replyErr *Error, replyID json.RawMessage) {
	if !json.Valid(line) {
		return m, errParse, jsonNull
	}
	switch line[skipSpace(line, 0)] {
	case '{':
	case '[':
		return m, errBatch, jsonNull
	default:
		return m, errNotObject, jsonNull
	}
	env := split(line)

	replyID = jsonNull
	if env.id != nil && validID(env.id) {
		replyID = env.id
	}
	if env.method == nil {
		if env.result != nil || env.err != nil {
			// A response is never answered, even when malformed: that could
			// start an error ping-pong with the peer.
			m.kind, m.id, m.result = kindResponse, env.id, env.result
			if env.err != nil && !isNull(env.err) {
				m.err = env.err
			}
			return m, nil, nil
		}
		return m, errNoMethod, replyID
	}
	if string(env.jsonrpc) != `"2.0"` && jsonString(env.jsonrpc) != "2.0" {
		return m, errVersion, replyID
	}
	if env.method[0] != '"' {
		return m, errMethodType, replyID
	}
	m.method = jsonString(env.method)
	if env.id != nil && !validID(env.id) {
		return m, errIDType, jsonNull
	}
	if p := env.params; p != nil && !isNull(p) {
		if p[0] != '{' && p[0] != '[' {
			return m, errParamsType, replyID
		}
		m.params = p
	}
	m.kind = kindNotification
	if env.id != nil {
		m.kind, m.id = kindRequest, env.id
	}
	return m, nil, nil
}

// envelope holds the raw values of a message's members; nil when absent.
type envelope struct {
	jsonrpc, id, method, params, result, err json.RawMessage
}

// members calls f with each top-level member of a JSON object that
// json.Valid has accepted, until f returns false. Hand-rolled because
// decoding into a map costs several times more than the rest of a round
// trip, and a struct would match member names case-insensitively.
func members(obj []byte, f func(key []byte, v json.RawMessage) bool) {
	i := skipSpace(obj, 0) + 1 // past '{'
	for {
		i = skipSpace(obj, i)
		if obj[i] == '}' {
			return
		}
		end := skipString(obj, i)
		key := obj[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(jsonString(obj[i:end]))
		}
		i = skipSpace(obj, end) + 1 // past ':'
		i = skipSpace(obj, i)
		end = skipValue(obj, i)
		if !f(key, json.RawMessage(obj[i:end])) {
			return
		}
		i = skipSpace(obj, end)
		if obj[i] == ',' {
			i++
		}
	}
}

// split reads a message's members. Of duplicate members the last wins, as
// in encoding/json.
func split(obj []byte) (env envelope) {
	members(obj, func(key []byte, v json.RawMessage) bool {
		switch string(key) { // no allocation
		case "jsonrpc":
			env.jsonrpc = v
		case "id":
			env.id = v
		case "method":
			env.method = v
		case "params":
			env.params = v
		case "result":
			env.result = v
		case "error":
			env.err = v
		}
		return true
	})
	return env
}

// StringMember returns the string value of the top-level member name of
// params as the layer passed them (valid JSON), without decoding the
// rest: an Arrived hook reads a field of a large request this way on the
// reader goroutine. It reports false when params is no object or the
// member is absent or not a string; of duplicates the last wins.
func StringMember(params json.RawMessage, name string) (string, bool) {
	j := skipSpace(params, 0)
	if j >= len(params) || params[j] != '{' {
		return "", false
	}
	var val json.RawMessage
	members(params, func(key []byte, v json.RawMessage) bool {
		if string(key) == name {
			val = v
		}
		return true
	})
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	return jsonString(val), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}

// jsonString decodes a raw JSON string value; "" for anything else.
func jsonString(v json.RawMessage) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

// validID reports whether v is a JSON number or string, the id types ACP
// allows (JSON-RPC's null id is only for errors about unknown ids).
func validID(v json.RawMessage) bool {
	return len(v) > 0 && (v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
}

// idKey canonicalises an id for matching: 7, 7.0 and 7e0 are one number, and
// numbers never equal strings.
func idKey(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return "s" + s
		}
		return "r" + string(v)
	}
	n := json.Number(v)
	if i, err := n.Int64(); err == nil {
		return "n" + strconv.FormatInt(i, 10)
	}
	if f, err := n.Float64(); err == nil {
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return "n" + strconv.FormatInt(int64(f), 10)
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "n" + string(v)
}

// encodeRequest returns a request line (a notification when id is nil).
// json.Marshal compacts, so params given as json.RawMessage with newlines
// still make one line.
func encodeRequest(id []byte, method string, params any) ([]byte, error) {
	var p []byte
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("marshal params: %w", err)
		}
		if isNull(p) {
			p = nil // params, when present, must be structured
		}
	}
	m, _ := json.Marshal(method) // a string always marshals
	buf := make([]byte, 0, 48+len(id)+len(m)+len(p))
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if id != nil {
		buf = append(buf, `,"id":`...)
		buf = append(buf, id...)
	}
	buf = append(buf, `,"method":`...)
	buf = append(buf, m...)
	if p != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, p...)
	}
	return append(buf, "}\n"...), nil
}

// encodeResponse returns a response line carrying result (marshalled,
// compact JSON) or, when e is non-nil, e.
func encodeResponse(id, result json.RawMessage, e *Error) []byte {
	if id == nil {
		id = jsonNull
	}
	var member string
	var body []byte
	if e != nil {
		member = `,"error":`
		var err error
		if body, err = json.Marshal(e); err != nil { // invalid Data
			body, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
		}
	} else {
		member, body = `,"result":`, result
		if body == nil {
			body = jsonNull
		}
	}
	buf := make([]byte, 0, 32+len(id)+len(body))
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, member...)
	buf = append(buf, body...)
	return append(buf, "}\n"...)
}

// peekHead reads what it can of the top-level members of a message from the
// head of a line too long to decode whole: its id, and whether it is a
// request (a method member) or a response (a result or error member).
func peekHead(head []byte) (id json.RawMessage, request, response bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		switch key {
		case "method":
			request = true
		case "result", "error":
			response = true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break // this value runs past the head
		}
		if key == "id" && validID(v) {
			id = v
		}
	}
	return id, request, response
}
