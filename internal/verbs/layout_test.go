//go:build linux

package verbs

// TestLayout checks the Go mirrors of structs.go and the constants of
// consts.go against the C headers they mirror. It generates one C file of
// _Static_assert lines (sizes, member offsets, member sizes, constant values),
// all holding the values the Go compiler uses, and has a C compiler check it
// for linux/amd64 and linux/arm64. The C file is only compiled with
// -fsyntax-only: nothing is linked or run, so no cgo is involved.
//
// To read the generated C:
//
//	go test ./internal/verbs -run Layout -v -args -dump
//	RDMAPOOL_LAYOUT_DUMP=1 go test ./internal/verbs -run Layout -v

import (
	"flag"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

var layoutDump = flag.Bool("dump", false, "TestLayout: print the generated C file")

// layoutKind says how much of a C type a mirror covers.
type layoutKind int

const (
	// layoutFull: the Go type mirrors the whole C type, so their sizes must
	// be equal as well.
	layoutFull layoutKind = iota
	// layoutPrefix: the Go type mirrors only the leading members of a C
	// struct whose tail holds pthread types (their sizes differ by arch);
	// only the named members are checked, and the C struct must be at
	// least as large as the Go one.
	layoutPrefix
)

func (k layoutKind) String() string {
	if k == layoutFull {
		return "full"
	}
	return "prefix"
}

// layoutMirror is one Go type and the C type it mirrors.
type layoutMirror struct {
	goType reflect.Type
	cType  string
	kind   layoutKind
	// members maps Go field names to C members, for types that have no c
	// tags (those of other packages). Every named field must be listed.
	members map[string]string
}

// layoutMirrors lists every mirror. TestLayoutTable fails when a struct type
// of structs.go (or a c-tagged struct anywhere in the package) is missing.
var layoutMirrors = []layoutMirror{
	{goType: reflect.TypeFor[SGE](), cType: "struct ibv_sge", kind: layoutFull},
	{goType: reflect.TypeFor[SendWR](), cType: "struct ibv_send_wr", kind: layoutFull},
	{goType: reflect.TypeFor[RecvWR](), cType: "struct ibv_recv_wr", kind: layoutFull},
	{goType: reflect.TypeFor[WC](), cType: "struct ibv_wc", kind: layoutFull},
	{goType: reflect.TypeFor[QPCap](), cType: "struct ibv_qp_cap", kind: layoutFull},
	{goType: reflect.TypeFor[QPInitAttr](), cType: "struct ibv_qp_init_attr", kind: layoutFull},
	{goType: reflect.TypeFor[QPAttr](), cType: "struct ibv_qp_attr", kind: layoutFull},
	{goType: reflect.TypeFor[MR](), cType: "struct ibv_mr", kind: layoutFull},
	{goType: reflect.TypeFor[PD](), cType: "struct ibv_pd", kind: layoutFull},
	{goType: reflect.TypeFor[EventChannel](), cType: "struct rdma_event_channel", kind: layoutFull},
	{goType: reflect.TypeFor[CompChannel](), cType: "struct ibv_comp_channel", kind: layoutFull},
	{goType: reflect.TypeFor[CQ](), cType: "struct ibv_cq", kind: layoutPrefix},
	{goType: reflect.TypeFor[QP](), cType: "struct ibv_qp", kind: layoutPrefix},
	{goType: reflect.TypeFor[ContextOps](), cType: "struct ibv_context_ops", kind: layoutFull},
	{goType: reflect.TypeFor[Context](), cType: "struct ibv_context", kind: layoutPrefix},
	{goType: reflect.TypeFor[Device](), cType: "struct ibv_device", kind: layoutFull},
	{goType: reflect.TypeFor[DeviceAttr](), cType: "struct ibv_device_attr", kind: layoutFull},
	{goType: reflect.TypeFor[PortAttr](), cType: "struct ibv_port_attr", kind: layoutFull},
	{goType: reflect.TypeFor[GID](), cType: "union ibv_gid", kind: layoutFull},
	{goType: reflect.TypeFor[CMID](), cType: "struct rdma_cm_id", kind: layoutFull},
	{goType: reflect.TypeFor[CMEvent](), cType: "struct rdma_cm_event", kind: layoutFull},
	{goType: reflect.TypeFor[ConnParam](), cType: "struct rdma_conn_param", kind: layoutFull},
	{goType: reflect.TypeFor[AddrInfo](), cType: "struct rdma_addrinfo", kind: layoutFull},
	{goType: reflect.TypeFor[LinkMap](), cType: "struct link_map", kind: layoutPrefix},
	{goType: reflect.TypeFor[Sockaddr](), cType: "struct sockaddr", kind: layoutFull},

	// The sockaddrs rdmapool reads out of CMID.SrcAddr/DstAddr and passes
	// to rdma_getaddrinfo, as golang.org/x/sys/unix declares them.
	{goType: reflect.TypeFor[unix.RawSockaddrInet4](), cType: "struct sockaddr_in", kind: layoutFull,
		members: map[string]string{
			"Family": "sin_family",
			"Port":   "sin_port",
			"Addr":   "sin_addr",
			"Zero":   "sin_zero",
		}},
	{goType: reflect.TypeFor[unix.RawSockaddrInet6](), cType: "struct sockaddr_in6", kind: layoutFull,
		members: map[string]string{
			"Family":   "sin6_family",
			"Port":     "sin6_port",
			"Flowinfo": "sin6_flowinfo",
			"Addr":     "sin6_addr",
			"Scope_id": "sin6_scope_id",
		}},
}

// layoutExtraConsts are constants declared outside consts.go (so not found by
// parsing it) that mirror a C macro; their values are the compiled ones.
var layoutExtraConsts = []layoutConst{
	{goName: "RTLDDILinkMap", cName: "RTLD_DI_LINKMAP", value: fmt.Sprint(RTLDDILinkMap)},
}

// layoutIncludes are the headers the generated C file includes. _GNU_SOURCE
// is defined first for RTLD_DI_LINKMAP.
var layoutIncludes = []string{
	"stddef.h",
	"infiniband/verbs.h",
	"rdma/rdma_cma.h",
	"netinet/in.h",
	"link.h",
	"dlfcn.h",
}

// layoutMember is one checked member: where the Go field is and which C
// member it claims to be.
type layoutMember struct {
	goPath string // e.g. verbs.QPInitAttr.Cap.MaxSendWR
	cPath  string // e.g. cap.max_send_wr
	offset uintptr
	size   uintptr
}

// layoutMembers returns the checked members of m, recursing into fields whose
// type is itself a tagged struct (QPInitAttr.Cap, Context.Ops). Untagged named
// fields are errors: a named field is one rdmapool uses, so it must be checked.
func layoutMembers(m layoutMirror) ([]layoutMember, []error) {
	var (
		out  []layoutMember
		errs []error
	)
	var walk func(rt reflect.Type, goPrefix, cPrefix string, base uintptr, explicit map[string]string)
	walk = func(rt reflect.Type, goPrefix, cPrefix string, base uintptr, explicit map[string]string) {
		seen := map[string]bool{}
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Name == "_" {
				continue
			}
			var c string
			if explicit != nil {
				c = explicit[f.Name]
				seen[f.Name] = true
			} else {
				c = f.Tag.Get("c")
			}
			goPath := goPrefix + "." + f.Name
			if c == "" {
				errs = append(errs, fmt.Errorf("%s has no C member: give it a c tag (or name it _ if it is padding)", goPath))
				continue
			}
			lm := layoutMember{goPath: goPath, cPath: cPrefix + c, offset: base + f.Offset, size: f.Type.Size()}
			out = append(out, lm)
			if f.Type.Kind() == reflect.Struct && hasCTags(f.Type) {
				walk(f.Type, goPath, lm.cPath+".", lm.offset, nil)
			}
		}
		for name := range explicit {
			if !seen[name] {
				errs = append(errs, fmt.Errorf("%s: the table maps field %s, which %s does not have", rt, name, rt))
			}
		}
	}
	walk(m.goType, m.goType.String(), "", 0, m.members)
	return out, errs
}

