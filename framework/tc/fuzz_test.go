package tc

import (
	"strings"
	"testing"
)

// FuzzParseQdisc feeds command lines to the parser: it must never panic,
// and whatever it accepts must print back to words that parse to the
// same command.
func FuzzParseQdisc(f *testing.F) {
	for _, s := range []string{
		"handle 1: root fq_codel limit 100", "root handle 1: mq fq", "parent 8001:1e pfifo",
		"dev eth0 handle 0x10 parent :1 cake", "handle none parent ffffffff sfq",
		"handle 1:5 est 1s 8s fq", "parent 1:1 root", "handle -0: parent +1:+2 x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Fields(s)
		q, err := ParseQdisc(words)
		if err != nil {
			return
		}
		back, err := ParseQdisc(q.Words())
		if err != nil {
			t.Fatalf("%q parsed to %+v, whose words %q do not parse: %v", s, q, q.Words(), err)
		}
		if strings.Join(back.Words(), " ") != strings.Join(q.Words(), " ") {
			t.Fatalf("%q: %q then %q", s, q.Words(), back.Words())
		}
		if p, ok := ParseClassID(q.Parent.String()); !ok || (p != q.Parent && q.Parent != Unspec) {
			t.Fatalf("parent %#x prints as %q which parses to %#x, %v", uint32(q.Parent), q.Parent.String(), uint32(p), ok)
		}
	})
}
