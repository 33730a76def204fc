package script

import (
	"fmt"

	"github.com/txlab/txlab/framework/path"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/tcp"
	"github.com/txlab/txlab/framework/workload"
)

// setTCPSenders reads a senders map's tcp_stream keys: down, cc, ecn,
// marks, start, ping, probes.
func setTCPSenders(s *run.Spec, m map[string]any) error {
	w := &s.Workload
	if x, ok := m["down"]; ok {
		n, err := knobInt("senders down", x, "down")
		if err != nil {
			return err
		}
		w.Down = int(n)
	}
	if err := checkedString(m, "senders", "cc", &w.CC, func(v string) error { _, err := tcp.NewCC(v); return err }); err != nil {
		return err
	}
	if x, ok := m["ecn"]; ok {
		b, ok := x.(bool)
		kind := w.Kind
		if k, isStr := m["kind"].(string); isStr {
			kind = k
		}
		switch {
		case !ok && kind != workload.TCPStream:
			return fmt.Errorf("senders %w", udpECN(x)) // a codepoint meant for UDP senders, most likely
		case !ok:
			return fmt.Errorf("senders ecn: want true or false, got %s", typeName(x))
		}
		w.ECN = b
	}
	if x, ok := m["marks"]; ok {
		list, ok := x.([]any)
		if !ok {
			return fmt.Errorf("senders marks: want an array of DSCP values, e.g. [0, 8, 40, 46], got %s", typeName(x))
		}
		w.Marks = nil
		for i, v := range list {
			n, err := asInt(fmt.Sprintf("senders marks[%d]", i), v, 0, 63)
			if err != nil {
				return err
			}
			w.Marks = append(w.Marks, uint8(n))
		}
	}
	if x, ok := m["hosts"]; ok {
		list, ok := x.([]any)
		if !ok {
			return fmt.Errorf("senders hosts: want an array of connection counts per source address, e.g. [1, 8], got %s", typeName(x))
		}
		w.Hosts = nil
		for i, v := range list {
			n, err := asInt(fmt.Sprintf("senders hosts[%d]", i), v, 0, tcp.MaxFlows)
			if err != nil {
				return err
			}
			w.Hosts = append(w.Hosts, int(n))
		}
	}
	if x, ok := m["start"]; ok {
		t, err := asDuration("senders start", x)
		if err != nil {
			return err
		}
		w.Start = t
	}
	if x, ok := m["ping"]; ok {
		t, err := asDuration("senders ping", x)
		if err != nil {
			return err
		}
		s.Ping = t
	}
	if x, ok := m["probes"]; ok {
		list, ok := x.([]any)
		if !ok {
			return fmt.Errorf("senders probes: want an array of maps, e.g. [{kind: \"ping\", interval: \"200ms\"}], got %s", typeName(x))
		}
		w.Probes = nil
		for i, v := range list {
			what := fmt.Sprintf("senders probes[%d]", i)
			pm, err := asMap(what, v)
			if err != nil {
				return err
			}
			if err := checkKeys(what, pm, "kind", "interval", "dscp"); err != nil {
				return err
			}
			p := workload.Probe{Kind: workload.ProbePing, Interval: workload.DefaultPingInterval}
			if k, ok := pm["kind"]; ok {
				if p.Kind, err = asString(what+" kind", k); err != nil {
					return err
				}
				if p.Kind == workload.ProbeUDPRR {
					p.Interval = 0
				}
			}
			if k, ok := pm["interval"]; ok {
				if p.Interval, err = asDuration(what+" interval", k); err != nil {
					return err
				}
			}
			if k, ok := pm["dscp"]; ok {
				n, err := asInt(what+" dscp", k, 0, 63)
				if err != nil {
					return err
				}
				p.DSCP = uint8(n)
			}
			w.Probes = append(w.Probes, p)
		}
		probe := workload.Spec{Probes: w.Probes}
		if err := probe.ValidateProbes(); err != nil {
			return fmt.Errorf("senders probes: %w", err)
		}
	}
	return nil
}

// setPath reads txlab.path({rtt, rate, limit, loss, qdisc}).
func setPath(s *run.Spec, v any) error {
	m, err := asMap("path", v)
	if err != nil {
		return err
	}
	if err := checkKeys("path", m, "rtt", "rate", "rate_down", "limit", "loss", "qdisc"); err != nil {
		return err
	}
	giveKeys(s, "path", m)
	p := &s.Workload.Path
	if x, ok := m["rtt"]; ok {
		if p.RTT, err = asDuration("path rtt", x); err != nil {
			return err
		}
		if err := knobRange("path rtt", float64(p.RTT), "rtt"); err != nil {
			return err
		}
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{"rate", &s.PathRate}, {"rate_down", &s.PathRateDown}} {
		x, ok := m[k.key]
		if !ok {
			continue
		}
		r, err := asLinkRate("path "+k.key, x, func(bits float64, given string) error {
			if err := run.CheckPathRate(bits, given); err != nil {
				return fmt.Errorf("%w (leave it out for no bottleneck on the path)", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		*k.dst = fmt.Sprintf("%dbit", r)
	}
	if x, ok := m["limit"]; ok {
		n, err := knobInt("path limit", x, "path-limit")
		if err != nil {
			return err
		}
		p.Limit = int(n)
	}
	if x, ok := m["loss"]; ok {
		switch l := x.(type) {
		case string:
			s.PathLoss = l
		case float64, int64:
			s.PathLoss = fmt.Sprint(l)
		default:
			return fmt.Errorf("path loss: want a percentage (\"0.1%%\") or a fraction, got %s", typeName(x))
		}
	}
	if x, ok := m["qdisc"]; ok {
		words, err := qdiscWords("path qdisc", x)
		if err != nil {
			return err
		}
		if err := path.CheckQdisc(words, 1e9, path.DefaultLimit); err != nil {
			return err
		}
		p.Qdisc = words
	}
	return nil
}
