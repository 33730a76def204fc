package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion: the app answers urfave/cli's hidden
// --generate-bash-completion flag with the words that may come next
// (commands, then a command's flags); these functions ask it, and fall
// back to file names (scripts, reports) when it has nothing to offer.
const bashCompletion = `# bash completion for txlab: source <(txlab completion bash)
_txlab_complete() {
	local cur="${COMP_WORDS[COMP_CWORD]}" words
	words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		words+=("$cur")
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$("${words[@]}" --generate-bash-completion 2>/dev/null | cut -d: -f1)" -- "$cur"))
}
complete -o bashdefault -o default -F _txlab_complete txlab
`

const zshCompletion = `#compdef txlab
# zsh completion for txlab: source <(txlab completion zsh)
_txlab() {
	local -a opts
	local cur="${words[CURRENT]}"
	local -a cmd=("${(@)words[1,CURRENT-1]}")
	[[ "$cur" == -* ]] && cmd+=("$cur")
	opts=("${(@f)$("${cmd[@]}" --generate-bash-completion 2>/dev/null)}")
	if [[ -n "${opts[1]}" ]]; then
		_describe 'txlab' opts
	else
		_files
	fi
}
if (( $+functions[compdef] )); then compdef _txlab txlab; fi
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(txlab completion bash) (or zsh)",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return fmt.Errorf("completion: want one shell, bash or zsh, got %d arguments", len(args))
			}
			switch args[0] {
			case "bash":
				_, err = fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				_, err = fmt.Fprint(c.App.Writer, zshCompletion)
			default:
				return fmt.Errorf("completion: unknown shell %q (bash or zsh)", args[0])
			}
			return err
		},
	}
}

// completeScripts completes a command taking a script: its flags after
// a dash, else the shipped scripts' names (the shell adds file names
// when none fits).
func completeScripts(cmd *cli.Command) cli.BashCompleteFunc {
	flags := cli.DefaultCompleteWithFlags(cmd)
	return func(c *cli.Context) {
		// urfave/cli's own completion reads the word before the flag
		// from os.Args too.
		if n := len(os.Args); n > 2 && strings.HasPrefix(os.Args[n-2], "-") {
			flags(c)
			return
		}
		list, _ := shippedScripts()
		for _, s := range list {
			fmt.Fprintln(c.App.Writer, s.name)
		}
	}
}

// withCompletion gives cmd completeScripts.
func withCompletion(cmd *cli.Command) *cli.Command {
	cmd.BashComplete = completeScripts(cmd)
	return cmd
}
