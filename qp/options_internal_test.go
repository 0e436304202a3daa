package qp

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{RecvBufferSize: 100}, "RecvBufferSize 100 is outside"},
		{Options{MaxPeerBufferSize: 1 << 30}, "MaxPeerBufferSize 1073741824 is outside"},
		{Options{KeepaliveInterval: -time.Second}, "KeepaliveInterval -1s is negative"},
		{Options{Backlog: -1}, "Backlog -1 is negative"},
		{Options{CloseLinger: -time.Second}, "CloseLinger -1s is negative"},
		{Options{QueueDepth: 8}, "QueueDepth 8 is outside"},
		{Options{QueueDepth: -1}, "QueueDepth -1 is outside"},
		{Options{QueueDepth: 1 << 20}, "QueueDepth 1048576 is outside"},
	} {
		if _, err := tc.opts.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.opts, err, tc.want)
		}
	}
	var nilOpts *Options
	o, err := nilOpts.withDefaults()
	if err != nil || o.RecvBufferSize != defaultRecvBuffer || o.Backlog != defaultBacklog || o.KeepaliveInterval != defaultKeepalive {
		t.Errorf("nil options: %+v, %v", o, err)
	}
	if o.CloseLinger != defaultCloseLinger {
		t.Errorf("nil options: CloseLinger %v, want %v", o.CloseLinger, defaultCloseLinger)
	}
	if o.QueueDepth != defaultQueueDepth {
		t.Errorf("nil options: QueueDepth %d, want %d", o.QueueDepth, defaultQueueDepth)
	}
}