func hasCTags(rt reflect.Type) bool {
	for i := range rt.NumField() {
		if _, ok := rt.Field(i).Tag.Lookup("c"); ok {
			return true
		}
	}
	return false
}

// layoutConst is one Go constant and the C enumerator or macro it mirrors.
type layoutConst struct {
	goName, cName, value string
}

var cConstName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// layoutConsts parses consts.go and returns each constant with the C name
// that the first word of its trailing comment gives. A constant without one
// is an error: consts.go promises that every constant is checked.
func layoutConsts() ([]layoutConst, []error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "consts.go", nil, parser.ParseComments)
	if err != nil {
		return nil, []error{err}
	}
	// go/types evaluates the constant expressions (1 << 3, iota, references
	// to other constants) exactly as the compiler does.
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("verbs", fset, []*ast.File{f}, info); err != nil {
		return nil, []error{fmt.Errorf("type-checking consts.go on its own (it must not depend on other files of the package): %v", err)}
	}
	var (
		out  []layoutConst
		errs []error
	)
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			var cName string
			if vs.Comment != nil {
				if w := strings.Fields(vs.Comment.Text()); len(w) > 0 && cConstName.MatchString(w[0]) {
					cName = w[0]
				}
			}
			for _, id := range vs.Names {
				if id.Name == "_" {
					continue
				}
				pos := fset.Position(id.Pos())
				if cName == "" {
					errs = append(errs, fmt.Errorf("%s: constant %s has no trailing comment naming its C enumerator or macro", pos, id.Name))
					continue
				}
				c := info.Defs[id].(*types.Const)
				v := constant.ToInt(c.Val())
				if v.Kind() != constant.Int {
					errs = append(errs, fmt.Errorf("%s: constant %s = %s is not an integer", pos, id.Name, c.Val()))
					continue
				}
				out = append(out, layoutConst{goName: id.Name, cName: cName, value: v.ExactString()})
			}
		}
	}
	return out, errs
}

