package qp

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// TestFileLimitError: an EMFILE from a verbs call says what the limits are
// and still matches EMFILE; any other error passes unchanged.
func TestFileLimitError(t *testing.T) {
	emfile := &verbs.CallError{Func: "ibv_create_comp_channel", Errno: syscall.EMFILE}
	err := fileLimitError(emfile)
	if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "hard limit") {
		t.Errorf("fileLimitError(EMFILE) = %v; want the limits, matching EMFILE", err)
	}
	other := &verbs.CallError{Func: "ibv_create_cq", Errno: syscall.ENOMEM}
	if err := fileLimitError(other); err != other {
		t.Errorf("fileLimitError(ENOMEM) = %v; want it unchanged", err)
	}
}
