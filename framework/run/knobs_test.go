package run

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/txlab/txlab/framework/sim"
	"github.com/txlab/txlab/framework/workload"
)

// TestKnobDefaultsRoundTrip: every knob's default text (what the CLI
// shows and starts from) reads back to Default()'s value, and Default()
// is valid.
func TestKnobDefaultsRoundTrip(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default() is not valid: %v", err)
	}
	for _, k := range Knobs() {
		var s Spec
		if err := k.Set(&s, k.Get(&d)); err != nil {
			t.Errorf("--%s: the default %q does not parse: %v", k.Flag, k.Get(&d), err)
			continue
		}
		if got, want := reflect.ValueOf(k.ptr(&s)).Elem().Interface(), reflect.ValueOf(k.ptr(&d)).Elem().Interface(); !reflect.DeepEqual(got, want) {
			t.Errorf("--%s: default %q reads back as %v, want %v", k.Flag, k.Get(&d), got, want)
		}
		if k.Script == "" || k.Help == "" {
			t.Errorf("--%s: no script key or help", k.Flag)
		}
	}
}

func TestKnobSet(t *testing.T) {
	for _, tc := range []struct {
		flag, text string
		want       string // error substring; "" accepted
		got        func(s *Spec) bool
	}{
		{"queues", "4096", "", func(s *Spec) bool { return s.Queues == 4096 }},
		{"queues", "4097", "4097 is out of range: 1..4096", nil},
		{"queues", "-1", "-1 is out of range: 1..4096", nil},
		{"queues", "3.5", `"3.5" is not a whole number`, nil},
		{"sockets", "4294967296", "out of range: 1..64", nil},
		{"senders", "8193", "out of range: 1..8192", nil},
		{"size", "65508", "out of range: 1..65507", nil},
		{"flows", "1048577", "out of range: 1..1048576", nil},
		{"rate", "0", "", func(s *Spec) bool { return s.RateBps == 0 }},
		{"rate", "25Gbit", "", func(s *Spec) bool { return s.RateBps == 25e9 }},
		{"rate", "2Tbit", "2Tbit is out of range: 0 (the driver's line rate, txlab list: DRIVERS) or 8bit..1600Gbit", nil},
		{"rate", "2tbit", "2tbit is out of range: ", nil}, // as given
		{"rate", "7bit", "7bit is below 8bit, the smallest rate (1 byte/s)", nil},
		{"rate", "0.1bit", "0.1bit is below 8bit, the smallest rate (1 byte/s)", nil},
		{"rate", "15bit", "", func(s *Spec) bool { return s.RateBps == 8 }}, // tc's whole bytes/s
		{"offered-rate", "5M", "", func(s *Spec) bool { return s.Workload.Rate == 5e6 }},
		{"offered-rate", "1e30", "1e+30 is out of range: 1..10G", nil},
		{"offered-rate", "0", "0 is out of range: 1..10G", nil},
		{"duration", "1h", "", func(s *Spec) bool { return s.Duration == sim.Time(3600*sim.Second) }},
		{"duration", "2h", "2h is out of range: 1ns..1h", nil},
		{"duration", "0", "0 is out of range: 1ns..1h", nil},
		{"duration", "20 parsecs", "is not a time", nil},
		{"interval", "0", "", func(s *Spec) bool { return s.Interval == 0 }},
		{"seed", "18446744073709551615", "", func(s *Spec) bool { return s.Seed == 1<<64-1 }},
		{"seed", "-1", "not a whole number", nil},
		{"driver-opts", " tx  512 ", "", func(s *Spec) bool { return reflect.DeepEqual(s.DriverArgs, []string{"tx", "512"}) }},
	} {
		s := Default()
		err := KnobByFlag(tc.flag).Set(&s, tc.text)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--%s %s: %v", tc.flag, tc.text, err)
		case tc.want == "" && !tc.got(&s):
			t.Errorf("--%s %s: not set as expected", tc.flag, tc.text)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--%s %s: %v, want %q", tc.flag, tc.text, err, tc.want)
		}
	}
}