// layoutC generates the C file: one _Static_assert per fact, grouped by type,
// each message naming the Go side, the C side and the Go value.
func layoutC(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("/* Generated by TestLayout (internal/verbs/layout_test.go); do not edit.\n")
	p(" * Each assertion holds a value of the Go side: a failing one names the Go\n")
	p(" * field or constant that does not match these headers. */\n\n")
	p("#define _GNU_SOURCE /* RTLD_DI_LINKMAP */\n")
	for _, h := range layoutIncludes {
		p("#include <%s>\n", h)
	}

	for _, m := range layoutMirrors {
		goName, T := m.goType.String(), m.cType
		size := m.goType.Size()
		p("\n/* %s <-> %s (%s, Go size %d) */\n", goName, T, m.kind, size)
		switch m.kind {
		case layoutFull:
			p("_Static_assert(sizeof(%s) == %d, \"%s: Go size %d != sizeof(%s)\");\n", T, size, goName, size, T)
		case layoutPrefix:
			p("_Static_assert(sizeof(%s) >= %d, \"%s: Go size %d > sizeof(%s); a prefix mirror must not be larger\");\n", T, size, goName, size, T)
		}
		members, errs := layoutMembers(m)
		for _, err := range errs {
			t.Error(err)
		}
		for _, f := range members {
			p("_Static_assert(offsetof(%s, %s) == %d, \"%s: Go offset %d != offsetof(%s, %s)\");\n",
				T, f.cPath, f.offset, f.goPath, f.offset, T, f.cPath)
			p("_Static_assert(sizeof(((%s *)0)->%s) == %d, \"%s: Go size %d != sizeof(%s member %s)\");\n",
				T, f.cPath, f.size, f.goPath, f.size, T, f.cPath)
		}
	}

	consts, errs := layoutConsts()
	for _, err := range errs {
		t.Error(err)
	}
	consts = append(consts, layoutExtraConsts...)
	p("\n/* constants */\n")
	for _, c := range consts {
		p("_Static_assert(%s == %s, \"verbs.%s: Go value %s != %s\");\n", c.cName, c.value, c.goName, c.value, c.cName)
	}
	return b.String()
}

