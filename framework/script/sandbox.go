package script

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/d5/tengo/v2"
	"github.com/d5/tengo/v2/parser"
	"github.com/d5/tengo/v2/stdlib"
	tjson "github.com/d5/tengo/v2/stdlib/json"
)

// What the sandbox adds to Tengo so that a script cannot crash or hang
// the host and its reports stay a function of script and seed:
//
//   - Maps are iterated in key order. Tengo walks a map in Go's map order,
//     which changes from run to run. Every `for k, v in x` of a script or
//     hook is compiled as `for k, v in @iter(x)` (an AST rewrite, @iter
//     cannot be written in source), the enum module's loops likewise, and
//     json.encode, fmt.sprintf, format() and string() print maps with
//     sorted keys. Only a map turned into text by `+` keeps Go's order.
//   - Go panics inside stdlib functions become errors at the call (text.
//     repeat with a negative count), and a value that contains itself or
//     nests deeper than maxDepth is refused before a stdlib function
//     recurses into it.
//   - A VM stopped by a Go panic (an integer divided by zero) or by the
//     wall-time bound reports where it stopped (vmPos).

// iterName is the global the rewritten loops call.
const iterName = "@iter"

// overrides are globals that shadow Tengo builtins of the same name.
var overrides = []string{iterName, "string", "format"}

// overrideObjs are the objects behind overrides, in the same order;
// they hold no state, so every VM shares them.
var overrideObjs = overrideValues()

func overrideValues() []tengo.Object {
	builtin := map[string]*tengo.BuiltinFunction{}
	for _, b := range tengo.GetAllBuiltinFunctions() {
		builtin[b.Name] = b
	}
	str, format := builtin["string"], builtin["format"]
	return []tengo.Object{
		&tengo.UserFunction{Name: "iter", Value: func(args ...tengo.Object) (tengo.Object, error) {
			if len(args) != 1 {
				return nil, tengo.ErrWrongNumArguments
			}
			return sortedIterable(args[0]), nil
		}},
		&tengo.UserFunction{Name: "string", Value: func(args ...tengo.Object) (tengo.Object, error) {
			if len(args) >= 1 && isContainer(args[0]) {
				s, err := sortedString(args[0])
				if err != nil {
					return nil, err
				}
				if len(s) > tengo.MaxStringLen {
					return nil, tengo.ErrStringLimit
				}
				return &tengo.String{Value: s}, nil
			}
			return str.Value(args...)
		}},
		&tengo.UserFunction{Name: "format", Value: func(args ...tengo.Object) (tengo.Object, error) {
			args, err := sortedArgs(args)
			if err != nil {
				return nil, err
			}
			return format.Value(args...)
		}},
	}
}

// sortedIterable is a map that iterates in key order, or x itself.
func sortedIterable(x tengo.Object) tengo.Object {
	switch m := x.(type) {
	case *tengo.Map:
		return &sortedMap{Map: m, m: m.Value}
	case *tengo.ImmutableMap:
		return &sortedMap{Map: &tengo.Map{Value: m.Value}, m: m.Value}
	}
	return x
}

// sortedMap is a map whose iteration is in key order.
type sortedMap struct {
	*tengo.Map
	m map[string]tengo.Object
}

func (o *sortedMap) Iterate() tengo.Iterator {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return &sortedIter{m: o.m, keys: keys}
}

// sortedIter walks a map's keys in order; values are read live, as
// Tengo's MapIterator reads them.
type sortedIter struct {
	tengo.ObjectImpl
	m    map[string]tengo.Object
	keys []string
	i    int
}

func (it *sortedIter) TypeName() string { return "map-iterator" }
func (it *sortedIter) String() string   { return "<map-iterator>" }
func (it *sortedIter) Next() bool       { it.i++; return it.i <= len(it.keys) }
func (it *sortedIter) Key() tengo.Object {
	return &tengo.String{Value: it.keys[it.i-1]}
}
func (it *sortedIter) Value() tengo.Object {
	if v, ok := it.m[it.keys[it.i-1]]; ok {
		return v
	}
	return tengo.UndefinedValue
}

func isContainer(o tengo.Object) bool {
	switch o.(type) {
	case *tengo.Map, *tengo.ImmutableMap, *tengo.Array, *tengo.ImmutableArray:
		return true
	}
	return false
}

// sortedString is o.String() with map keys in order (Tengo's layout:
// "{k: v, ...}", "[a, b]").
func sortedString(o tengo.Object) (string, error) {
	if err := checkValue(o, nil); err != nil {
		return "", err
	}
	var b strings.Builder
	writeSorted(&b, o)
	return b.String(), nil
}

// container is o's elements if o is a map or an array (mutable or
// not): a map's in m, an array's in list; ok is false for anything else.
func container(o tengo.Object) (list []tengo.Object, m map[string]tengo.Object, ok bool) {
	switch v := o.(type) {
	case *tengo.Map:
		return nil, v.Value, true
	case *tengo.ImmutableMap:
		return nil, v.Value, true
	case *tengo.Array:
		return v.Value, nil, true
	case *tengo.ImmutableArray:
		return v.Value, nil, true
	}
	return nil, nil, false
}

