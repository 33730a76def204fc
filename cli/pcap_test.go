package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tcpdumpRead runs the real tcpdump on a capture: one line per packet,
// nanosecond timestamps, the IP header in full.
func tcpdumpRead(t *testing.T, file string) []string {
	t.Helper()
	out, err := exec.Command("tcpdump", "-r", file, "-nn", "-tt", "-v", "--time-stamp-precision=nano").Output()
	if err != nil {
		t.Fatalf("tcpdump -r %s: %v", file, err)
	}
	// -v puts the transport line under the IP line: join them.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "    ") && len(lines) > 0 {
			lines[len(lines)-1] += " |" + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// The capture read back by the real tcpdump (Debian's tcpdump package;
// CI installs it): the packets the run said it wrote, the flow keys'
// addresses and ports, the senders' DSCP in the tos byte, timestamps in
// simulated seconds and in order. Both formats.
func TestPcapReadByTcpdump(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump is not installed (apt-get install tcpdump)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "ef.tengo")
	if err := os.WriteFile(script, []byte(`txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 2, rate: "100Gbit"})
txlab.qdisc("mq pfifo")
txlab.senders({kind: "udp_rate", count: 2, size: 120, flows: 16, rate: "1M", dscp: 46})
txlab.duration("3ms")
txlab.warmup("1ms")
`), 0o644); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^(\d+)\.(\d{9}) IP \(tos 0x([0-9a-f]+), ttl 64, id \d+, offset 0, flags \[DF\], proto UDP \(17\), length (\d+)\) \|10\.0\.0\.1\.(\d+) > 10\.1\.(\d+)\.(\d+)\.12866: UDP, length 120$`)
	for _, name := range []string{"ef.pcapng", "ef.pcap"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name)
			out, err := txlab(t, "run", script, "--no-progress", "--pcap", file, "--pcap-window", "2ms@1ms", "-o", filepath.Join(dir, "r.txt"))
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`pcap: .*: (\d+) packets`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no pcap line in %q", out)
			}
			want, _ := strconv.Atoi(m[1])
			lines := tcpdumpRead(t, file)
			if want < 100 || len(lines) != want {
				t.Fatalf("tcpdump read %d packets, the run wrote %s", len(lines), m[1])
			}
			var last int64 = -1
			for i, l := range lines {
				f := line.FindStringSubmatch(l)
				if f == nil {
					t.Fatalf("packet %d: %q", i, l)
				}
				sec, _ := strconv.ParseInt(f[1], 10, 64)
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				at := sec*1e9 + ns
				if at < last || at < 1_000_000 || at >= 3_000_000 {
					t.Fatalf("packet %d at %d ns (previous %d): outside the window or out of order", i, at, last)
				}
				last = at
				if f[3] != "b8" || f[4] != "148" { // DSCP 46 (EF) << 2; 120 + 8 + 20
					t.Fatalf("packet %d: tos 0x%s length %s, want tos 0xb8 length 148", i, f[3], f[4])
				}
			}
		})
	}
}

func TestPcapFlags(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "x.pcapng")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--pcap", f, "--pcap-snaplen", "0"}, "--pcap-snaplen: 0 is out of range: 1..262144"},
		{[]string{"--pcap", f, "--pcap-snaplen", "300000"}, "--pcap-snaplen: 300000 is out of range"},
		{[]string{"--pcap", f, "--pcap-window", "10ms"}, `--pcap-window: pcap window "10ms": want LEN@START`},
		{[]string{"--pcap-window", "10ms@0"}, "--pcap-window: give --pcap FILE too"},
	} {
		_, err := txlab(t, append(append([]string(nil), quick...), tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
		if _, serr := os.Stat(f); serr == nil {
			t.Fatalf("%v: a refused run wrote %s", tt.args, f)
		}
	}
	// Several variants: one file each, named after the variant.
	out, err := txlab(t, append(append([]string(nil), quick...), "--pcap", f, "--pcap-window", "50@1ms", "--compare", "profile=6.18,6.19-rc1")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x-6.18.pcapng", "x-6.19-rc1.pcapng"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 || !strings.Contains(out, name+": 50 packets") {
			t.Errorf("%s: %v; output %q", name, err, out)
		}
	}
}
