package qp

// InlineCap is the max_inline_data the provider granted c's QP.
func (c *Conn) InlineCap() uint32 { return c.res.inline }
