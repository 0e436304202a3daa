// Package verbs is rdmapool's binding of librdmacm and libibverbs: the Go
// mirrors of their C structs, their constants, the table of function addresses
// that the loader fills, and thin typed wrappers that call through it.
//
// C names live here and in the loader only. Every pointer that crosses into C
// is the address of C memory (see internal/unsafeptr); nothing here hands a Go
// pointer to the libraries.
package verbs

import "sync/atomic"

// Table holds the address of every C function rdmapool calls, grouped by the
// library that exports it. The loader fills a Table by reflection over the
// `sym` tags and publishes it only when every symbol resolved, so a published
// Table never holds a zero address.
type Table struct {
	C   LibcFuncs `lib:"libc"` // first: the loader needs it to report the others
	IBV IBVFuncs  `lib:"libibverbs"`
	CM  CMFuncs   `lib:"librdmacm"`
}

// CMFuncs are librdmacm's.
type CMFuncs struct {
	CreateEventChannel  uintptr `sym:"rdma_create_event_channel"`
	DestroyEventChannel uintptr `sym:"rdma_destroy_event_channel"`
	CreateID            uintptr `sym:"rdma_create_id"`
	DestroyID           uintptr `sym:"rdma_destroy_id"`
	SetOption           uintptr `sym:"rdma_set_option"`
	BindAddr            uintptr `sym:"rdma_bind_addr"`
	Listen              uintptr `sym:"rdma_listen"`
	Accept              uintptr `sym:"rdma_accept"`
	Reject              uintptr `sym:"rdma_reject"`
	ResolveAddr         uintptr `sym:"rdma_resolve_addr"`
	ResolveRoute        uintptr `sym:"rdma_resolve_route"`
	Connect             uintptr `sym:"rdma_connect"`
	Disconnect          uintptr `sym:"rdma_disconnect"`
	CreateQP            uintptr `sym:"rdma_create_qp"`
	DestroyQP           uintptr `sym:"rdma_destroy_qp"`
	InitQPAttr          uintptr `sym:"rdma_init_qp_attr"`
	Establish           uintptr `sym:"rdma_establish"`
	GetCMEvent          uintptr `sym:"rdma_get_cm_event"`
	AckCMEvent          uintptr `sym:"rdma_ack_cm_event"`
	GetAddrInfo         uintptr `sym:"rdma_getaddrinfo"`
	FreeAddrInfo        uintptr `sym:"rdma_freeaddrinfo"`
	EventStr            uintptr `sym:"rdma_event_str"`
	MigrateID           uintptr `sym:"rdma_migrate_id"`
	GetDevices          uintptr `sym:"rdma_get_devices"`
	FreeDevices         uintptr `sym:"rdma_free_devices"`
}

// IBVFuncs are libibverbs'. ibv_reg_mr and ibv_query_port are macros in
// verbs.h; the exported functions of the same names are the ones bound here
// (ibv_query_port's export takes the compatible, zero-filled port attributes).
// ibv_reg_mr, ibv_create_qp, ibv_modify_qp and ibv_destroy_qp are exported in
// two versions; dlsym returns the default one, IBVERBS_1.1, which verbs.h
// declares (IBVERBS_1.0 is the compatibility layer for binaries linked
// against libibverbs 1.0). ibv_post_send, ibv_post_recv, ibv_poll_cq and
// ibv_req_notify_cq are static inline and exported by no library: see
// ContextOps.
type IBVFuncs struct {
	GetDeviceList      uintptr `sym:"ibv_get_device_list"`
	FreeDeviceList     uintptr `sym:"ibv_free_device_list"`
	GetDeviceName      uintptr `sym:"ibv_get_device_name"`
	OpenDevice         uintptr `sym:"ibv_open_device"`
	CloseDevice        uintptr `sym:"ibv_close_device"`
	QueryDevice        uintptr `sym:"ibv_query_device"`
	QueryPort          uintptr `sym:"ibv_query_port"`
	QueryGID           uintptr `sym:"ibv_query_gid"`
	AllocPD            uintptr `sym:"ibv_alloc_pd"`
	DeallocPD          uintptr `sym:"ibv_dealloc_pd"`
	CreateCompChannel  uintptr `sym:"ibv_create_comp_channel"`
	DestroyCompChannel uintptr `sym:"ibv_destroy_comp_channel"`
	CreateCQ           uintptr `sym:"ibv_create_cq"`
	DestroyCQ          uintptr `sym:"ibv_destroy_cq"`
	RegMR              uintptr `sym:"ibv_reg_mr"`
	DeregMR            uintptr `sym:"ibv_dereg_mr"`
	GetCQEvent         uintptr `sym:"ibv_get_cq_event"`
	AckCQEvents        uintptr `sym:"ibv_ack_cq_events"`
	CreateQP           uintptr `sym:"ibv_create_qp"`
	ModifyQP           uintptr `sym:"ibv_modify_qp"`
	DestroyQP          uintptr `sym:"ibv_destroy_qp"`
	WCStatusStr        uintptr `sym:"ibv_wc_status_str"`
}

// LibcFuncs are the C library's, looked up in the process's global scope
// (a binary that imports purego has libc loaded from the start): an allocator
// for the small structs that the control path passes to the libraries, errno,
// and dlinfo to learn which file a library was loaded from.
type LibcFuncs struct {
	Calloc        uintptr `sym:"calloc"`
	Free          uintptr `sym:"free"`
	ErrnoLocation uintptr `sym:"__errno_location"`
	Dlinfo        uintptr `sym:"dlinfo"`
}

var bound atomic.Pointer[Table]

// Bound returns the published table, or nil before the loader has bound the
// libraries.
func Bound() *Table { return bound.Load() }

// Publish makes t the table that Bound returns, and starts the librdmacm
// thread (cmthread.go), so that it exists from the moment the libraries are
// bound. Only the loader calls it, and only with a fully resolved table.
func Publish(t *Table) {
	startCMThread()
	bound.Store(t)
}
