package tablet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every tablet server API is one file: the file that adds the API to its service's table (in
// an init function) declares the handler it registers, and registers nothing else. Every
// handler method (a method named handle…) is registered. This keeps the layout of
// docs/architecture.md ("The tablet server's services") true as services and APIs are added.
func TestEveryAPIFileHoldsItsHandlerAndRegistration(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	type registration struct{ key, handler, file string }
	var regs []registration
	handlers := map[string]string{} // "Type.method" -> file
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
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
				if !ok || sel.Sel.Name != "register" {
					return true
				}
				var key *ast.SelectorExpr
				var h *ast.SelectorExpr
				if len(call.Args) == 4 {
					key, _ = call.Args[0].(*ast.SelectorExpr)
					h, _ = call.Args[3].(*ast.SelectorExpr)
				}
				if key == nil || h == nil {
					t.Errorf("%s: registration not of the form table.register(wire.Key, min, max, (*T).handleX)", name)
					return true
				}
				regs = append(regs, registration{key: key.Sel.Name, handler: receiverName(h.X) + "." + h.Sel.Name, file: name})
				return true
			})
		}
	}
	if len(regs) != len(registeredKeys) {
		t.Errorf("found %d registrations in init functions, but %d keys are registered: register every API from its file's init", len(regs), len(registeredKeys))
	}
	perFile := map[string]int{}
	registered := map[string]bool{}
	for _, r := range regs {
		perFile[r.file]++
		registered[r.handler] = true
		if got, ok := handlers[r.handler]; !ok {
			t.Errorf("%s registers %s with %s, which is not declared", r.file, r.key, r.handler)
		} else if got != r.file {
			t.Errorf("%s registers %s, but its handler %s is in %s", r.file, r.key, r.handler, got)
		}
	}
	for file, n := range perFile {
		if n > 1 {
			t.Errorf("%s registers %d APIs; one file per API", file, n)
		}
	}
	for h, file := range handlers {
		if !registered[h] {
			t.Errorf("handler %s (%s) is registered by no init function", h, file)
		}
	}
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
