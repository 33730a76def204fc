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

// TCP and ping as the real tcpdump reads them: every packet the run
// wrote parses with correct checksums; upload data in ECT(0) (or CE)
// with the senders' DSCP, the timestamps option, each flow's sequence
// ranges (GSO skbs: one frame of several MSS) following on from the
// last; the download's pure ACKs (Not-ECT, ECE when echoing CE) with
// rising acknowledgement numbers on segment boundaries; the ping
// probe's echo requests with its id and rising sequence.
func TestPcapTCPReadByTcpdump(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump is not installed (apt-get install tcpdump)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "tcp.tengo")
	if err := os.WriteFile(script, []byte(`txlab := import("txlab")
txlab.host({sockets: 1, cores: 4, smt: 1})
txlab.device({driver: "ice", queues: 1, rate: "100Mbit"})
txlab.qdisc("fq_codel ecn")
txlab.path({rtt: "10ms", rate: "100Mbit"})
txlab.senders({kind: "tcp_stream", flows: 2, down: 1, ecn: true, ping: "5ms", dscp: 10})
txlab.duration("400ms")
txlab.warmup("100ms")
`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tcp.pcap")
	out, err := txlab(t, "run", script, "--no-progress", "--pcap", file, "--pcap-window", "30ms@300ms", "-o", filepath.Join(dir, "r.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pcap: .*: (\d+) packets`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pcap line in %q", out)
	}
	want, _ := strconv.Atoi(m[1])
	raw, err := exec.Command("tcpdump", "-r", file, "-nn", "-tt", "-v", "-S").Output()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(l, "    ") && len(lines) > 0 {
			lines[len(lines)-1] += " |" + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, l)
	}
	if want < 20 || len(lines) != want {
		t.Fatalf("tcpdump read %d packets, the run wrote %s", len(lines), m[1])
	}
	dataLine := regexp.MustCompile(`tos 0x(2a,ECT\(0\)|2b,CE), .*proto TCP \(6\), length (\d+)\) \|10\.0\.0\.1\.(\d+) > 10\.1\.0\.1\.12866: Flags \[[.PEW]+\], cksum 0x[0-9a-f]+ \(correct\), seq (\d+):(\d+), ack 1, win 65535, options \[nop,nop,TS val (\d+) ecr (\d+)\], length (\d+)$`)
	ping := regexp.MustCompile(`tos 0x0, .*proto ICMP \(1\), length 84\) \|10\.0\.0\.1 > 10\.1\.0\.1: ICMP echo request, id 20000, seq (\d+), length 64$`)
	ackLine := regexp.MustCompile(`tos 0x28, .*proto TCP \(6\), length (\d+)\) \|10\.0\.0\.1\.(\d+) > 10\.1\.0\.1\.12866: Flags \[\.E?\], cksum 0x[0-9a-f]+ \(correct\), ack (\d+), win 65535, options \[nop,nop,TS val (\d+) ecr (\d+)(,nop,nop,sack (\d) (\{\d+:\d+\})+)?\], length 0$`)
	next := map[string]int{}
	var pings, segs, inOrder, acks int
	lastPing, lastAck := -1, 0
	for i, l := range lines {
		if f := ackLine.FindStringSubmatch(l); f != nil {
			iplen, _ := strconv.Atoi(f[1])
			ack, _ := strconv.Atoi(f[3])
			val, _ := strconv.Atoi(f[4])
			ecr, _ := strconv.Atoi(f[5])
			blocks, _ := strconv.Atoi(f[7])
			if ack < lastAck || (ack-1)%1448 != 0 {
				t.Fatalf("packet %d: ack %d after %d: want rising, on segment boundaries (1 + k x 1448)", i, ack, lastAck)
			}
			// It echoes the data's timestamp, sent one path RTT or more
			// before; SACK blocks lengthen it (tcp.Ack.Len).
			if ecr == 0 || ecr > val || val-ecr < 10 || iplen != 52+map[bool]int{true: 4 + 8*blocks}[blocks > 0] {
				t.Fatalf("packet %d: TS val %d ecr %d, IP length %d with %d SACK blocks", i, val, ecr, iplen, blocks)
			}
			lastAck = ack
			acks++
			continue
		}
		if f := ping.FindStringSubmatch(l); f != nil {
			seq, _ := strconv.Atoi(f[1])
			if seq <= lastPing {
				t.Fatalf("packet %d: ping seq %d after %d", i, seq, lastPing)
			}
			lastPing = seq
			pings++
			continue
		}
		f := dataLine.FindStringSubmatch(l)
		if f == nil {
			t.Fatalf("packet %d: %q", i, l)
		}
		iplen, _ := strconv.Atoi(f[2])
		from, _ := strconv.Atoi(f[4])
		to, _ := strconv.Atoi(f[5])
		val, _ := strconv.Atoi(f[6])
		ecr, _ := strconv.Atoi(f[7])
		n, _ := strconv.Atoi(f[8])
		if to-from != n || n == 0 || n%1448 != 0 || iplen != 20+32+n {
			t.Fatalf("packet %d: seq %d:%d, length %d, IP length %d: want whole MSS (1448) and 52 bytes of headers", i, from, to, n, iplen)
		}
		// Data echoes the far end's last ACK's TSval (ts_recent), sent
		// one path RTT or more before: 300 ms in, the ACKs have come.
		if ecr == 0 || ecr > val || val-ecr > 1000 {
			t.Fatalf("packet %d: data TS val %d ecr %d", i, val, ecr)
		}
		segs += n / 1448
		if next[f[3]] == from {
			inOrder++
		}
		next[f[3]] = to
	}
	data := len(lines) - pings - acks
	if pings < 4 || acks < 10 || len(next) != 2 || segs <= data || inOrder < data-len(next)-2 {
		t.Fatalf("%d pings, %d ACKs, %d flows, %d segments in %d TCP data frames, %d following on", pings, acks, len(next), segs, data, inOrder)
	}
}

