//go:build !cgo

package cgoref

// Available reports whether this build has the cgo baseline; build with
// CGO_ENABLED=1 to get it.
const Available = false

// Call3 panics: there is no cgo in this build. Check Available first.
func Call3(fn, a, b, c uintptr) uintptr { panic("cgoref: built without cgo") }
