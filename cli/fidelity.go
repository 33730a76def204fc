package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/fidelity"
	"github.com/txlab/txlab/framework/report"
)

// fidelityCommand prints a seed's figures beside a model run's.
func fidelityCommand() *cli.Command {
	return &cli.Command{
		Name:      "fidelity",
		Usage:     "print the seed's figures beside the model's, from a JSON report of the experiment's script",
		ArgsUsage: "e1 REPORT.json   (txlab run scripts/e1.tengo --format json -o REPORT.json)",
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("fidelity: want an experiment and a report: txlab fidelity e1 REPORT.json")
			}
			if exp := c.Args().Get(0); exp != "e1" {
				return fmt.Errorf("fidelity: unknown experiment %q (known: e1)", exp)
			}
			reps, err := readReports(c.Args().Get(1))
			if err != nil {
				return err
			}
			runs, err := fidelity.FindE1(reps)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Args().Get(1), err)
			}
			return fidelity.WriteRows(c.App.Writer, fidelity.E1(runs))
		},
	}
}

// readReports reads a JSON report: one report or {"variants": [...]}.
func readReports(path string) ([]*report.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		Variants []*report.Report `json:"variants"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: not a txlab JSON report: %v", path, err)
	}
	if len(list.Variants) > 0 {
		return list.Variants, nil
	}
	var one report.Report
	if err := json.Unmarshal(b, &one); err != nil || one.Profile == "" {
		return nil, fmt.Errorf("%s: not a txlab JSON report", path)
	}
	return []*report.Report{&one}, nil
}
