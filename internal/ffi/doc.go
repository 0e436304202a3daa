// Package ffi calls C functions by address without cgo and without allocating.
//
// purego.SyscallN takes its arguments as a variadic slice and marks them
// //go:uintptrescapes, so every call allocates. The data path of an RDMA
// connection (post_send, post_recv, poll_cq, req_notify_cq) cannot afford that,
// so this package has its own fixed-arity path: the arguments are written into a
// frame on the caller's stack and handed, through runtime.cgocall, to a small
// assembly trampoline that loads them into the C argument registers, calls the
// function on the system stack and stores the result (and, when asked, errno)
// back into the frame. runtime.cgocall is the same entry that cgo and purego use;
// with CGO_ENABLED=0 purego's fakecgo provides the runtime hooks it needs, which
// is why this package imports purego.
//
// Direct2 and Direct3 (direct_linux.go) make the same call without
// runtime.cgocall, for C functions that return promptly and never block: the
// data-path verbs.
//
// Rules for callers: every argument is an integer or the address of C memory
// (never of Go memory: a Go stack may move and the garbage collector does not
// know about uintptrs), and the function takes at most six integer or pointer
// arguments and no floating-point ones.
//
// The calls are built for Linux (the *_linux files and the trampolines), where
// the RDMA libraries are. On other systems (ffi_other.go) every call panics:
// there, package loader binds nothing and so hands out no address to call.
package ffi
