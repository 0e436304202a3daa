// Package loader binds librdmacm and libibverbs at run time, on first use.
//
// A program built with rdmapool has no link-time dependency on the RDMA
// libraries (its ELF file has no NEEDED entry for them): it starts, and serves
// over TCP, on machines that do not have them. The first RDMA use calls Load,
// which dlopens libibverbs and librdmacm (the soname first, then the
// unversioned development name, with RTLD_NOW), resolves every function
// rdmapool calls, and only then publishes them. Load is safe for concurrent
// use and binds once per process; a failed Load leaves nothing behind and can
// be retried.
//
// Failures are error values that match ErrUnavailable: a *LibraryError names
// the library, every file name tried and dlerror's text for each; a
// *SymbolError names the library, the file and the missing symbol. Binding is
// built for Linux only (bind_linux.go); on any other system Load returns an
// *UnsupportedOSError, and a program there serves over TCP.
//
// Where to look can be set with WithSearchPath or the RDMAPOOL_LIBRARY_PATH
// environment variable (a colon-separated list of directories).
package loader
