package script

import (
	"fmt"

	"github.com/d5/tengo/v2/parser"
	"github.com/d5/tengo/v2/token"
)

// Bounds on a source's shape, checked before tengo parses it (checkShape).
// Tengo's parser and compiler, and walkAST, recurse once per level of
// the syntax tree, and a Go stack overflow cannot be recovered: a 1 MiB
// script of nested brackets or of one long `1+1+...` chain killed txlab
// with "fatal error: stack overflow". The compiler also takes time
// quadratic in the length of such a chain (each BinaryExpr's Pos walks
// down its left operands): 25,000 terms compiled in 1 s, 200,000 in
// 90 s, outside any --script-timeout.
//
// Measured on tengo v2.17.0 (2-core machine): compiling one
// `x := 1+1+...` chain of 4,000 tokens (the bound) takes 8 ms, of 20,000
// tokens 0.16 s, of 50,000 tokens 1 s; a whole 1 MiB script of such
// chains 1.0 s with 100-token chains, 1.4 s with 1,000, 2.6 s with 4,000,
// 8.4 s with 20,000 (0.3 s of short statements). 10,000 nested brackets
// compile in 12 ms (256 in under 1 ms); 524,000 overflow the stack. The
// scripts in scripts/ nest at most 7 deep and have at most 34 tokens in
// one expression. The deepest trees within the bounds (3,990 unary
// minus, 1,990 selectors or calls, 256 brackets around a 3,400-token
// chain, 550 else-ifs, 128 nested func literals) parse, pass walkAST and
// compile in under 50 ms each within 8 MiB of stack (Go's limit: 1 GB).
const (
	// maxNesting is the deepest ( [ { nesting a source may have.
	maxNesting = 256
	// maxExprTokens bounds the tokens of one expression: the tokens
	// between two ';' (or ends of line, where tengo ends a statement)
	// or ',' at one bracket level, each bracket pair counting as two
	// tokens there, plus those of the expressions the bracket is in, up
	// to it. A syntax tree's depth is at most about that many levels.
	maxExprTokens = 4_000
)

// checkShape refuses a source that nests brackets more than maxNesting
// deep or has an expression of more than maxExprTokens tokens, at the
// token that crosses the bound. It reads the source once with tengo's
// own scanner, which skips strings, chars and comments and ends
// statements at line ends as the parser does. Its errors are for the
// parser to report (a source that passes may still be wrong).
func checkShape(name string, src []byte) error {
	fs := parser.NewFileSet()
	file := fs.AddFile(name, -1, len(src))
	s := parser.NewScanner(file, src, nil, 0)
	// open[i] is the tokens so far of the current expression at bracket
	// level i; sum is their total along the open brackets.
	open := make([]int, 1, 16)
	sum := 0
	for {
		tok, _, pos := s.Scan()
		top := len(open) - 1
		switch tok {
		case token.EOF:
			return nil
		case token.Semicolon, token.Comma:
			sum -= open[top]
			open[top] = 0
			continue
		case token.LParen, token.LBrack, token.LBrace:
			if len(open) > maxNesting {
				return shapeError(fs, pos, fmt.Sprintf("brackets nest more than %d deep", maxNesting))
			}
			open[top]++
			open = append(open, 0)
		case token.RParen, token.RBrack, token.RBrace:
			if top > 0 { // else unbalanced: the parser says so
				sum -= open[top]
				open = open[:top]
				top--
			}
			open[top]++
		default:
			open[top]++
		}
		if sum++; sum > maxExprTokens {
			return shapeError(fs, pos, fmt.Sprintf("expression too long: more than %d tokens in one statement (split it into several)", maxExprTokens))
		}
	}
}

func shapeError(fs *parser.SourceFileSet, pos parser.Pos, msg string) *Error {
	p := fs.Position(pos)
	return &Error{File: p.Filename, Line: p.Line, Col: p.Column, Msg: msg}
}
