package script

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/d5/tengo/v2"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/units"
	"github.com/txlab/txlab/framework/workload"
)

// maxDepth bounds how deeply maps and arrays nest in a value a script
// hands to Go (the txlab module, a hook's act): deeper is refused, not
// recursed into.
const maxDepth = 64

// fromObj converts a Tengo value to Go: int64, float64, string, bool,
// []any, map[string]any, nil (undefined) or *hookObj. A map or array
// that contains itself (a := {}; a.x = a) or nests deeper than maxDepth
// is an error, not an endless recursion.
func fromObj(o tengo.Object) (any, error) { return convert(o, nil) }

// convert is fromObj with the containers on the way down to o.
func convert(o tengo.Object, path []tengo.Object) (any, error) {
	switch v := o.(type) {
	case *tengo.Int:
		return v.Value, nil
	case *tengo.Float:
		return v.Value, nil
	case *tengo.String:
		return v.Value, nil
	case *tengo.Char:
		return string(v.Value), nil
	case *tengo.Bool:
		return !v.IsFalsy(), nil
	case *tengo.Undefined:
		return nil, nil
	case *hookObj:
		return v, nil
	case *tengo.Array, *tengo.ImmutableArray, *tengo.Map, *tengo.ImmutableMap:
		if err := enter(o, path); err != nil {
			return nil, err
		}
		path = append(path, o)
		switch v := o.(type) {
		case *tengo.Array:
			return fromList(v.Value, path)
		case *tengo.ImmutableArray:
			return fromList(v.Value, path)
		case *tengo.Map:
			return fromMap(v.Value, path)
		case *tengo.ImmutableMap:
			return fromMap(v.Value, path)
		}
	}
	return nil, fmt.Errorf("a %s cannot be used here", o.TypeName())
}

// enter refuses a container already on the path (a cycle) or one level
// too deep.
func enter(o tengo.Object, path []tengo.Object) error {
	for _, p := range path {
		if p == o {
			return fmt.Errorf("the %s contains itself", o.TypeName())
		}
	}
	if len(path) >= maxDepth {
		return fmt.Errorf("maps and arrays nested more than %d deep", maxDepth)
	}
	return nil
}

func fromList(l []tengo.Object, path []tengo.Object) (any, error) {
	out := make([]any, len(l))
	for i, o := range l {
		v, err := convert(o, path)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

func fromMap(m map[string]tengo.Object, path []tengo.Object) (any, error) {
	out := make(map[string]any, len(m))
	for _, k := range sortedTengoKeys(m) { // the first error found is the same every run
		v, err := convert(m[k], path)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// checkValue walks o as fromObj would, without converting: nil when o
// is acyclic and no deeper than maxDepth.
func checkValue(o tengo.Object, path []tengo.Object) error {
	var kids []tengo.Object
	switch v := o.(type) {
	case *tengo.Array:
		kids = v.Value
	case *tengo.ImmutableArray:
		kids = v.Value
	case *tengo.Map:
		for _, k := range sortedTengoKeys(v.Value) {
			kids = append(kids, v.Value[k])
		}
	case *tengo.ImmutableMap:
		for _, k := range sortedTengoKeys(v.Value) {
			kids = append(kids, v.Value[k])
		}
	default:
		return nil
	}
	if err := enter(o, path); err != nil {
		return err
	}
	path = append(path, o)
	for _, k := range kids {
		if err := checkValue(k, path); err != nil {
			return err
		}
	}
	return nil
}

func sortedTengoKeys(m map[string]tengo.Object) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// typeName names a converted value's type the way a script author sees it.
func typeName(v any) string {
	switch v.(type) {
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "map"
	case nil:
		return "undefined"
	case *hookObj:
		return "hook"
	}
	return fmt.Sprintf("%T", v)
}

// sortedKeys returns a map's keys in order (Tengo maps have none).
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkKeys rejects keys outside known, naming the allowed ones.
func checkKeys(what string, m map[string]any, known ...string) error {
	for _, k := range sortedKeys(m) {
		found := false
		for _, n := range known {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			sorted := append([]string(nil), known...)
			sort.Strings(sorted)
			return fmt.Errorf("%s: unknown option %q (known: %s)", what, k, strings.Join(sorted, ", "))
		}
	}
	return nil
}

func asString(what string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string, got %s %v", what, typeName(v), v)
	}
	return s, nil
}

func asMap(what string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a map, got %s", what, typeName(v))
	}
	return m, nil
}

// asInt accepts an int, or a float with no fraction, in [lo, hi].
func asInt(what string, v any, lo, hi int64) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || math.Abs(x) > 1<<62 {
			return 0, fmt.Errorf("%s: want a whole number, got %v", what, x)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("%s: want a whole number, got %s %v", what, typeName(v), v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s: %d is out of range [%d, %d]", what, n, lo, hi)
	}
	return n, nil
}

// asDuration accepts "5ms", "1.5s", "100us", "250ns" or an int of ns.
func asDuration(what string, v any) (sim.Time, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("%s: negative time %dns", what, x)
		}
		return sim.Time(x), nil
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a time (e.g. 20ms, 1.5s, 100us, 250ns)", what, x)
		}
		if d < 0 {
			return 0, fmt.Errorf("%s: negative time %q", what, x)
		}
		return sim.Time(d), nil
	}
	return 0, fmt.Errorf("%s: want a time like \"20ms\" or an int of ns, got %s %v", what, typeName(v), v)
}

