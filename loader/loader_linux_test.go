package loader

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// The tests that need a process where nothing is loaded yet run in a child
// process: the test binary re-executes itself with childEnv set.
const childEnv = "RDMAPOOL_LOADER_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "fresh":
		os.Exit(childFresh())
	case "env":
		os.Exit(childEnvPath())
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", os.Getenv(childEnv))
		os.Exit(3)
	}
}

// rdmaMapped lists the lines of /proc/self/maps that map the RDMA libraries.
func rdmaMapped() []string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return []string{"reading /proc/self/maps: " + err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "libibverbs") || strings.Contains(l, "librdmacm") {
			out = append(out, l)
		}
	}
	return out
}

func mapsMention(dir string) bool {
	b, _ := os.ReadFile("/proc/self/maps")
	return strings.Contains(string(b), dir)
}

func TestLoadErrors(t *testing.T) {
	partial := testutil.BuildSharedLib(t, "libibverbs.so.1", "testdata/partial_libibverbs.c")
	notLib, err := os.ReadFile("testdata/not_a_library.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files map[string][]byte // written into the search directory
		// want are regular expressions that the error text must match; DIR
		// stands for the search directory.
		want []string
		sym  string // for a SymbolError: the missing symbol
	}{{
		name: "no such file",
		want: []string{
			`^rdmapool: cannot load libibverbs: tried DIR/libibverbs\.so\.1 \(DIR/libibverbs\.so\.1: cannot open shared object file: No such file or directory\); DIR/libibverbs\.so \(DIR/libibverbs\.so: cannot open shared object file: No such file or directory\); install rdma-core's libibverbs \(Debian: apt-get install libibverbs1 ibverbs-providers\) or point RDMAPOOL_LIBRARY_PATH at its directory$`,
		},
	}, {
		name:  "not a shared object",
		files: map[string][]byte{"libibverbs.so.1": notLib, "libibverbs.so": notLib},
		want: []string{
			`^rdmapool: cannot load libibverbs: tried DIR/libibverbs\.so\.1 \(DIR/libibverbs\.so\.1: (invalid ELF header|file too short)\); DIR/libibverbs\.so \(DIR/libibverbs\.so: (invalid ELF header|file too short)\); install`,
		},
	}, {
		name:  "missing symbol",
		files: map[string][]byte{"libibverbs.so.1": mustRead(t, partial)},
		want: []string{
			`^rdmapool: libibverbs \(DIR/libibverbs\.so\.1\) has no symbol ibv_wc_status_str: DIR/libibverbs\.so\.1: undefined symbol: ibv_wc_status_str$`,
		},
		sym: "ibv_wc_status_str",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			libs, table, err := bind(config{dirs: []string{dir}})
			if err == nil {
				t.Fatalf("bind succeeded (%+v, %v); want an error", libs, table != nil)
			}
			if libs != nil || table != nil {
				t.Errorf("bind returned a result with its error: %+v %p", libs, table)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("errors.Is(%v, ErrUnavailable) = false", err)
			}
			for _, w := range tc.want {
				re := regexp.MustCompile(strings.ReplaceAll(w, "DIR", regexp.QuoteMeta(dir)))
				if !re.MatchString(err.Error()) {
					t.Errorf("error text:\n  %s\ndoes not match:\n  %s", err, re)
				}
			}
			var se *SymbolError
			var le *LibraryError
			switch {
			case tc.sym != "":
				if !errors.As(err, &se) || se.Symbol != tc.sym || se.Library != "libibverbs" {
					t.Errorf("want a *SymbolError for %s in libibverbs, got %#v", tc.sym, err)
				}
			default:
				if !errors.As(err, &le) || le.Library != "libibverbs" || len(le.Attempts) != 2 {
					t.Errorf("want a *LibraryError for libibverbs with 2 attempts, got %#v", err)
				}
			}
			if mapsMention(dir) {
				t.Errorf("a file from %s is still mapped after the failed load: it was not dlclosed", dir)
			}
			if Loaded() != nil || verbs.Bound() != nil {
				t.Errorf("a failed bind published something")
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPartialFixtureMatchesTable keeps testdata/partial_libibverbs.c in step
// with the table: it must stub every libibverbs symbol but the one omitted.
func TestPartialFixtureMatchesTable(t *testing.T) {
	src := string(mustRead(t, "testdata/partial_libibverbs.c"))
	var stubbed []string
	for _, m := range regexp.MustCompile(`(?m)^STUB\((\w+)\)`).FindAllStringSubmatch(src, -1) {
		stubbed = append(stubbed, m[1])
	}
	var want []string
	for _, s := range symbolsOf("libibverbs") {
		if s != "ibv_wc_status_str" {
			want = append(want, s)
		}
	}
	slices.Sort(stubbed)
	slices.Sort(want)
	if !slices.Equal(stubbed, want) {
		t.Errorf("testdata/partial_libibverbs.c stubs %v;\nthe table needs %v (all but ibv_wc_status_str)", stubbed, want)
	}
}

func TestCandidates(t *testing.T) {
	names := sonames["librdmacm"]
	if got := candidates(nil, names); !slices.Equal(got, []string{"librdmacm.so.1", "librdmacm.so"}) {
		t.Errorf("candidates(nil) = %v", got)
	}
	got := candidates([]string{"/a", "", "/b"}, names)
	want := []string{"/a/librdmacm.so.1", "/a/librdmacm.so", "/b/librdmacm.so.1", "/b/librdmacm.so"}
	if !slices.Equal(got, want) {
		t.Errorf("candidates = %v, want %v", got, want)
	}
}

func runChild(t *testing.T, mode string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 4 {
		testutil.Require(t, false, "the RDMA libraries are not installed (apt-get install libibverbs1 librdmacm1 ibverbs-providers): "+strings.TrimSpace(string(out)))
	}
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return string(out)
}

// TestLoadInFreshProcess: nothing of the libraries is mapped before Load; a
// failed Load publishes nothing and can be retried; concurrent first calls
// bind once; afterwards both libraries are mapped and their paths known.
func TestLoadInFreshProcess(t *testing.T) {
	t.Log(runChild(t, "fresh"))
}

// TestLoadEnvPath: RDMAPOOL_LIBRARY_PATH replaces the default search.
func TestLoadEnvPath(t *testing.T) {
	dir := t.TempDir()
	t.Log(runChild(t, "env", EnvLibraryPath+"="+dir, "WANT_DIR="+dir))
}

func childFresh() int {
	fail := func(format string, args ...any) int {
		fmt.Printf("FAIL: "+format+"\n", args...)
		return 1
	}
	if m := rdmaMapped(); len(m) != 0 {
		return fail("RDMA libraries mapped before the first Load:\n%s", strings.Join(m, "\n"))
	}
	if Loaded() != nil || verbs.Bound() != nil {
		return fail("something is bound before the first Load")
	}
	empty, err := os.MkdirTemp("", "rdmapool-empty")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(empty)
	if _, err := Load(WithSearchPath(empty)); !errors.Is(err, ErrUnavailable) {
		return fail("Load from an empty directory: %v, want ErrUnavailable", err)
	}
	if Loaded() != nil || verbs.Bound() != nil {
		return fail("a failed Load published something")
	}
	if m := rdmaMapped(); len(m) != 0 {
		return fail("RDMA libraries mapped after a failed Load:\n%s", strings.Join(m, "\n"))
	}

	const n = 16
	var wg sync.WaitGroup
	results := make([]*Libraries, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = Load()
		})
	}
	close(start)
	wg.Wait()
	var le *LibraryError
	if errors.As(errs[0], &le) {
		fmt.Println(errs[0])
		return 4
	}
	for i := range n {
		if errs[i] != nil {
			return fail("concurrent Load %d: %v", i, errs[i])
		}
		if results[i] != results[0] {
			return fail("concurrent Loads returned different results: %p and %p", results[i], results[0])
		}
	}
	l := results[0]
	if Loaded() != l || verbs.Bound() == nil {
		return fail("Loaded() = %p, Bound() = %p after a successful Load", Loaded(), verbs.Bound())
	}
	for _, lib := range []Library{l.IBVerbs, l.RDMACM} {
		if !filepath.IsAbs(lib.Path) {
			return fail("%s: path %q is not absolute", lib.Name, lib.Path)
		}
		if _, err := os.Stat(lib.Path); err != nil {
			return fail("%s: %v", lib.Name, err)
		}
	}
	m := strings.Join(rdmaMapped(), "\n")
	if !strings.Contains(m, "libibverbs") || !strings.Contains(m, "librdmacm") {
		return fail("after Load, /proc/self/maps lacks a library:\n%s", m)
	}
	if again, err := Load(WithSearchPath(empty)); err != nil || again != l {
		return fail("Load after success = %p, %v; want the same result", again, err)
	}
	fmt.Printf("bound libibverbs=%s librdmacm=%s\n", l.IBVerbs.Path, l.RDMACM.Path)
	return 0
}

func childEnvPath() int {
	dir := os.Getenv("WANT_DIR")
	_, err := Load()
	if err == nil || !strings.Contains(err.Error(), dir+"/libibverbs.so.1") {
		fmt.Printf("FAIL: with %s=%s, Load() = %v; want an error naming that directory\n", EnvLibraryPath, dir, err)
		return 1
	}
	fmt.Println("as expected:", err)
	return 0
}

// symbolsOf lists the symbols the table resolves from one library.
func symbolsOf(lib string) []string {
	var out []string
	tt := reflect.TypeFor[verbs.Table]()
	for i := range tt.NumField() {
		if tt.Field(i).Tag.Get("lib") != lib {
			continue
		}
		g := tt.Field(i).Type
		for j := range g.NumField() {
			out = append(out, g.Field(j).Tag.Get("sym"))
		}
	}
	return out
}
