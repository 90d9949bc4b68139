package search

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The check's reference was package catalog itself (catalog.New, its
// Set and Search, so its Fold and its index): a folding or ordering bug
// there made allot's answers and the reference agree, both wrong against
// DESIGN.md. The package's code may take catalog's data types and a
// bound for the generator from it, and nothing else.
func TestAudit13CheckCallsNoCatalogCode(t *testing.T) {
	allowed := map[string]bool{"Record": true, "Query": true, "Result": true, "Attribute": true, "TextBytesMax": true}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "catalog" && !allowed[sel.Sel.Name] {
				t.Errorf("%s: catalog.%s: the check's reference must not use package catalog's code", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source file found")
	}
}