func writeSorted(b *strings.Builder, o tengo.Object) {
	list, m, ok := container(o)
	if !ok {
		b.WriteString(o.String())
		return
	}
	if m != nil {
		b.WriteByte('{')
		for i, k := range sortedTengoKeys(m) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + ": ")
			writeSorted(b, m[k])
		}
		b.WriteByte('}')
		return
	}
	b.WriteByte('[')
	for i, e := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		writeSorted(b, e)
	}
	b.WriteByte(']')
}

// textObj stands in for a map or array in a format call: its text is
// sorted, its type name the original's.
type textObj struct {
	tengo.ObjectImpl
	typ, s string
}

func (t *textObj) TypeName() string { return t.typ }
func (t *textObj) String() string   { return t.s }

// sortedArgs replaces maps and arrays among format arguments by their
// sorted text.
func sortedArgs(args []tengo.Object) ([]tengo.Object, error) {
	out := make([]tengo.Object, len(args))
	for i, a := range args {
		out[i] = a
		if isContainer(a) {
			s, err := sortedString(a)
			if err != nil {
				return nil, fmt.Errorf("argument %d: %w", i+1, err)
			}
			out[i] = &textObj{typ: a.TypeName(), s: s}
		}
	}
	return out, nil
}

// jsonEncode is json.encode with map keys in order: the same bytes as
// Tengo's encoder, which walks maps in Go's order.
func jsonEncode(args ...tengo.Object) (tengo.Object, error) {
	if len(args) != 1 {
		return nil, tengo.ErrWrongNumArguments
	}
	if err := checkValue(args[0], nil); err != nil {
		return nil, err
	}
	b, err := encodeSorted(nil, args[0])
	if err != nil {
		return &tengo.Error{Value: &tengo.String{Value: err.Error()}}, nil
	}
	if len(b) > tengo.MaxBytesLen {
		return nil, tengo.ErrBytesLimit
	}
	return &tengo.Bytes{Value: b}, nil
}

