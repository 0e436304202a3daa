package loader

import (
	"reflect"
	"runtime"

	"github.com/ebitengine/purego"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// sonames lists, for each library of verbs.Table, the names to try: the
// soname first, then the unversioned name a -dev package installs. libc has
// none: it is looked up in the global scope, where it always is. The table
// lists libibverbs before librdmacm, so librdmacm's own dependency on
// libibverbs is met by the file chosen here.
var sonames = map[string][]string{
	"libibverbs": {"libibverbs.so.1", "libibverbs.so"},
	"librdmacm":  {"librdmacm.so.1", "librdmacm.so"},
}

type opened struct {
	handle uintptr
	lib    Library
}

// bind opens the libraries and resolves every symbol of verbs.Table. It runs
// on one locked OS thread so that dlerror reports on the call that failed, and
// on failure it closes whatever it opened.
func bind(c config) (libs *Libraries, t *verbs.Table, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	handles := map[string]opened{"libc": {handle: purego.RTLD_DEFAULT, lib: Library{Name: "libc"}}}
	defer func() {
		if err != nil {
			for name, h := range handles {
				if name != "libc" {
					purego.Dlclose(h.handle)
				}
			}
		}
	}()
	t = new(verbs.Table)
	groups := reflect.ValueOf(t).Elem()
	for i := range groups.NumField() {
		// libc's group comes first in the table: it is in the global scope,
		// and resolving it first lets a later SymbolError name its file.
		name := groups.Type().Field(i).Tag.Get("lib")
		if _, ok := handles[name]; !ok {
			h, lib, err := open(name, candidates(c.dirs, sonames[name]))
			if err != nil {
				return nil, nil, err
			}
			lib.Path = linkMapName(t, h, lib.File)
			handles[name] = opened{h, lib}
		}
		if err := resolve(groups.Field(i), handles[name]); err != nil {
			return nil, nil, err
		}
	}
	libs = &Libraries{IBVerbs: handles["libibverbs"].lib, RDMACM: handles["librdmacm"].lib}
	return libs, t, nil
}

// resolve fills every field of a group of verbs.Table from its `sym` tag.
func resolve(fns reflect.Value, o opened) error {
	for j := range fns.NumField() {
		sym := fns.Type().Field(j).Tag.Get("sym")
		p, err := purego.Dlsym(o.handle, sym)
		if err != nil || p == 0 {
			msg := "not found"
			if err != nil {
				msg = err.Error()
			}
			return &SymbolError{Library: o.lib.Name, Path: o.lib.Path, Symbol: sym, Dlerror: msg}
		}
		fns.Field(j).SetUint(uint64(p))
	}
	return nil
}

// open tries each name in turn and returns the first that loads.
func open(lib string, names []string) (uintptr, Library, error) {
	e := &LibraryError{Library: lib}
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, Library{Name: lib, File: n, Path: n}, nil
		}
		e.Attempts = append(e.Attempts, Attempt{Name: n, Dlerror: err.Error()})
	}
	if len(names) == 0 {
		e.Attempts = append(e.Attempts, Attempt{Name: "(no names: empty search path)", Dlerror: "nothing tried"})
	}
	return 0, Library{}, e
}

// linkMapName asks the dynamic linker which file a handle was loaded from
// (dlinfo RTLD_DI_LINKMAP, l_name), falling back to the name given to dlopen.
// t.C must be resolved.
func linkMapName(t *verbs.Table, handle uintptr, fallback string) string {
	slot, err := verbs.Alloc[verbs.Ptr[verbs.LinkMap]](t, 1)
	if err != nil {
		return fallback
	}
	defer verbs.Release(t, slot)
	if int32(ffi.Call3(t.C.Dlinfo, handle, verbs.RTLDDILinkMap, slot.Addr())) != 0 { // a C int: the upper half is not defined
		return fallback
	}
	lm := *slot.Get()
	if lm.IsNil() {
		return fallback
	}
	if name := unsafeptr.GoString(lm.Get().Name, 4096); name != "" {
		return name
	}
	return fallback
}
