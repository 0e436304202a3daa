package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the command's version line: the module's version (a
// release's tag, or "(devel)"), the commit it was built from when the
// build recorded it, and the Go toolchain.
func version() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	s := "rdmapool " + v
	if rev != "" {
		s += " commit " + rev[:min(len(rev), 12)]
		if dirty {
			s += " (modified)"
		}
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// versionCmd is `rdmapool version`.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "--help" || args[0] == "-help" || args[0] == "-h" {
			fmt.Fprintln(stdout, "usage: rdmapool version\n\nPrints the command's version, the commit it was built from and the Go toolchain.")
			return 0
		}
		fmt.Fprintf(stderr, "rdmapool version: unexpected argument %q (rdmapool version --help for usage)\n", args[0])
		return 2
	}
	fmt.Fprintln(stdout, version())
	return 0
}
