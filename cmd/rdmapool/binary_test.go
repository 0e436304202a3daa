package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// buildBinary builds cmd/rdmapool with CGO_ENABLED=0 into a temporary dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	testutil.Require(t, err == nil, "the go command is needed to build cmd/rdmapool")
	out := filepath.Join(t.TempDir(), "rdmapool")
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}
