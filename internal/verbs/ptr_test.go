package verbs

import (
	"testing"
	"unsafe"
)

// TestPtr: a Ptr costs what a uintptr does, in the mirrors' members too,
// and its arithmetic is in whole elements, sized by the mirror.
func TestPtr(t *testing.T) {
	if s, a := unsafe.Sizeof(Ptr[CQ]{}), unsafe.Alignof(Ptr[CQ]{}); s != unsafe.Sizeof(uintptr(0)) || a != unsafe.Alignof(uintptr(0)) {
		t.Errorf("Ptr: size %d, alignment %d; want a uintptr's", s, a)
	}
	p := PtrAt[WC](0x1000)
	if got, want := p.Index(3).Addr(), uintptr(0x1000)+3*unsafe.Sizeof(WC{}); got != want {
		t.Errorf("Index(3) = %#x, want %#x", got, want)
	}
	if p.IsNil() || !(Ptr[WC]{}).IsNil() {
		t.Error("IsNil is wrong")
	}
	if (Ptr[SGE]{}).Slice(4) != nil || p.Slice(0) != nil {
		t.Error("Slice of NULL or of 0 elements is not nil")
	}
}