// layoutTarget is one architecture the C file is checked for.
type layoutTarget struct {
	goarch  string
	triplet string // of the GNU cross compiler, whose sysroot has the libc headers
	pkg     string // Debian package of that cross compiler
}

var layoutTargets = []layoutTarget{
	{goarch: "amd64", triplet: "x86_64-linux-gnu", pkg: "gcc-x86-64-linux-gnu"},
	{goarch: "arm64", triplet: "aarch64-linux-gnu", pkg: "gcc-aarch64-linux-gnu"},
}

// layoutHeadersMissingWhy is the reason to skip (or fail) when the includes
// alone do not compile: the compiler's first error, and how to install them.
func layoutHeadersMissingWhy(out []byte) string {
	first := ""
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "error") {
			first = " (" + strings.TrimSpace(line) + ")"
			break
		}
	}
	return "rdma-core headers missing" + first + ": apt-get install libibverbs-dev librdmacm-dev"
}

func TestLayout(t *testing.T) {
	src := layoutC(t)
	if *layoutDump || os.Getenv("RDMAPOOL_LAYOUT_DUMP") != "" {
		// Straight to stdout, unindented, so that it can be saved and compiled.
		fmt.Printf("---- generated C ----\n%s---- end of generated C ----\n", src)
	}
	probe := layoutProbeC()
	for _, tg := range layoutTargets {
		t.Run(tg.goarch, func(t *testing.T) {
			// The expected values above are the host's, from reflect. They hold
			// for the other target as well because gc lays out a struct from the
			// sizes and alignments of its field types alone, and those are the
			// same on linux/amd64 and linux/arm64 (both LP64: 8-byte pointers,
			// uintptr and int, 8-byte alignment of 64-bit integers). Check that
			// rather than trust it: recompute every layout with go/types' gc
			// sizes for the target and compare it with reflect's.
			layoutCheckGoSizes(t, tg.goarch)

			var cc string
			var flags []string
			if tg.goarch == runtime.GOARCH {
				cc = testutil.CC(t)
				if out, err := layoutCompile(t, cc, nil, "probe.c", probe); err != nil {
					testutil.Require(t, false, layoutHeadersMissingWhy(out))
				}
			} else {
				var err error
				cc, err = exec.LookPath(tg.triplet + "-gcc")
				testutil.Require(t, err == nil, fmt.Sprintf("no %s-gcc to check the linux/%s layout: apt-get install %s (it brings the %s libc headers)", tg.triplet, tg.goarch, tg.pkg, tg.goarch))
				// No rdma-core headers for the target are installed; theirs are
				// arch-independent, so use the host's. The libc and kernel
				// headers come from the cross compiler's sysroot.
				inc := layoutCopyHostHeaders(t, probe)
				flags = []string{"-I", inc}
				if out, err := layoutCompile(t, cc, flags, "probe.c", probe); err != nil {
					t.Fatalf("%s cannot compile the includes alone (with the host's rdma-core headers copied to -I %s): %v\n%s", cc, inc, err, out)
				}
			}
			layoutCheckTarget(t, cc, tg)
			if out, err := layoutCompile(t, cc, flags, "layout.c", src); err != nil {
				t.Fatalf("the Go mirrors do not match the C headers for linux/%s (%s: %v); rerun with -args -dump to see the generated C:\n%s", tg.goarch, filepath.Base(cc), err, out)
			}
		})
	}
}

