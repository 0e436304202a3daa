package qp

// TakeRxSignal takes the signal on c's rxNotify, if there is one, and
// reports whether there was: whether the reader's next park would have
// returned at once.
func (c *Conn) TakeRxSignal() bool {
	select {
	case <-c.rxNotify:
		return true
	default:
		return false
	}
}
