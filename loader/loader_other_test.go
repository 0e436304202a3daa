//go:build !linux

package loader

import (
	"errors"
	"runtime"
	"testing"
)

// Off Linux, Load fails with an error that matches ErrUnavailable and names
// the system, and binds nothing.
func TestLoadOtherOS(t *testing.T) {
	libs, err := Load()
	if libs != nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Load() = %v, %v; want nil and an error matching ErrUnavailable", libs, err)
	}
	var ue *UnsupportedOSError
	if !errors.As(err, &ue) || ue.GOOS != runtime.GOOS {
		t.Errorf("Load's error %v (%T) is not an *UnsupportedOSError for %s", err, err, runtime.GOOS)
	}
	if Loaded() != nil {
		t.Error("Loaded() is not nil after a failed Load")
	}
}