// layoutProbeC is a C file with only the includes: if it does not compile,
// headers are missing rather than a mirror wrong.
func layoutProbeC() string {
	var b strings.Builder
	b.WriteString("#define _GNU_SOURCE\n")
	for _, h := range layoutIncludes {
		fmt.Fprintf(&b, "#include <%s>\n", h)
	}
	return b.String()
}

// layoutCompile checks the syntax (and so the static assertions) of src.
func layoutCompile(t *testing.T, cc string, flags []string, name, src string) ([]byte, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-fsyntax-only", "-std=c11", "-Wall", "-Werror"}, flags...)
	return exec.Command(cc, append(args, file)...).CombinedOutput()
}

// layoutCheckTarget makes sure cc compiles for the target (a $CC for another
// architecture would check the wrong layout).
func layoutCheckTarget(t *testing.T, cc string, tg layoutTarget) {
	t.Helper()
	out, err := exec.Command(cc, "-dumpmachine").Output()
	if err != nil {
		t.Fatalf("%s -dumpmachine: %v", cc, err)
	}
	arch, _, _ := strings.Cut(strings.TrimSpace(string(out)), "-")
	want, _, _ := strings.Cut(tg.triplet, "-")
	if arch != want {
		t.Fatalf("%s targets %s, not %s (linux/%s)", cc, strings.TrimSpace(string(out)), tg.triplet, tg.goarch)
	}
}

