package qp

// RxSignalled reports whether c's reader would find its rxNotify
// signalled at its next park.
func (c *Conn) RxSignalled() bool { return len(c.rxNotify) > 0 }
