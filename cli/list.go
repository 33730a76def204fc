package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/driver"
	"github.com/txlab/txlab/framework/netdev"
	"github.com/txlab/txlab/framework/qdisc"
	"github.com/txlab/txlab/framework/run"
	"github.com/txlab/txlab/framework/sim"
)

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list profiles, toggles, costs, qdiscs and drivers",
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			w := tabwriter.NewWriter(c.App.Writer, 2, 8, 2, ' ', 0)
			fmt.Fprintln(w, "PROFILES")
			for _, p := range netdev.Profiles() {
				cfg, _ := netdev.Profile(p)
				var parts []string
				for _, t := range []string{"xmit", "defer_bound", "fast_path", "dequeue_drops", "bulk_quota"} {
					parts = append(parts, t+"="+cfg.Get(t))
				}
				fmt.Fprintf(w, "  %s\t%s\n", p, strings.Join(parts, " "))
			}
			d := run.Default()
			fmt.Fprintln(w, "\nRUN (txlab run --FLAG value, or the script's key; default, range)")
			for _, k := range run.Knobs() {
				def := k.Get(&d)
				if def == "" {
					def = `""`
				}
				fmt.Fprintf(w, "  --%s\t%s\t%s\t%s\n", k.Flag, k.Script, def, knobUsage(k))
			}
			fmt.Fprintf(w, "\nTOGGLES (--set name=value; default from the default profile %s)\n", d.Profile)
			def, err := netdev.Profile(d.Profile)
			if err != nil {
				return err
			}
			for _, t := range netdev.ToggleNames() {
				fmt.Fprintf(w, "  %s\t%s\t%s\n", t, def.Get(t), netdev.ToggleHelp(t))
			}
			fmt.Fprintln(w, "\nCOSTS (--set cost.name=ns; 0..max)")
			for _, ci := range sim.DefaultCosts().List() {
				fmt.Fprintf(w, "  cost.%s\t%s\t%s\t%s\n", ci.Name, strconv.FormatInt(ci.Value, 10), "max "+strconv.FormatInt(ci.Max, 10), ci.Help)
			}
			fmt.Fprintln(w, "\nCPUS (--cpu, host.cpu: line_socket, line_remote and line_memory in ns; --set cost.line_* overrides)")
			for _, m := range sim.CPUModels() {
				fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%s\n", m.Name, m.LineSocket, m.LineRemote, m.LineMemory, m.Source)
			}
			fmt.Fprintln(w, "\nQDISCS")
			for _, k := range qdisc.Kinds() {
				help := qdisc.Help(k)
				switch k {
				case "mq":
					help = "one child per TX queue (sch_mq.c); e.g. \"mq fq\""
				case "mqprio":
					help = "mq with traffic classes: skb->priority to a class, a class to a range of TX queues (netdev_pick_tx), hw 0 (sch_mqprio.c)"
				case "noqueue":
					help = "no qdisc: straight to the driver"
				}
				fmt.Fprintf(w, "  %s\t%s\n", k, help)
			}
			fmt.Fprintln(w, "\nLAB-ONLY QDISC OPTIONS (txlab's words, not tc's: for experiments)")
			for _, k := range qdisc.Kinds() {
				for _, o := range qdisc.LabOptions(k) {
					fmt.Fprintf(w, "  %s %s\t%s\n", k, o.Word, o.Help)
				}
			}
			fmt.Fprintln(w, "\nDRIVERS (--rate 0, the default, runs at the line rate the help names)")
			for _, d := range driver.Names() {
				fmt.Fprintf(w, "  %s\t%s\n", d, driver.Help(d))
			}
			return w.Flush()
		},
	}
}
