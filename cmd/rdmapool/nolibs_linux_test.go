package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestNoRDMALibrariesNeeded: the binary does not name the RDMA libraries in
// its dynamic section, so it starts where they do not exist.
func TestNoRDMALibrariesNeeded(t *testing.T) {
	bin := buildBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NEEDED: %v", needed)
	for _, n := range needed {
		if strings.Contains(n, "rdmacm") || strings.Contains(n, "ibverbs") {
			t.Errorf("the binary has a NEEDED entry for %s", n)
		}
	}
}

// TestInfoWithoutLibraries runs `rdmapool info` in a chroot that holds only
// the binary and the C library it needs: it must exit 0 and say what is
// missing.
func TestInfoWithoutLibraries(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	copyFile(t, bin, filepath.Join(root, "rdmapool"))

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	needed, _ := f.ImportedLibraries()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	f.Close()
	if interp == "" {
		t.Fatal("the binary has no ELF interpreter: it is expected to be dynamically linked against libc")
	}
	copyFile(t, interp, filepath.Join(root, interp))
	for _, n := range needed {
		p := findLib(n)
		if p == "" {
			t.Fatalf("cannot find %s on this machine to put into the chroot", n)
		}
		copyFile(t, p, filepath.Join(root, p))
	}
	cmd := exec.Command("/rdmapool", "info")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// Not root: chroot as root of a user namespace of its own.
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/"}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) {
		testutil.Require(t, false, fmt.Sprintf("a chroot needs root or unprivileged user namespaces (kernel.unprivileged_userns_clone, user.max_user_namespaces): %v", err))
	}
	t.Logf("rdmapool info in a chroot without RDMA libraries:\n%s", out)
	if err != nil {
		t.Fatalf("rdmapool info: %v (want exit 0)", err)
	}
	for _, want := range []string{
		"not loaded: rdmapool: cannot load libibverbs: tried libibverbs.so.1 (libibverbs.so.1: cannot open shared object file: No such file or directory); libibverbs.so (",
		"RDMA cannot be used: rdmapool: cannot load libibverbs",
		"Locked memory limit",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(string(out), bad) {
			t.Errorf("output contains %q", bad)
		}
	}
}

func findLib(name string) string {
	dirs := []string{"/lib64", "/usr/lib64", "/lib", "/usr/lib"}
	if runtime.GOARCH == "amd64" {
		dirs = append([]string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}, dirs...)
	} else if runtime.GOARCH == "arm64" {
		dirs = append([]string{"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}, dirs...)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// copyFile copies src (following symlinks) to dst, creating dst's directory.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
