//go:build !linux

package bench

import "time"

func machineCPU() (time.Duration, bool) { return 0, false }
