package apicheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

const self = "github.com/seed54442f1a/rdmapool"

// TestPublicAPINamesNoInternalType: no exported function, method, field,
// variable, constant or type of a public package of this module (one not
// under an internal/ directory, not a command) names a type of an internal
// package, its own or another module's, in its signature: such an
// identifier is one that no caller outside the module could use. What only
// the module calls belongs in an internal package, or unexported behind
// internal/bridge. It reads the packages' export data (go list -export), as
// a caller's compiler sees them, for this system.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	testutil.Require(t, err == nil, "no go command on PATH to list the packages with")
	cmd := exec.Command(goCmd, "list", "-export", "-deps",
		"-f", "{{.ImportPath}}\t{{.Export}}\t{{.Name}}\t{{if .Module}}{{.Module.Path}}{{end}}", self+"/...")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -export: %v\n%s", err, stderr)
	}
	exports := map[string]string{}
	var public []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list: unexpected line %q", sc.Text())
		}
		path, export, name, module := f[0], f[1], f[2], f[3]
		exports[path] = export
		if module == self && name != "main" && !internal(path) {
			public = append(public, path)
		}
	}
	if len(public) < 5 {
		t.Fatalf("go list found %d public packages (%v); want loader, mr, cq, qp, pool at least", len(public), public)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c := checker{t: t, fset: fset, pkg: pkg, seen: map[types.Type]bool{}}
		c.pkgScope()
	}
	t.Logf("%d public packages checked: %s", len(public), strings.Join(public, " "))
}

// internal reports whether a package path is under an internal directory.
func internal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") ||
		strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// checker walks what one public package exports.
type checker struct {
	t    *testing.T
	fset *token.FileSet
	pkg  *types.Package
	seen map[types.Type]bool // the package's unexported types already walked
}

func (c *checker) pkgScope() {
	scope := c.pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		where := c.pkg.Name() + "." + name
		if tn, ok := obj.(*types.TypeName); ok && !tn.IsAlias() {
			c.named(obj.Type(), where, obj.Pos())
			continue
		}
		c.typ(obj.Type(), where, obj.Pos())
	}
}

// named checks a type the package declares: what its underlying type
// shows (exported fields, methods of an interface) and its exported
// methods, promoted ones included.
func (c *checker) named(typ types.Type, where string, pos token.Pos) {
	c.shape(typ.Underlying(), where, pos)
	if types.IsInterface(typ) {
		return // shape checked its methods
	}
	ms := types.NewMethodSet(types.NewPointer(typ))
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if m.Exported() {
			c.typ(m.Type(), where+"."+m.Name(), m.Pos())
		}
	}
}

// shape checks a type's structure: for a struct its exported fields, those
// promoted from embedded structs included; for an interface its methods;
// anything else as typ does.
func (c *checker) shape(u types.Type, where string, pos token.Pos) {
	switch u := u.(type) {
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			if f.Exported() {
				c.typ(f.Type(), where+"."+f.Name(), f.Pos())
			}
			if f.Embedded() {
				// An unexported embedded struct promotes its exported
				// fields and methods (the method set covers those).
				if s, ok := derefStruct(f.Type()); ok && !f.Exported() {
					c.shape(s, where, f.Pos())
				}
			}
		}
	case *types.Interface:
		for i := range u.NumMethods() {
			m := u.Method(i)
			if m.Exported() {
				c.typ(m.Type(), where+"."+m.Name(), m.Pos())
			}
		}
	default:
		c.typ(u, where, pos)
	}
}

// derefStruct returns the struct under t or *t.
func derefStruct(t types.Type) (*types.Struct, bool) {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	s, ok := t.Underlying().(*types.Struct)
	return s, ok
}

// typ reports every type of an internal package that typ names, and
// walks the package's own unexported types it reaches (an exported
// function that returns one hands its exported methods to any caller).
func (c *checker) typ(typ types.Type, where string, pos token.Pos) {
	switch t := typ.(type) {
	case *types.Alias:
		if p := t.Obj().Pkg(); p != nil && internal(p.Path()) {
			c.report(where, pos, t)
		}
		c.typ(types.Unalias(t), where, pos)
	case *types.Named:
		obj := t.Obj()
		if p := obj.Pkg(); p != nil && internal(p.Path()) {
			c.report(where, pos, t)
			return // its type arguments are in the report
		} else if p == c.pkg && !obj.Exported() && !c.seen[t] {
			c.seen[t] = true
			c.named(t, where+" ("+obj.Name()+")", pos)
		}
		for i := range t.TypeArgs().Len() {
			c.typ(t.TypeArgs().At(i), where, pos)
		}
	case *types.Pointer:
		c.typ(t.Elem(), where, pos)
	case *types.Slice:
		c.typ(t.Elem(), where, pos)
	case *types.Array:
		c.typ(t.Elem(), where, pos)
	case *types.Chan:
		c.typ(t.Elem(), where, pos)
	case *types.Map:
		c.typ(t.Key(), where, pos)
		c.typ(t.Elem(), where, pos)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				c.typ(tup.At(i).Type(), where, pos)
			}
		}
	case *types.Struct, *types.Interface:
		if !c.seen[t] {
			c.seen[t] = true
			c.shape(t, where, pos)
		}
	}
}

func (c *checker) report(where string, pos token.Pos, t types.Type) {
	c.t.Helper()
	c.t.Errorf("%s: %s names %s, a type of an internal package: no caller outside the module can use it "+
		"(move it to an internal package, or unexport it and reach it through internal/bridge)",
		c.fset.Position(pos), where, types.TypeString(t, nil))
}
