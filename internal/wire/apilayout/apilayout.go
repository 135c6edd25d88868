// Package apilayout checks the one-file-per-API layout of a package that serves wire APIs
// (server/coordinator, server/tablet): the file whose init function adds an API to its
// service's table declares the handler it registers and registers nothing else, and every
// handler method (a method named handle…) is registered. Tests of those packages call Check on
// their own directory; see docs/architecture.md, "The coordinator's services".
package apilayout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// Check parses the non-test Go files of dir and returns the number of registrations found in
// init functions and every breach of the layout. A registration is a call
// table.M(wire.Key, min, max, (*T).handleX) where M is one of methods.
func Check(dir string, methods ...string) (registrations int, problems []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, nil, err
	}
	isRegister := map[string]bool{}
	for _, m := range methods {
		isRegister[m] = true
	}
	fset := token.NewFileSet()
	type registration struct{ key, handler, file string }
	var regs []registration
	handlers := map[string]string{} // "Type.method" -> file
	for _, path := range files {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return 0, nil, fmt.Errorf("apilayout: %w", err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv != nil && strings.HasPrefix(fd.Name.Name, "handle") {
				handlers[receiverName(fd.Recv.List[0].Type)+"."+fd.Name.Name] = name
			}
			if fd.Recv != nil || fd.Name.Name != "init" {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isRegister[sel.Sel.Name] {
					return true
				}
				var key, h *ast.SelectorExpr
				if len(call.Args) == 4 {
					key, _ = call.Args[0].(*ast.SelectorExpr)
					h, _ = call.Args[3].(*ast.SelectorExpr)
				}
				if key == nil || h == nil {
					problems = append(problems, fmt.Sprintf("%s: registration not of the form table.%s(wire.Key, min, max, (*T).handleX)", name, sel.Sel.Name))
					return true
				}
				regs = append(regs, registration{key: key.Sel.Name, handler: receiverName(h.X) + "." + h.Sel.Name, file: name})
				return true
			})
		}
	}
	perFile := map[string]int{}
	registered := map[string]bool{}
	for _, r := range regs {
		perFile[r.file]++
		registered[r.handler] = true
		if got, ok := handlers[r.handler]; !ok {
			problems = append(problems, fmt.Sprintf("%s registers %s with %s, which is not declared", r.file, r.key, r.handler))
		} else if got != r.file {
			problems = append(problems, fmt.Sprintf("%s registers %s, but its handler %s is in %s", r.file, r.key, r.handler, got))
		}
	}
	for file, n := range perFile {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("%s registers %d APIs; one file per API", file, n))
		}
	}
	for h, file := range handlers {
		if !registered[h] {
			problems = append(problems, fmt.Sprintf("handler %s (%s) is registered by no init function", h, file))
		}
	}
	return len(regs), problems, nil
}

// receiverName is T of a receiver or method expression T, *T or (*T).
func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.ParenExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}