// asLinkRate is a link rate in bits/s: tc words ("100Gbit", "25gbit") or a
// number of bits/s. It reads as the CLI's --rate reads its word: whole
// bytes/s, and a rate that is not 0 but below 8bit refused. inRange
// checks the rate, in bits/s, before it becomes an int64 (a float past
// int64, 1e40, would wrap); given is the rate as written ("2tbit",
// "1e+40bit"), for its error.
func asLinkRate(what string, v any, inRange func(bits float64, given string) error) (int64, error) {
	var bits float64
	var given string
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("%s: negative rate %d", what, x)
		}
		bits, given = float64(x), strconv.FormatInt(x, 10)+"bit"
	case float64:
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%s: bad rate %v", what, x)
		}
		bits, given = x, strconv.FormatFloat(x, 'g', -1, 64)+"bit"
	case string:
		r, err := units.ParseRate(x)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", what, err)
		}
		bits, given = float64(r), strings.TrimSpace(x)
	default:
		return 0, fmt.Errorf("%s: want a rate like \"100Gbit\", got %s %v", what, typeName(v), v)
	}
	if err := inRange(bits, given); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	r, err := units.ParseRateBits(bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", what, err)
	}
	return r, nil
}

// asCount is a packet rate: "5M", "630K", "5Mpps", or a number.
func asCount(what string, v any) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%s: bad number %v", what, x)
		}
		return x, nil
	case string:
		r, err := units.ParseCount(x)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", what, err)
		}
		return r, nil
	}
	return 0, fmt.Errorf("%s: want a rate like \"5M\", got %s %v", what, typeName(v), v)
}

// word renders a value as a tc or toggle word: true/false -> on/off.
func word(what string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		if strings.ContainsAny(x, " \t\n") || x == "" {
			return "", fmt.Errorf("%s: %q must be one word", what, x)
		}
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		if x {
			return "on", nil
		}
		return "off", nil
	}
	return "", fmt.Errorf("%s: want a string, number or bool, got %s", what, typeName(v))
}

// qdiscWords turns a qdisc description into tc words. A string is split
// on blanks ("mq fq", "handle 1: root fq_codel target 5ms ecn"); an
// array is words; a map is {kind: "fq_codel", target: "5ms", ecn: true}:
// its handle and parent keys come first, as tc's words, then the kind,
// then its other keys as options in sorted order (Tengo maps have no
// order), true a bare keyword, false "no"+key, anything else "key
// value". mq takes its child as {kind: "mq", child: "fq"} or a child map.
func qdiscWords(what string, v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		w := strings.Fields(x)
		if len(w) == 0 {
			return nil, fmt.Errorf("%s: empty qdisc", what)
		}
		return w, nil
	case []any:
		var out []string
		for i, e := range x {
			s, err := word(fmt.Sprintf("%s word %d", what, i), e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: empty qdisc", what)
		}
		return out, nil
	case map[string]any:
		kv, ok := x["kind"]
		if !ok {
			return nil, fmt.Errorf("%s: a qdisc map needs a kind, e.g. {kind: \"fq_codel\", target: \"5ms\"}", what)
		}
		kind, err := asString(what+" kind", kv)
		if err != nil {
			return nil, err
		}
		out, err := selectorWords(what, x)
		if err != nil {
			return nil, err
		}
		out = append(out, kind)
		if kind == "mq" {
			if err := checkKeys(what+" ("+kind+")", x, "kind", "child", "handle", "parent"); err != nil {
				return nil, err
			}
			if c, ok := x["child"]; ok {
				cw, err := qdiscWords(what+" child", c)
				if err != nil {
					return nil, err
				}
				out = append(out, cw...)
			}
			return out, nil
		}
		opts, err := optionWords(what, x, "kind", "handle", "parent")
		if err != nil {
			return nil, err
		}
		return append(out, opts...), nil
	}
	return nil, fmt.Errorf("%s: want tc words (\"fq_codel target 5ms\") or a map ({kind: \"fq_codel\"}), got %s", what, typeName(v))
}

// selectorWords are a qdisc map's handle and parent keys as tc's words.
func selectorWords(what string, m map[string]any) ([]string, error) {
	var out []string
	for _, k := range []string{"handle", "parent"} {
		if v, ok := m[k]; ok {
			w, err := word(what+" "+k, v)
			if err != nil {
				return nil, err
			}
			out = append(out, k, w)
		}
	}
	return out, nil
}

// optionWords renders a map of options as tc words, sorted by key.
func optionWords(what string, m map[string]any, skip ...string) ([]string, error) {
	var out []string
next:
	for _, k := range sortedKeys(m) {
		for _, s := range skip {
			if k == s {
				continue next
			}
		}
		switch x := m[k].(type) {
		case bool:
			if x {
				out = append(out, k)
			} else {
				out = append(out, "no"+k)
			}
		default:
			s, err := word(what+" "+k, x)
			if err != nil {
				return nil, err
			}
			out = append(out, k, s)
		}
	}
	return out, nil
}

// senderList parses which senders an action means: "all", an int, an
// array of ints, or a CPU-list-style string "0-7,16".
func senderList(what string, v any) ([]int, error) {
	switch x := v.(type) {
	case string:
		if x == "all" {
			return nil, nil
		}
		idx, err := workload.ParseCPUList(x, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not \"all\" or a list like \"0-7,16\"", what, x)
		}
		return idx, nil
	case int64:
		if x < 0 {
			return nil, fmt.Errorf("%s: sender %d is negative", what, x)
		}
		return []int{int(x)}, nil
	case []any:
		out := []int{}
		for _, e := range x {
			n, err := asInt(what, e, 0, 1<<20)
			if err != nil {
				return nil, err
			}
			out = append(out, int(n))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want \"all\", a sender index, an array or \"0-7,16\", got %s", what, typeName(v))
}
