package verbs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPublicAPIsSpeakGo: the public packages export no uintptr (a C handle
// is a Ptr of this package, a Go value is a Go type) and no alias of a type
// of this package (cq.Completion was one of verbs.WC), and qp turns no C
// address into a Go pointer itself (it imports no unsafeptr).
func TestPublicAPIsSpeakGo(t *testing.T) {
	for _, pkg := range []string{"mr", "cq", "qp", "pool"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v); is the test running in the package directory?", pkg, err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); pkg == "qp" && strings.HasSuffix(p, "/internal/unsafeptr") {
					t.Errorf("%s imports %s", fset.Position(imp.Pos()), p)
				}
			}
			for _, d := range f.Decls {
				apiCheckDecl(t, fset, d)
			}
		}
	}
}

func apiCheckDecl(t *testing.T, fset *token.FileSet, d ast.Decl) {
	t.Helper()
	mentions := func(n ast.Node, what string) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "uintptr" {
				t.Errorf("%s: %s exports a uintptr", fset.Position(id.Pos()), what)
			}
			return true
		})
	}
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv != nil && len(d.Recv.List) == 1 && !apiExportedRecv(d.Recv.List[0].Type) {
			return
		}
		mentions(d.Type, d.Name.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				if s.Assign.IsValid() {
					if sel, ok := s.Type.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "verbs" {
							t.Errorf("%s: %s is an alias of verbs.%s", fset.Position(s.Pos()), s.Name.Name, sel.Sel.Name)
						}
					}
				}
				if st, ok := s.Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						for _, n := range f.Names {
							if n.IsExported() {
								mentions(f.Type, s.Name.Name+"."+n.Name)
							}
						}
					}
					continue
				}
				if _, ok := s.Type.(*ast.InterfaceType); ok {
					mentions(s.Type, s.Name.Name)
					continue
				}
				mentions(s.Type, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() && s.Type != nil {
						mentions(s.Type, n.Name)
					}
				}
			}
		}
	}
}

// apiExportedRecv reports whether a method's receiver type is exported.
func apiExportedRecv(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}
