package loader

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// EnvLibraryPath names the environment variable that, when set, lists the
// directories (colon-separated) where Load looks for the libraries instead of
// the dynamic linker's default search.
const EnvLibraryPath = "RDMAPOOL_LIBRARY_PATH"

// Library is one library as it was loaded.
type Library struct {
	Name string // "libibverbs" or "librdmacm"
	File string // the name given to dlopen, e.g. "libibverbs.so.1"
	Path string // the file the dynamic linker loaded
}

// Libraries describes the bound RDMA libraries.
type Libraries struct {
	IBVerbs Library
	RDMACM  Library
}

// Option changes how Load looks for the libraries.
type Option func(*config)

type config struct {
	dirs []string
}

// WithSearchPath makes Load look only in dirs, in order, before it falls back
// to nothing else. It overrides RDMAPOOL_LIBRARY_PATH.
func WithSearchPath(dirs ...string) Option {
	return func(c *config) { c.dirs = append([]string(nil), dirs...) }
}

var (
	mu     sync.Mutex
	loaded atomic.Pointer[Libraries]
)

// Load binds the RDMA libraries if this process has not yet done so, and
// returns what was loaded. Concurrent first calls bind once; the others wait
// and share the result. A failure is returned, not remembered: nothing stays
// loaded or published, and a later Load tries again. Options only matter for
// the call that binds.
func Load(opts ...Option) (*Libraries, error) {
	if l := loaded.Load(); l != nil {
		return l, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if l := loaded.Load(); l != nil {
		return l, nil
	}
	var c config
	if env := os.Getenv(EnvLibraryPath); env != "" {
		c.dirs = filepath.SplitList(env)
	}
	for _, o := range opts {
		o(&c)
	}
	l, t, err := bind(c)
	if err != nil {
		return nil, err
	}
	ffi.SetErrnoLocation(t.C.ErrnoLocation)
	verbs.Publish(t)
	loaded.Store(l)
	return l, nil
}

// Loaded returns what Load bound, or nil if nothing is bound yet. It never
// loads anything.
func Loaded() *Libraries { return loaded.Load() }

// candidates lists the names to give dlopen for a library, in order.
func candidates(dirs []string, names []string) []string {
	if len(dirs) == 0 {
		return names
	}
	var out []string
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}
