package config

import (
	"reflect"
	"strings"
)

// Key is one key a config file may set, as the parser's schema has it.
type Key struct {
	// Path is the dotted key; NAME stands for a name the file chooses
	// (profiles.NAME.model, mcp.servers.NAME.url).
	Path string
	// Type says in words what value the key takes.
	Type string
}

// Keys lists every key the parser accepts, in schema order. A table of
// free-form names (profiles, mcp.servers) is listed by its keys; a table of
// plain values (tools.tool_permissions) is one key.
func Keys() []Key {
	var out []Key
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			path := prefix + tomlName(f)
			ft := deref(f.Type)
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, path+".")
			case ft.Kind() == reflect.Map && deref(ft.Elem()).Kind() == reflect.Struct:
				walk(deref(ft.Elem()), path+".NAME.")
			default:
				out = append(out, Key{Path: path, Type: describeType(f.Type, &f)})
			}
		}
	}
	walk(reflect.TypeFor[fileConfig](), "")
	return out
}

// Setting is a key a config file sets.
type Setting struct {
	// Key is the key as written, dotted (profiles.local.model).
	Key string
	// Schema is the key as Keys lists it (profiles.NAME.model); for a
	// table header it is the table's path.
	Schema string
	Line   int
}

// settings lists what the file indexed by idx sets, in document order.
func settings(idx *keyIndex) []Setting {
	root := reflect.TypeFor[fileConfig]()
	out := make([]Setting, 0, len(idx.order))
	for _, e := range idx.order {
		out = append(out, Setting{Key: formatKey(e.path), Schema: schemaPath(root, e.path), Line: e.at.line})
	}
	return out
}

// schemaPath spells path as Keys does, NAME for a name the file chose.
func schemaPath(root reflect.Type, path []string) string {
	t := deref(root)
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, p)
			if !ok {
				return strings.Join(parts[:i+1], ".")
			}
			t = deref(f.Type)
		case reflect.Map:
			if deref(t.Elem()).Kind() == reflect.Struct {
				parts[i] = "NAME"
			}
			t = deref(t.Elem())
		}
	}
	return strings.Join(parts, ".")
}
