package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/ifname"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/pcap"
	"github.com/txlab/txlab/framework/run"
)

func pcapFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "pcap", Usage: "write what the device transmits to `FILE` (pcapng; classic pcap if FILE ends in .pcap), one file per variant"},
		&cli.UintFlag{Name: "pcap-snaplen", Value: pcap.DefaultSnaplen, Usage: fmt.Sprintf("bytes kept of each packet, 1..%d", pcap.MaxSnaplen)},
		&cli.StringFlag{Name: "pcap-window", Usage: fmt.Sprintf("keep LEN@START: LEN simulated time (10ms) or a packet count (1000); default the first %d packets", pcap.DefaultCount)},
		&cli.StringFlag{Name: "pcap-dev", Usage: "capture what `DEVICE` transmits, as tcpdump -i DEVICE: an ifb (--ifb), a bond's slave; default the senders' device"},
	}
}

// pcapPlan is the captures a run writes: nothing when --pcap is not
// given.
type pcapPlan struct {
	cfg   pcap.Config
	dev   string   // --pcap-dev; "" the senders' device
	paths []string // one per variant
}

// pcapConfig reads the pcap flags for specs; nothing is opened.
func pcapConfig(c *cli.Context, specs []run.Spec) (*pcapPlan, error) {
	path := c.String("pcap")
	if path == "" {
		for _, f := range []string{"pcap-snaplen", "pcap-window", "pcap-dev"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s: give --pcap FILE too", f)
			}
		}
		return nil, nil
	}
	snap := c.Uint("pcap-snaplen")
	if snap < 1 || snap > pcap.MaxSnaplen {
		return nil, fmt.Errorf("--pcap-snaplen: %d is out of range: 1..%d", snap, pcap.MaxSnaplen)
	}
	w, err := pcap.ParseWindow(c.String("pcap-window"))
	if err != nil {
		return nil, fmt.Errorf("--pcap-window: %w", err)
	}
	p := &pcapPlan{cfg: pcap.Config{Format: pcap.FormatOf(path), Snaplen: uint32(snap), Window: w, Version: version}, dev: c.String("pcap-dev")}
	if c.IsSet("pcap-dev") && !ifname.Valid(p.dev) {
		return nil, fmt.Errorf("--pcap-dev: %q is not a device name (1 to 15 characters, no '/', ':' or white space)", p.dev)
	}
	seen := map[string]string{}
	for _, s := range specs {
		f := variantPath(path, s, len(specs))
		if other, dup := seen[f]; dup {
			return nil, fmt.Errorf("--pcap: variants %q and %q would both write %s", other, s.Name, f)
		}
		seen[f] = s.Name
		p.paths = append(p.paths, f)
	}
	return p, nil
}

// variantPath is the capture file of one variant: path itself for a run
// of one, else path with "-NAME" before its extension (e2.pcapng ->
// e2-6.18.pcapng), the name's characters outside [A-Za-z0-9._-] as "_".
func variantPath(path string, s run.Spec, n int) string {
	if n == 1 {
		return path
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s.Name)
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + name + ext
}

// captures are the open capture files of a run.
type captures struct {
	plan     *pcapPlan
	outs     []*outFile
	caps     []*pcap.Capture
	attached []bool // the run reached its device: a run that failed before leaves no file
	specs    []run.Spec
}

// open creates the files (each replaced only by a complete capture).
func (p *pcapPlan) open(specs []run.Spec, g *stage) (*captures, error) {
	cs := &captures{plan: p, specs: specs}
	if p == nil {
		return cs, nil
	}
	for i, s := range specs {
		o, err := g.create(p.paths[i])
		if err != nil {
			cs.abort()
			return nil, fmt.Errorf("pcap: %w", err)
		}
		cfg := p.cfg
		cfg.Interface = "eth0"
		if p.dev != "" {
			cfg.Interface = p.dev
		}
		cfg.Description = fmt.Sprintf("txlab %s: profile %s, seed %d", variantLabel(s), s.Profile, s.Seed)
		cp, err := pcap.New(o, cfg)
		if err != nil {
			o.Abort()
			cs.abort()
			return nil, fmt.Errorf("pcap: %s: %w", p.paths[i], err)
		}
		cs.outs, cs.caps = append(cs.outs, o), append(cs.caps, cp)
	}
	cs.attached = make([]bool, len(specs))
	return cs, nil
}

// observe is run.Options.Observe for variant i (nil without captures).
func (cs *captures) observe(i int) func(*netdev.Net, *netdev.Device) error {
	if cs == nil || cs.plan == nil {
		return nil
	}
	return func(n *netdev.Net, d *netdev.Device) error {
		if name := cs.plan.dev; name != "" {
			if d = n.DeviceByName(name); d == nil {
				var have []string
				for _, x := range n.Devs {
					have = append(have, x.Name)
				}
				return fmt.Errorf("--pcap-dev: no device %q on this host (it has %s)", name, strings.Join(have, ", "))
			}
		}
		cs.caps[i].Attach(n, d)
		cs.attached[i] = true
		return nil
	}
}

func (cs *captures) abort() {
	for _, o := range cs.outs {
		o.Abort()
	}
}

// finish completes every file and says what each holds; an error is a
// capture that could not be written.
func (cs *captures) finish(c *cli.Context) error {
	if cs == nil || cs.plan == nil {
		return nil
	}
	var first error
	for i, cp := range cs.caps {
		if !cs.attached[i] {
			cs.outs[i].Abort()
			continue
		}
		n, cut, err := cp.Close()
		if err == nil {
			err = cs.outs[i].Commit()
		} else {
			cs.outs[i].Abort()
		}
		if err != nil {
			if first == nil {
				// The writer's error names the file already.
				first = fmt.Errorf("--%w", err)
			}
			continue
		}
		note := ""
		if cut {
			note = fmt.Sprintf(" (the first %d of the window; --pcap-window N@START keeps more)", n)
		}
		cs.outs[i].say(c.App.ErrWriter, fmt.Sprintf("txlab: pcap: %s: %d packets%s", cs.plan.paths[i], n, note))
	}
	return first
}
