package pool

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// depsAllowed are the modules outside this one and the standard library
// that a program importing package pool may link, by module path: purego
// binds the RDMA libraries without cgo, x/sys makes the system calls.
// Adding one is a decision: write it here, and say why.
var depsAllowed = []string{
	"github.com/ebitengine/purego",
	"golang.org/x/sys",
}

// depsBanned are what the gnet engine brings, which package pool must not
// (it lives in pool/gnettcp, which a program imports to choose it).
var depsBanned = []string{
	"github.com/panjf2000/gnet",
	"github.com/panjf2000/ants",
	"go.uber.org/zap",
	"go.uber.org/multierr",
	"gopkg.in/natefinch/lumberjack",
	"github.com/valyala/bytebufferpool",
}

// TestDeps: a program that imports package pool links nothing outside
// the standard library, this module and depsAllowed, on each system it
// builds for (go list -deps of the package, as the linker sees it).
func TestDeps(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	testutil.Require(t, err == nil, "no go command on PATH to list the dependencies with")
	const self = "github.com/seed54442f1a/rdmapool"
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", self+"/pool")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("go list -deps: %v\n%s", err, stderr)
			}
			var found []string
			for _, p := range strings.Fields(string(out)) {
				if p == self || strings.HasPrefix(p, self+"/") {
					continue
				}
				found = append(found, p)
				if slices.ContainsFunc(depsBanned, func(b string) bool { return under(p, b) }) {
					t.Errorf("package pool links %s, which only the gnet engine may bring (package pool/gnettcp)", p)
				} else if !slices.ContainsFunc(depsAllowed, func(a string) bool { return under(p, a) }) {
					t.Errorf("package pool links %s, which is not in depsAllowed (deps_test.go): "+
						"remove the import that brings it, or add its module there and say why", p)
				}
			}
			t.Logf("%s: %s", goos, strings.Join(found, " "))
		})
	}
}

// under reports whether package p is module or one of its packages.
func under(p, module string) bool {
	return p == module || strings.HasPrefix(p, module+"/")
}
