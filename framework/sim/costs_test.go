package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unsourcedCosts parses Go source holding a struct Costs and returns the
// names of its entries (their `cost:"name"` tags, in field order) and
// those without a source comment. An entry is sourced when its name
// appears as a word in some comment of the file (a group comment names
// several: "qdisc_rand: ...", "llist_node is ...", a comment on its
// default in DefaultCosts), or when its field has a doc comment of its
// own. A comment right above a run of fields (the next field follows on
// the next line with no doc comment) heads the run ("// Spinlocks
// (qspinlock)."): it is not the first field's source. Tags are not
// comments, so an entry's help text never counts.
func unsourcedCosts(filename string, src any) (names, missing []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	var text strings.Builder
	for _, cg := range f.Comments {
		text.WriteString(cg.Text())
		text.WriteString("\n")
	}
	comments := text.String()
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Costs" {
			st, _ = ts.Type.(*ast.StructType)
		}
		return st == nil
	})
	if st == nil {
		return nil, nil, nil
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	fields := st.Fields.List
	for i, fld := range fields {
		name := ""
		if fld.Tag != nil {
			tag, err := strconv.Unquote(fld.Tag.Value)
			if err != nil {
				return nil, nil, err
			}
			name = reflect.StructTag(tag).Get("cost")
		}
		if name == "" {
			name = "(untagged field " + fld.Names[0].Name + ")"
			names, missing = append(names, name), append(missing, name)
			continue
		}
		names = append(names, name)
		ownDoc := fld.Doc != nil
		if ownDoc && i+1 < len(fields) {
			next := fields[i+1]
			if next.Doc == nil && line(next.Pos()) == line(fld.End())+1 {
				ownDoc = false // a header of the run of fields it starts
			}
		}
		word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`)
		if !ownDoc && !word.MatchString(comments) {
			missing = append(missing, name)
		}
	}
	return names, missing, nil
}

func TestUnsourcedCosts(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // entries without a source comment
	}{
		{"named in a group comment", `package p
type Costs struct {
	// a and b_c: measured by someone, somewhere.
	A  int64 ` + "`cost:\"a\" help:\"one\"`" + `
	BC int64 ` + "`cost:\"b_c\" help:\"two\"`" + `
}`, nil},
		{"a doc comment of its own", `package p
type Costs struct {
	// Someone's profile.
	A int64 ` + "`cost:\"a\"`" + `

	// The model's estimate.
	B int64 ` + "`cost:\"b\"`" + `
}`, nil},
		{"named on its default", `package p
type Costs struct {
	A int64 ` + "`cost:\"a\"`" + `
}
func defaults() *Costs {
	return &Costs{
		// a: from the kernel's code.
		A: 1,
	}
}`, nil},
		{"no comment", `package p
type Costs struct {
	// b: sourced.
	B int64 ` + "`cost:\"b\"`" + `

	A int64 ` + "`cost:\"a\" help:\"a is measured\"`" + `
}`, []string{"a"}},
		{"a header is not a source", `package p
type Costs struct {
	// Spinlocks.
	A int64 ` + "`cost:\"a\"`" + `
	B int64 ` + "`cost:\"b\"`" + `
}`, []string{"a", "b"}},
		{"a name inside another word", `package p
type Costs struct {
	// sched_tick and ticks, destructor_retpoline.
	Tick int64 ` + "`cost:\"tick\"`" + `
	D    int64 ` + "`cost:\"destructor\"`" + `
}`, []string{"tick", "destructor"}},
		{"an untagged field", `package p
type Costs struct {
	// X: sourced.
	X int64
}`, []string{"(untagged field X)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, missing, err := unsourcedCosts("costs.go", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(missing, tt.want) {
				t.Errorf("unsourced %q, want %q", missing, tt.want)
			}
		})
	}
}

// Every entry of the cost table says where its figure comes from (a
// seed's profile, the kernel's code, a public measurement) or that it is
// the model's estimate, in a comment in costs.go that names it.
func TestCostsSourced(t *testing.T) {
	names, missing, err := unsourcedCosts("costs.go", nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ci := range DefaultCosts().List() {
		want = append(want, ci.Name)
	}
	got := slices.Clone(names)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("costs.go's struct Costs has entries %q, Costs.List %q", got, want)
	}
	for _, name := range missing {
		t.Errorf("cost %s has no source comment in costs.go: name it in a comment that says what the figure stands for and where it comes from (or that it is the model's estimate)", name)
	}
}

// ApplyLockdep adds lockdep's costs where the kernel's code takes a lock
// or enters an RCU read section, by how many times each entry's code
// does, and leaves every other entry alone.
func TestApplyLockdep(t *testing.T) {
	d := DefaultCosts()
	d.LockdepAcquire, d.LockdepRelease, d.LockdepSeqcount = 10, 5, 20 // as --set would, before the toggle applies
	c := *d
	c.ApplyLockdep()
	want := map[string]int64{
		"spin_acquire": 10, "spin_release": 5, "qdisc_tstamp": 20, "wake_up": 30,
		"xmit_entry": 15, "pick_tx": 15, "qdisc_hash": 15, "qdisc_rand": 15, "netif_receive_skb": 15,
		"ip_rcv": 15, "neigh_output": 15, "stack_per_packet": 15, "tcp_sendmsg": 15, "tcp_xmit": 15, "context_switch": 15,
	}
	before := map[string]int64{}
	for _, e := range d.List() {
		before[e.Name] = e.Value
	}
	for _, e := range c.List() {
		if got := e.Value - before[e.Name]; got != want[e.Name] {
			t.Errorf("%s: +%d, want +%d", e.Name, got, want[e.Name])
		}
	}
}