// --pcap-dev captures another device, as tcpdump -i does: the ifb that
// an ingress redirect feeds transmits the forwarded frames (given back
// to the stack by its tasklet), read back by the real tcpdump; a device
// the host does not have is one line naming it, before anything runs,
// and no file is left.
func TestPcapDev(t *testing.T) {
	dir := t.TempDir()
	tcFile := filepath.Join(dir, "ingress.tc")
	if err := os.WriteFile(tcFile, []byte("qdisc add dev eth0 handle ffff: ingress\n"+
		"filter add dev eth0 parent ffff: protocol ip prio 1 matchall action mirred egress redirect dev ifb0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--no-progress", "--profile", "6.18", "--workload", "forward", "--offered-rate", "100K", "--size", "1000",
		"--driver", "ice", "--queues", "2", "--sockets", "1", "--cores", "4", "--smt", "1", "--duration", "3ms", "--warmup", "1ms",
		"--ifb", "ifb0", "--tc-file", tcFile, "-o", filepath.Join(dir, "r.txt")}
	file := filepath.Join(dir, "ifb0.pcap")
	out, err := txlab(t, append(args, "--pcap", file, "--pcap-dev", "ifb0")...)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pcap: .*ifb0\.pcap: (\d+) packets`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("no packets captured on ifb0: %s", out)
	}
	if _, err := exec.LookPath("tcpdump"); err == nil {
		if lines := tcpdumpRead(t, file); strconv.Itoa(len(lines)) != m[1] {
			t.Errorf("tcpdump read %d packets, the run wrote %s", len(lines), m[1])
		}
	}
	bad := filepath.Join(dir, "bad.pcap")
	_, err = txlab(t, append(args, "--pcap", bad, "--pcap-dev", "ifb9")...)
	if err == nil || !strings.Contains(err.Error(), `--pcap-dev: no device "ifb9" on this host (it has eth0, ifb0)`) {
		t.Errorf("an unknown device: %v", err)
	}
	if _, serr := os.Stat(bad); !os.IsNotExist(serr) {
		t.Errorf("%s left behind: %v", bad, serr)
	}
	if _, err := txlab(t, "run", "--pcap-dev", "ifb0"); err == nil || !strings.Contains(err.Error(), "--pcap-dev: give --pcap FILE too") {
		t.Errorf("--pcap-dev alone: %v", err)
	}
	if _, err := txlab(t, "run", "--pcap", bad, "--pcap-dev", "a/b"); err == nil || !strings.Contains(err.Error(), `--pcap-dev: "a/b" is not a device name`) {
		t.Errorf("a bad name: %v", err)
	}
}