// TestValidate: a spec built by hand (as a script builds one) is refused
// with the same ranges as the flags, and the cross checks hold.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Queues = -1 }, "--queues (device.queues): -1 is out of range: 1..4096"},
		{func(s *Spec) { s.Sockets, s.Cores = 1<<32, 1<<32 }, "--sockets (host.sockets): 4294967296 is out of range: 1..64"},
		{func(s *Spec) { s.Sockets, s.Cores, s.Threads = 64, 4096, 8 }, "CPUs, more than the 8192 supported"},
		{func(s *Spec) { s.Duration = 2 * sim.Millisecond }, "warmup 5ms must be shorter than duration 2ms (set --warmup"},
		{func(s *Spec) { s.Interval = 1 }, "interval 1ns gives 20000000 samples over duration 20ms, at most 10000: use an interval of 2us or more"},
		{func(s *Spec) { s.Workload.Kind, s.Workload.Rate = workload.UDPRate, 1e30 }, "--offered-rate (senders.rate): 1e+30 is out of range"},
		{func(s *Spec) { s.Workload.Kind, s.Workload.Flows = workload.UDPRate, 0 }, "--flows (senders.flows): 0 is out of range"},
		{func(s *Spec) { s.Set = []string{"cost.doorbell=1000000001"} }, "cost doorbell: 1000000001 is out of range"},
		{func(s *Spec) { s.Workload.Senders, s.Workload.Placement = 500, "spread" }, "500 senders but only 480 CPUs"},
		{func(s *Spec) { s.Workload.Placement = "0-8000" }, "--placement (senders.placement): workload: bad CPU list \"0-8000\": CPU 8000 does not exist (this host has CPUs 0-479)"},
		{func(s *Spec) { s.Workload.Placement = "nowhere" }, "--placement (senders.placement): workload: bad CPU list \"nowhere\""},
		{func(s *Spec) { s.LockCPUs = "0-7,480" }, "--lock-cpus (lock_cpus): workload: bad CPU list \"0-7,480\": CPU 480 does not exist"},
		{func(s *Spec) { s.IRQCPUs = "240-300,999" }, "--irq-cpus (device.irq_cpus): workload: bad CPU list \"240-300,999\": CPU 999 does not exist"},
		{func(s *Spec) { s.Set = []string{"sndbuf=0"} }, "toggle sndbuf: 0 is out of range"},
		{func(s *Spec) { s.CPU = "haswell" }, "--cpu (host.cpu): unknown cpu \"haswell\" (known: default, haswell-ep, skylake-sp)"},
		{func(s *Spec) { s.XPS = "numa" }, "--xps (device.xps): unknown XPS map \"numa\" (known: irq, cores, none)"},
		{func(s *Spec) { s.Workload.Launch = 100 * sim.Microsecond }, "--launch (senders.launch): the last of 240 senders would start at 23.9ms, after the run's 20ms"},
		{func(s *Spec) { s.Workload.Launch = 2 * sim.Second }, "--launch (senders.launch): 2s is out of range: 0 (all at once, no control exchange) or 1ns..1s"},
		{func(s *Spec) {
			s.Workload.Kind, s.Workload.Launch = workload.UDPRate, sim.Microsecond
		}, "--launch (senders.launch): only udp_stream's netperf processes are launched one by one; udp_rate senders all start at once"},
		{func(s *Spec) { s.Set = []string{"sndbuf=-5"} }, "toggle sndbuf: -5 is out of range"},
		{func(s *Spec) {
			s.Actions = []Action{{Name: "tick", At: 1, Every: 1, Do: func(*Live) error { return nil }}}
		}, "tick: every 1ns runs 19999999 times in 20ms, at most 1000000"},
	} {
		s := Default()
		tc.mut(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	// A udp_stream run leaves flows and the offered rate unused: their
	// ranges do not apply.
	s := Default()
	s.Workload.Flows, s.Workload.Rate = 0, 0
	if err := s.Validate(); err != nil {
		t.Errorf("udp_stream with flows and rate unset: %v", err)
	}
}

// TestOfferedRateBoundByLink: an open-loop rate above what the link
// carries is refused before the run, and also when an action sets it.
func TestOfferedRateBoundByLink(t *testing.T) {
	s := small()
	s.RateBps = 1_000_000_000
	s.Workload = workload.Spec{Kind: workload.UDPRate, Senders: 2, PacketSize: 64, Flows: 4}
	most := wirePps(s.RateBps, 64) // 64 B + 42 of headers = 130 B on the wire
	if most < 961538 || most > 961539 {
		t.Fatalf("wirePps(1Gbit, 64) = %v, want 1e9/8/130", most)
	}
	s.Workload.Rate = 961538
	if err := Check(s); err != nil {
		t.Errorf("a rate the link carries: %v", err)
	}
	s.Workload.Rate = 961539
	err := Check(s)
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "more than the 1Gbit link carries: at most 961.538K packets/s of 64-byte payloads") {
		t.Errorf("a rate above the link: %v", err)
	}
	s.Workload.Rate = 1000
	s.Actions = []Action{{Name: "flood", At: sim.Millisecond, Do: func(l *Live) error { return l.SetRate(0, 2e6) }}}
	if _, err := Run(s, nil); err == nil || !strings.Contains(err.Error(), "more than the 1Gbit link carries") {
		t.Errorf("an action raising the rate above the link: %v", err)
	}
}

