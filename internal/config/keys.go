package config

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"meka.dev/meka/internal/typo"
)

// A config value that decodes fine can still be wrong (an unknown level, a
// bad duration), and the message must point at it. go-toml's decoder keeps
// no positions, so keyIndex reads the document once more with the
// unstable parser and records where every key, table and array element is.

type position struct{ line, col int }

type keyEntry struct {
	path []string
	// at is where the key (or the table header naming it) first appears.
	at position
	// kind is the value's kind; unstable.Table for a table, whether from a
	// header, a dotted key's prefix or an inline table.
	kind unstable.Kind
	// elems are an array value's element positions; zero when unknown.
	elems []position
}

type keyIndex struct {
	entries map[string]*keyEntry // by formatKey(path)
	order   []*keyEntry          // document order
	// lineStarts holds the offset of each line's first byte, so finding a
	// position is a binary search rather than a scan from the top, which
	// Parser.Shape does (quadratic over a document's keys).
	lineStarts []int
}

// indexKeys records the position of every key in data. It fails only on a
// TOML syntax error.
func indexKeys(data []byte) (*keyIndex, error) {
	x := &keyIndex{entries: map[string]*keyEntry{}, lineStarts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			x.lineStarts = append(x.lineStarts, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = x.addKey(nil, e.Key(), unstable.Table)
		case unstable.ArrayTable:
			table = x.addKey(nil, e.Key(), unstable.Table)
			// Each [[header]] is an element of the array at its path (an
			// array nested in one counts across its parents' elements).
			var last position
			for it := e.Key(); it.Next(); {
				last = x.positionOf(it.Node().Raw)
			}
			if en := x.get(table); en != nil {
				en.elems = append(en.elems, last)
			}
		case unstable.KeyValue:
			x.addKeyValue(table, e)
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return x, nil
}

// addKey notes every prefix of base + the key's parts and returns the path.
func (x *keyIndex) addKey(base []string, it unstable.Iterator, leaf unstable.Kind) []string {
	path := slices.Clone(base)
	for it.Next() {
		n := it.Node()
		path = append(path, string(n.Data))
		kind := unstable.Table
		if it.IsLast() {
			kind = leaf
		}
		x.note(path, x.positionOf(n.Raw), kind)
	}
	return path
}

func (x *keyIndex) addKeyValue(base []string, kv *unstable.Node) {
	v := kv.Value()
	kind := v.Kind
	if kind == unstable.InlineTable {
		kind = unstable.Table
	}
	path := x.addKey(base, kv.Key(), kind)
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if n := it.Node(); n.Kind == unstable.KeyValue {
				x.addKeyValue(path, n)
			}
		}
	case unstable.Array:
		e := x.get(path)
		it := v.Children()
		for it.Next() {
			if n := it.Node(); n.Kind != unstable.Comment {
				e.elems = append(e.elems, x.positionOf(n.Raw))
			}
		}
	}
}

func (x *keyIndex) note(path []string, at position, kind unstable.Kind) {
	k := formatKey(path)
	if _, ok := x.entries[k]; ok {
		return
	}
	e := &keyEntry{path: slices.Clone(path), at: at, kind: kind}
	x.entries[k] = e
	x.order = append(x.order, e)
}

func (x *keyIndex) get(path []string) *keyEntry {
	if x == nil {
		return nil
	}
	return x.entries[formatKey(path)]
}

// has reports whether the file sets path.
func (x *keyIndex) has(path ...string) bool { return x.get(path) != nil }

// locate returns where path is or, when the file does not set it, where its
// nearest enclosing table is; zero when neither appears.
func (x *keyIndex) locate(path []string) position {
	for n := len(path); n > 0; n-- {
		if e := x.get(path[:n]); e != nil {
			return e.at
		}
	}
	return position{}
}

// locateElem returns where element i of the array at path is.
func (x *keyIndex) locateElem(path []string, i int) position {
	if e := x.get(path); e != nil && i < len(e.elems) && e.elems[i].line > 0 {
		return e.elems[i]
	}
	return x.locate(path)
}

// positionOf turns a node's range into a line and a byte column, both
// 1-based. Array nodes carry no range (offset 0, length 0); those report
// zero.
func (x *keyIndex) positionOf(r unstable.Range) position {
	if r.Length == 0 {
		return position{}
	}
	off := int(r.Offset)
	line := sort.Search(len(x.lineStarts), func(i int) bool { return x.lineStarts[i] > off })
	return position{line: line, col: off - x.lineStarts[line-1] + 1}
}

// walkSchema follows path through the file schema rooted at root, matching
// struct fields by their exact toml tag (go-toml itself would also accept
// other spellings of a field name). It returns the type reached after the
// first depth parts and the struct field that led there. unknown means
// path[depth] is a key the schema does not have; otherwise depth <
// len(path) means the path runs on past a leaf value at path[:depth].
func walkSchema(root reflect.Type, path []string) (t reflect.Type, field *reflect.StructField, depth int, unknown bool) {
	t = deref(root)
	for i, part := range path {
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, part)
			if !ok {
				return t, field, i, true
			}
			t, field = deref(f.Type), &f
		case reflect.Map:
			// A map field's `elem` tag words its values.
			var ef *reflect.StructField
			if field != nil && field.Tag.Get("elem") != "" {
				ef = &reflect.StructField{Tag: reflect.StructTag(`want:` + strconv.Quote(field.Tag.Get("elem")))}
			}
			t, field = deref(t.Elem()), ef
		default:
			return t, field, i, false
		}
	}
	return t, field, len(path), false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tomlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// describeType says in words what a value of schema type t must be. A
// field's `want` tag overrides, for strings that carry more meaning
// (durations, levels); a map field's `elem` tag words its values.
func describeType(t reflect.Type, f *reflect.StructField) string {
	if f != nil {
		if w := f.Tag.Get("want"); w != "" {
			return w
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem(), nil), "a "), "an ") + "s"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "a table of strings"
		}
		return "a table of tables"
	case reflect.Struct:
		return "a table"
	}
	return "a value of another type"
}

// knownKeys lists the keys the schema allows in the table of type t.
func knownKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, tomlName(t.Field(i)))
	}
	return keys
}

// suggest returns the known key closest to name when it is a likely typo.
func suggest(name string, known []string) string {
	return typo.Nearest(strings.ToLower(name), known, 2)
}

// Locate says where key is set in the config file at path: the line and
// column of element elem of the array of tables at key (elem < 0: the key
// itself), or of its nearest enclosing table when the file does not set it;
// zeros when the file cannot be read or parsed. It serves values whose
// shape another package checks after Load (the [hooks] table), so their
// errors name a line as every other config error does.
func Locate(path string, key []string, elem int) (line, col int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	idx, err := indexKeys(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if err != nil {
		return 0, 0
	}
	pos := idx.locate(key)
	if elem >= 0 {
		pos = idx.locateElem(key, elem)
	}
	return pos.line, pos.col
}
