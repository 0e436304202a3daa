package bench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU is the CPU time the whole machine has been busy (every CPU,
// every process and the kernel: its softirqs and tasks too, where
// soft-RoCE does a NIC's work), from /proc/stat; false if it cannot be
// read.
func machineCPU() (time.Duration, bool) {
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(st), "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal ... (proc(5))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	return time.Duration(busy) * (time.Second / clockTicks), true
}
