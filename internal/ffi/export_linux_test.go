package ffi

// SetDirectOff switches direct calls to runtime.cgocall (or back) for a test.
func SetDirectOff(off bool) (restore func()) {
	was := directOff
	directOff = off
	return func() { directOff = was }
}