// TestStop: a run whose Stop is closed ends with ErrInterrupted and a
// partial report, before its duration.
func TestStop(t *testing.T) {
	s := small()
	s.Duration = 10 * sim.Second
	stop := make(chan struct{})
	close(stop)
	rep, err := RunWith(s, Options{Stop: stop})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if rep == nil || rep.Error != "interrupted" {
		t.Fatalf("no partial report carrying the interruption: %+v", rep)
	}
	if rep.WindowNs >= int64(s.Duration) {
		t.Errorf("ran the whole %v", s.Duration)
	}
}

// FuzzKnobSet: no text makes a knob panic; what a knob accepts is in
// its range and prints back to text that reads back the same.
func FuzzKnobSet(f *testing.F) {
	for _, s := range []string{"30", "-1", "4294967296", "100Gbit", "1e30", "5M", "20ms", "1h1ns", "NaN", "18446744073709551616", "tx 512", ""} {
		f.Add(uint8(0), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, text string) {
		k := knobs[int(which)%len(knobs)]
		s := Default()
		if err := k.Set(&s, text); err != nil {
			return
		}
		if err := k.check(&s); err != nil {
			t.Fatalf("--%s %q accepted but out of range: %v", k.Flag, text, err)
		}
		var again Spec
		if err := k.Set(&again, k.Get(&s)); err != nil {
			t.Fatalf("--%s %q prints as %q, which does not read back: %v", k.Flag, text, k.Get(&s), err)
		}
		if a, b := k.Get(&again), k.Get(&s); a != b {
			t.Fatalf("--%s %q: %q reads back as %q", k.Flag, text, b, a)
		}
	})
}

// TestCheckGiven: a knob given to specs none of which uses it is
// refused, naming who gave it; one spec (or a group beside the first)
// that uses it is enough; an unknown workload is left to Validate.
func TestCheckGiven(t *testing.T) {
	spec := func(kind string, given ...Given) Spec {
		s := Default()
		s.Workload.Kind = kind
		for _, g := range given {
			s.Give(g.Flag, g.By)
		}
		return s
	}
	tcpBeside := spec(workload.UDPStream, Given{"rtt", "script"})
	tcpBeside.Also = []workload.Spec{{Kind: workload.TCPStream}}
	for _, c := range []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"flag", []Spec{spec(workload.UDPStream, Given{"offered-rate", ""})},
			"--offered-rate (senders.rate) does nothing for the udp_stream workload: it is for udp_rate and forward"},
		{"script", []Spec{spec(workload.Forward, Given{"placement", "script"})},
			"the script's senders.placement (--placement) does nothing for the forward workload"},
		{"grid, two kinds", []Spec{spec(workload.UDPStream, Given{"rx-queues", "--grid"}), spec(workload.TCPStream)},
			"--grid rx-queues does nothing for the udp_stream and tcp_stream workload: it is for forward"},
		{"one variant uses it", []Spec{spec(workload.UDPStream, Given{"offered-rate", ""}), spec(workload.UDPRate)}, ""},
		{"a group beside uses it", []Spec{tcpBeside}, ""},
		{"unknown workload", []Spec{spec("udpstream", Given{"offered-rate", ""})}, ""},
		{"knob for every workload", []Spec{spec(workload.UDPStream, Given{"queues", ""})}, ""},
	} {
		err := CheckGiven(c.specs)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Give copies: a spec's copy keeps its own list.
	a := Default()
	a.Give("flows", "")
	b := a
	b.Give("launch", "")
	a.Give("rtt", "")
	if len(a.Given) != 2 || a.Given[1].Flag != "rtt" || len(b.Given) != 2 || b.Given[1].Flag != "launch" {
		t.Errorf("copies share their lists: %v %v", a.Given, b.Given)
	}
}
