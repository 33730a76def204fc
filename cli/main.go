// Command txlab runs the Linux transmit-path model.
//
//	go run ./cli run                      # the default experiment
//	go run ./cli run --profile 6.18 --senders 8 --format json
//	go run ./cli run --compare profile=6.18,6.19-rc1
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/txlab/txlab/framework/plugin"
)

// version is set by -ldflags "-X main.version=..." in releases.
var version = "0.1.0-dev"

func main() {
	if plugin.IsPluginProcess() {
		// Started by a host (--isolate): serve every built-in.
		cat := plugin.Builtins()
		cat.Version = version
		plugin.Serve(cat)
		return
	}
	handleSignals()
	err := newApp().Run(os.Args)
	plugin.Cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "txlab:", errorLine(err))
		fmt.Fprint(os.Stderr, plugin.StackOf(err)) // a plugin's panic: its first frames after the line
		os.Exit(exitCode(err))
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "txlab",
		Usage: "a deterministic virtual-time lab for the Linux transmit path",
		Commands: []*cli.Command{
			withCompletion(runCommand()),
			sweepCommand(),
			withCompletion(checkCommand()),
			scriptsCommand(),
			listCommand(),
			pluginCommand(),
			fidelityCommand(),
			plotCommand(),
			completionCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintf(c.App.Writer, "txlab %s\n", version)
					return nil
				},
			},
		},
		HideHelpCommand:      true,
		EnableBashCompletion: true, // completion.go
	}
}