// layoutCopyHostHeaders copies the host's infiniband/ and rdma/ header
// directories (located through the host compiler's dependency output) into a
// temporary include directory and returns it.
func layoutCopyHostHeaders(t *testing.T, probe string) string {
	t.Helper()
	cc := testutil.CC(t)
	file := filepath.Join(t.TempDir(), "probe.c")
	if err := os.WriteFile(file, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-M", file).CombinedOutput()
	if err != nil {
		testutil.Require(t, false, layoutHeadersMissingWhy(out))
	}
	deps := strings.Fields(strings.ReplaceAll(string(out), "\\\n", " "))
	inc := t.TempDir()
	for _, h := range []string{"infiniband/verbs.h", "rdma/rdma_cma.h"} {
		i := slices.IndexFunc(deps, func(d string) bool { return strings.HasSuffix(d, "/"+h) })
		if i < 0 {
			t.Fatalf("%s -M does not list %s:\n%s", cc, h, out)
		}
		from := filepath.Dir(filepath.Clean(deps[i]))
		if err := layoutCopyDir(filepath.Join(inc, filepath.Base(from)), from); err != nil {
			t.Fatalf("copying %s: %v", from, err)
		}
	}
	return inc
}

// layoutCopyDir copies the tree at from to to, following symbolic links to
// files (unlike os.CopyFS).
func layoutCopyDir(to, from string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// layoutCheckGoSizes compares the layout reflect reports for every mirror
// (the host's) with the one go/types computes for goarch under gc's rules.
func layoutCheckGoSizes(t *testing.T, goarch string) {
	t.Helper()
	sizes := types.SizesFor("gc", goarch)
	if sizes == nil {
		t.Fatalf("go/types knows no gc sizes for %s", goarch)
	}
	for _, m := range layoutMirrors {
		tt, err := layoutTypesType(m.goType)
		if err != nil {
			t.Errorf("%s: %v", m.goType, err)
			continue
		}
		layoutCompareSizes(t, sizes, goarch, m.goType.String(), m.goType, tt)
	}
}

func layoutCompareSizes(t *testing.T, sizes types.Sizes, goarch, name string, rt reflect.Type, tt types.Type) {
	t.Helper()
	if got, want := sizes.Sizeof(tt), int64(rt.Size()); got != want {
		t.Errorf("%s: size %d on %s, %d on the host (%s)", name, got, goarch, want, runtime.GOARCH)
	}
	if got, want := sizes.Alignof(tt), int64(rt.Align()); got != want {
		t.Errorf("%s: alignment %d on %s, %d on the host (%s)", name, got, goarch, want, runtime.GOARCH)
	}
	switch rt.Kind() {
	case reflect.Array:
		layoutCompareSizes(t, sizes, goarch, name+"[0]", rt.Elem(), tt.(*types.Array).Elem())
	case reflect.Struct:
		st := tt.(*types.Struct)
		fields := make([]*types.Var, st.NumFields())
		for i := range fields {
			fields[i] = st.Field(i)
		}
		offs := sizes.Offsetsof(fields)
		for i := range rt.NumField() {
			f := rt.Field(i)
			fname := fmt.Sprintf("%s.%s (field %d)", name, f.Name, i)
			if offs[i] != int64(f.Offset) {
				t.Errorf("%s: offset %d on %s, %d on the host (%s)", fname, offs[i], goarch, f.Offset, runtime.GOARCH)
			}
			layoutCompareSizes(t, sizes, goarch, fname, f.Type, fields[i].Type())
		}
	}
}

// layoutTypesType rebuilds rt as a go/types type with the same layout.
func layoutTypesType(rt reflect.Type) (types.Type, error) {
	basic := map[reflect.Kind]types.BasicKind{
		reflect.Bool: types.Bool, reflect.Int: types.Int, reflect.Int8: types.Int8,
		reflect.Int16: types.Int16, reflect.Int32: types.Int32, reflect.Int64: types.Int64,
		reflect.Uint: types.Uint, reflect.Uint8: types.Uint8, reflect.Uint16: types.Uint16,
		reflect.Uint32: types.Uint32, reflect.Uint64: types.Uint64, reflect.Uintptr: types.Uintptr,
		reflect.Float32: types.Float32, reflect.Float64: types.Float64,
		reflect.UnsafePointer: types.UnsafePointer,
		reflect.Pointer:       types.UnsafePointer, // same size and alignment
	}
	if k, ok := basic[rt.Kind()]; ok {
		return types.Typ[k], nil
	}
	switch rt.Kind() {
	case reflect.Array:
		e, err := layoutTypesType(rt.Elem())
		if err != nil {
			return nil, err
		}
		return types.NewArray(e, int64(rt.Len())), nil
	case reflect.Struct:
		fields := make([]*types.Var, rt.NumField())
		for i := range fields {
			f := rt.Field(i)
			ft, err := layoutTypesType(f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = types.NewField(token.NoPos, nil, f.Name, ft, f.Anonymous)
		}
		return types.NewStruct(fields, nil), nil
	}
	return nil, fmt.Errorf("field type %s (%s) has no place in a C mirror", rt, rt.Kind())
}

// TestLayoutTable fails when a mirror is missing from layoutMirrors: every
// struct type declared in structs.go, and every struct type of the package
// with a c tag, must be there.
func TestLayoutTable(t *testing.T) {
	pkgPath := reflect.TypeFor[SGE]().PkgPath()
	inTable := map[string]bool{}
	for _, m := range layoutMirrors {
		if inTable[m.goType.String()] {
			t.Errorf("%s is listed twice in layoutMirrors", m.goType)
		}
		inTable[m.goType.String()] = true
		if m.goType.PkgPath() == pkgPath && m.members != nil {
			t.Errorf("%s: give its fields c tags instead of a members map", m.goType)
		}
		if m.goType.PkgPath() != pkgPath && m.members == nil {
			t.Errorf("%s is declared in another package: map its fields to C members in layoutMirrors", m.goType)
		}
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok || !(name == "structs.go" || layoutHasCTag(st)) {
				return true
			}
			found++
			if !inTable["verbs."+ts.Name.Name] {
				t.Errorf("%s: struct %s mirrors C but is missing from layoutMirrors in layout_test.go", fset.Position(ts.Pos()), ts.Name.Name)
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("found no struct types in structs.go; is the test running in the package directory?")
	}
}

func layoutHasCTag(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if f.Tag != nil && strings.Contains(f.Tag.Value, `c:"`) {
			return true
		}
	}
	return false
}