func encodeSorted(b []byte, o tengo.Object) ([]byte, error) {
	list, m, ok := container(o)
	if !ok {
		eb, err := tjson.Encode(o)
		return append(b, eb...), err
	}
	var err error
	if m != nil {
		b = append(b, '{')
		for i, k := range sortedTengoKeys(m) {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = encodeSorted(b, &tengo.String{Value: k}); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = encodeSorted(b, m[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = encodeSorted(b, e); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// guarded is a stdlib function that refuses self-containing or too
// deeply nested arguments and turns a Go panic into an error at the call.
func guarded(module string, f *tengo.UserFunction) *tengo.UserFunction {
	name := module + "." + f.Name
	return &tengo.UserFunction{Name: f.Name, Value: func(args ...tengo.Object) (ret tengo.Object, err error) {
		for i, a := range args {
			if err := checkValue(a, nil); err != nil {
				return nil, fmt.Errorf("%s: argument %d: %w", name, i+1, err)
			}
		}
		defer func() {
			if r := recover(); r != nil {
				ret, err = nil, fmt.Errorf("%s: %v", name, r)
			}
		}()
		return f.Value(args...)
	}}
}

// iterModule is what the rewritten enum module imports.
const iterModule = "@txlab/iter"

// sandboxModules are the stdlib modules a script or hook may import,
// guarded, with fmt reduced to sprintf.
func sandboxModules() *tengo.ModuleMap {
	m := tengo.NewModuleMap()
	for _, name := range []string{"base64", "hex", "json", "math", "text", "fmt"} {
		mod := map[string]tengo.Object{}
		for k, v := range stdlib.BuiltinModules[name] {
			if name == "fmt" && k != "sprintf" {
				continue // print* would write to the host's stdout
			}
			if f, ok := v.(*tengo.UserFunction); ok {
				v = guarded(name, f)
			}
			mod[k] = v
		}
		switch name {
		case "json":
			mod["encode"] = guarded(name, &tengo.UserFunction{Name: "encode", Value: jsonEncode})
		case "fmt":
			sprintf := mod["sprintf"].(*tengo.UserFunction)
			mod["sprintf"] = &tengo.UserFunction{Name: "sprintf", Value: func(args ...tengo.Object) (tengo.Object, error) {
				args, err := sortedArgs(args)
				if err != nil {
					return nil, fmt.Errorf("fmt.sprintf: %w", err)
				}
				return sprintf.Value(args...)
			}}
		}
		m.AddBuiltinModule(name, mod)
	}
	m.AddBuiltinModule(iterModule, map[string]tengo.Object{"sorted": overrideObjs[0]})
	m.AddSourceModule("enum", []byte(enumSource))
	return m
}

// enumSource is the stdlib enum module with its loops in key order.
var enumSource = func() string {
	src := stdlib.SourceModules["enum"]
	const loop, sorted = " in x {", " in __txlab_iter.sorted(x) {"
	return "__txlab_iter := import(\"" + iterModule + "\")\n" + strings.ReplaceAll(src, loop, sorted)
}()

// rewriteLoops makes every for-in of f iterate @iter(x) instead of x.
func rewriteLoops(f *parser.File) {
	walkAST(reflect.ValueOf(f))
}

// walkAST visits every node under v (Tengo's parser has no walker):
// pointers, interfaces, slices and struct fields, replacing the Iterable
// of each *parser.ForInStmt on the way.
func walkAST(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if fi, ok := v.Interface().(*parser.ForInStmt); ok && fi.Iterable != nil {
			it := fi.Iterable
			fi.Iterable = &parser.CallExpr{Func: &parser.Ident{Name: iterName, NamePos: it.Pos()},
				LParen: it.Pos(), Args: []parser.Expr{it}, RParen: it.End()}
			walkAST(reflect.ValueOf(it))
			walkAST(reflect.ValueOf(fi.Body))
			return
		}
		walkAST(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkAST(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i))
		}
	}
}

// vmPos is where vm stopped when it stopped without an error of its own:
// a Go panic inside the instruction at ip, or Abort at the wall-time
// bound before the one after ip (aborted: the VM checks the bound
// between instructions, and after a jump ip is the target minus one).
// tengo's Run places only its own errors; the instruction pointer and
// the current function are in unexported fields (ip, curFrame.fn) read
// here by reflection, under the names of tengo v2.17.0; false if they
// cannot be read.
func vmPos(vm *tengo.VM, fs *parser.SourceFileSet, aborted bool) (parser.SourceFilePos, bool) {
	return withSourceMap(vm, func(ip int, sm reflect.Value) (parser.SourceFilePos, bool) {
		// The mapped instruction at or before at, else the first after it.
		at, before, after := ip, -1, -1
		if aborted {
			at++
		}
		for it := sm.MapRange(); it.Next(); {
			switch k := int(it.Key().Int()); {
			case k <= at && k > before:
				before = k
			case k > at && (after < 0 || k < after):
				after = k
			}
		}
		best := before
		if best < 0 {
			best = after
		}
		if best < 0 {
			return parser.SourceFilePos{}, false
		}
		fp := fs.Position(parser.Pos(sm.MapIndex(reflect.ValueOf(best)).Int()))
		return fp, fp.Line > 0
	})
}

// callPos is where vm is while a module function it called runs: the
// call's place, as tengo places the function's error (SourcePos of the
// instruction, the nearest mapped one at or before ip). It walks down
// from ip, not over the whole source map as vmPos does, so that a
// script of many calls pays a few lookups a call. Read as vmPos reads.
func callPos(vm *tengo.VM, fs *parser.SourceFileSet) (parser.SourceFilePos, bool) {
	return withSourceMap(vm, func(ip int, sm reflect.Value) (parser.SourceFilePos, bool) {
		for k := ip; k >= 0; k-- {
			if p := sm.MapIndex(reflect.ValueOf(k)); p.IsValid() {
				fp := fs.Position(parser.Pos(p.Int()))
				return fp, fp.Line > 0
			}
		}
		return parser.SourceFilePos{}, false
	})
}

// withSourceMap hands place vm's instruction pointer and its current
// function's source map, read by vmSourceMap; ok is false if they
// cannot be read, or if reading them or place panics (a reflection
// panic: tengo's fields not as named).
func withSourceMap(vm *tengo.VM, place func(ip int, sm reflect.Value) (parser.SourceFilePos, bool)) (pos parser.SourceFilePos, ok bool) {
	defer func() {
		if recover() != nil {
			pos, ok = parser.SourceFilePos{}, false
		}
	}()
	ip, sm, ok := vmSourceMap(vm)
	if !ok {
		return pos, false
	}
	return place(ip, sm)
}

// vmSourceMap reads vm's instruction pointer and its current function's
// source map (instruction -> source position), unexported in tengo
// v2.17.0, by reflection; ok is false if they are not there as named.
// withSourceMap recovers from a reflection panic.
func vmSourceMap(vm *tengo.VM) (ip int, sm reflect.Value, ok bool) {
	v := reflect.ValueOf(vm).Elem()
	ipv, frame := v.FieldByName("ip"), v.FieldByName("curFrame")
	if !ipv.IsValid() || ipv.Kind() != reflect.Int || !frame.IsValid() || frame.Kind() != reflect.Pointer || frame.IsNil() {
		return 0, sm, false
	}
	fn := frame.Elem().FieldByName("fn")
	if !fn.IsValid() || fn.Kind() != reflect.Pointer || fn.IsNil() {
		return 0, sm, false
	}
	sm = fn.Elem().FieldByName("SourceMap")
	if !sm.IsValid() || sm.Kind() != reflect.Map || sm.Type().Key().Kind() != reflect.Int {
		return 0, sm, false
	}
	return int(ipv.Int()), sm, true
}
