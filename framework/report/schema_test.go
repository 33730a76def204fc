package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	_ "github.com/txlab/txlab/drivers/ice"
	"github.com/txlab/txlab/framework/report"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
	_ "github.com/txlab/txlab/plugins/fq_codel"
	_ "github.com/txlab/txlab/plugins/htb"
)

const schemaPath = "../../docs/report.schema.json"

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/report.schema.json from the Go types and docs/report.md")

// docDescriptions reads docs/report.md's table of top-level keys: key
// -> its meaning, as the document says it.
func docDescriptions(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/report.md")
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(b), "\n## ")
	out := map[string]string{}
	row := regexp.MustCompile("^\\| (`[^|]+`) \\| (.*) \\|$")
	for _, l := range strings.Split(text, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for _, k := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[1], -1) {
			out[k[1]] = m[2]
		}
	}
	return out
}

// schemaGen builds a JSON Schema (draft 2020-12) from the report's Go
// types: every struct an object that admits no other key, its keys
// without omitempty required.
type schemaGen struct{ defs map[string]any }

func (g *schemaGen) of(t reflect.Type) map[string]any {
	if t == reflect.TypeOf(json.Number("")) {
		return map[string]any{"type": "number"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		items := g.of(t.Elem())
		if typ, ok := items["type"].(string); ok && t.Elem().Kind() == reflect.Pointer {
			items["type"] = []string{typ, "null"} // a nil element is null
		}
		return map[string]any{"type": "array", "items": items}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		name := t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // recursion guard
			props, required := map[string]any{}, []string{}
			g.fields(t, props, &required)
			sort.Strings(required)
			g.defs[name] = map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	panic("schema: no rule for " + t.String())
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			g.fields(f.Type, props, required) // embedded: its keys are the parent's
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		props[name] = g.of(f.Type)
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
}

func generateSchema(t *testing.T) []byte {
	g := &schemaGen{defs: map[string]any{}}
	g.of(reflect.TypeOf(report.Report{}))
	desc := docDescriptions(t)
	rep := g.defs["Report"].(map[string]any)
	for k, p := range rep["properties"].(map[string]any) {
		d, ok := desc[k]
		if !ok {
			t.Errorf("docs/report.md does not describe the report's key %q", k)
			continue
		}
		p.(map[string]any)["description"] = d
	}
	for k := range desc {
		if _, ok := rep["properties"].(map[string]any)[k]; !ok {
			t.Errorf("docs/report.md describes %q, which the report does not have", k)
		}
	}
	s := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://github.com/txlab/txlab/docs/report.schema.json",
		"title":       "txlab run report",
		"description": "What `txlab run --format json` writes: one report, or {\"variants\": [report, ...]} for several (docs/report.md). Generated from framework/report's types and docs/report.md by `go test ./framework/report -run Schema -update-schema`.",
		"oneOf": []any{
			map[string]any{"$ref": "#/$defs/Report"},
			map[string]any{"type": "object", "properties": map[string]any{"variants": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Report"}}},
				"required": []string{"variants"}, "additionalProperties": false},
		},
		"$defs": g.defs,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The schema file is what the Go types and docs/report.md say.
func TestSchemaUpToDate(t *testing.T) {
	got := generateSchema(t)
	if *updateSchema {
		if err := os.WriteFile(schemaPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/report.schema.json is stale: go test ./framework/report -run Schema -update-schema")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// Reports validate against the schema: the golden report, a real run's
// (one and two variants, and one with htb's classes and filters), and
// nothing the schema does not know.
func TestReportsMatchSchema(t *testing.T) {
	s := compileSchema(t)
	golden, err := os.ReadFile("testdata/report.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, s, golden); err != nil {
		t.Errorf("testdata/report.json.golden: %v", err)
	}
	spec := run.Default()
	spec.Sockets, spec.Cores, spec.Threads, spec.Queues = 1, 4, 1, 2
	spec.Qdisc = "mq pfifo limit 20"
	spec.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 4, PacketSize: 64, Flows: 8, Rate: 4e6}
	spec.Duration, spec.Warmup = sim.Millisecond, sim.Millisecond/4
	var reps []*report.Report
	for _, p := range []string{"6.18", "6.19-rc1"} {
		spec.Profile, spec.Name = p, p
		rep, err := run.Run(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	// A classful tree: classes, filters, tc's warning, an invisible leaf.
	spec.Name, spec.Qdisc, spec.Queues = "", "pfifo", 1
	spec.Workload = workload.Spec{Kind: workload.UDPStream, Senders: 2, PacketSize: 1000}
	spec.Workload.Groups, _ = workload.ParseGroups("dport=5001 -")
	spec.TC = []run.TCBatch{{Name: "t.tc", Text: "qdisc add dev eth0 root handle 1: htb default 20\n" +
		"class add dev eth0 parent 1: classid 1:10 htb rate 900mbit\n" +
		"class add dev eth0 parent 1: classid 1:20 htb rate 100mbit\n" +
		"filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10\n" +
		"qdisc add dev eth0 parent 1:10 handle 10: fq_codel\n"}}
	htb, err := run.Run(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(htb.Classes) == 0 || len(htb.Filters) == 0 || len(htb.Warnings) == 0 {
		t.Fatalf("classes %d, filters %d, warnings %q", len(htb.Classes), len(htb.Filters), htb.Warnings)
	}
	var one, list, classful bytes.Buffer
	if err := report.WriteJSON(&one, reps[0]); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSONList(&list, reps); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&classful, htb); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"one run": one.Bytes(), "two variants": list.Bytes(), "classful": classful.Bytes()} {
		if err := validate(t, s, b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := bytes.Replace(one.Bytes(), []byte(`"tx_pps":`), []byte(`"tx_ppps":`), 1)
	if validate(t, s, bad) == nil {
		t.Error("a report with an unknown key validates")
	}
	bad = bytes.Replace(one.Bytes(), []byte(`"accounting_ok": true`), []byte(`"accounting_ok": "yes"`), 1)
	if validate(t, s, bad) == nil {
		t.Error("a report with a mistyped value validates")
	}
}
