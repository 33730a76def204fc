// Command txlab runs the Linux transmit-path model.
//
//	go run ./cli run                      # the default experiment
//	go run ./cli run --profile 6.18 --senders 8 --format json
//	go run ./cli run --compare profile=6.18,6.19-rc1
package main

import (
	"fmt"
	"os"
	"strings"

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
					if err := noArgs(c); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "txlab %s\n", version)
					return nil
				},
			},
		},
		// urfave/cli runs the app's action when the first argument names
		// no command; its default (help's) says "No help topic" and exits
		// 3, which is txlab's code for what the model lacks.
		Action:               appAction,
		HideHelpCommand:      true,
		EnableBashCompletion: true, // completion.go
		// main prints every error as one "txlab: " line and picks the exit
		// code (exit.go); urfave/cli's own handler would print an
		// ExitCoder's message bare and exit before main sees it.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// appAction is `txlab` with no command (the help), `txlab help
// [COMMAND [SUBCOMMAND]]`, or a word that is no command (refused).
func appAction(c *cli.Context) error {
	args := c.Args().Slice()
	switch {
	case len(args) == 0:
		return cli.ShowAppHelp(c)
	case args[0] == "help" || args[0] == "h":
		return showHelp(c, args[1:])
	}
	return fmt.Errorf("no command %q (txlab help lists them)", args[0])
}

// showHelp prints the help of the command path names (none: the
// app's), as `txlab NAMES... --help` prints it.
func showHelp(c *cli.Context, names []string) error {
	if len(names) == 0 {
		return cli.ShowAppHelp(c)
	}
	cmd := c.App.Command(names[0])
	if cmd == nil {
		return fmt.Errorf("help: no command %q (txlab help lists them)", names[0])
	}
	if len(names) > 1 && (len(names) > 2 || cmd.Command(names[1]) == nil) {
		return fmt.Errorf("help: no command %q (txlab help %s lists them)", strings.Join(names, " "), names[0])
	}
	return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, names...), "--help"))
}

// noArgs refuses arguments to a command that takes none: `txlab version
// extra` is a mistake, not a version.
func noArgs(c *cli.Context) error {
	if args := c.Args().Slice(); len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (got %q)", c.Command.FullName(), strings.Join(args, " "))
	}
	return nil
}
