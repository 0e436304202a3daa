package qp

import "github.com/seed54442f1a/rdmapool/mr"

// Registering memory (ibv_reg_mr) takes milliseconds on a NIC for a large
// region, and so does deregistering it. The send staging ring (mr.SendRing)
// does neither itself: a Reserve that wants memory says so, a goroutine of
// its own registers it without wmu (prepareStaging), and the next writer
// hands it to the ring under wmu (takePrepared), which puts it in place if
// it is still wanted; meanwhile the writer goes on with the room it has.
// Regions the ring gives up are closed after wmu is let go (unlockW). So
// no writer of the connection waits for a registration, nor does any
// reader or writer of another connection on its CQ (a writer registering
// inside its spin would have kept the reactor off the CQ all the while,
// cq.Inline). txWG counts the registrations and closes under way, which
// teardown waits for before it frees the PD.

// prepared is a registration of staging memory made without wmu.
type prepared struct {
	m   mr.Staging
	err error
}

// takePrepared hands a finished registration to the send ring (wmu held).
// A failed one is the connection's error if the ring has no memory at all
// (its first); else the ring goes on as it was.
func (c *Conn) takePrepared() error {
	if !c.txPrep {
		return nil
	}
	p := c.txPrepped.Swap(nil)
	if p == nil {
		return nil
	}
	c.txPrep = false
	tx := c.res.tx
	if p.err != nil {
		tx.Refused()
		if !tx.HasMemory() {
			return p.err
		}
		return nil
	}
	tx.Offer(p.m)
	return nil
}

// prepareStaging starts the registration the send ring asks for (wmu
// held), unless one is under way: on a goroutine of its own, which signals
// txNotify when it is done.
func (c *Conn) prepareStaging() {
	if c.txPrep {
		return
	}
	tx := c.res.tx
	size := tx.Wanted()
	if size == 0 {
		return
	}
	c.txPrep = true
	c.txWG.Add(1)
	go func() {
		defer c.txWG.Done()
		c.registering(size)
		m, err := tx.Prepare(size)
		c.txPrepped.Store(&prepared{m: m, err: err})
		signal(c.txNotify)
	}()
}

// unlockW lets go of wmu, then closes the staging memory the ring gave up.
func (c *Conn) unlockW() {
	var dead []mr.Staging
	if c.res != nil && c.res.tx != nil { // nil once torn down
		dead = c.res.tx.Dead()
	}
	if dead == nil {
		c.wmu.Unlock()
		return
	}
	c.txWG.Add(1)
	c.wmu.Unlock()
	for _, m := range dead {
		m.Close()
	}
	c.txWG.Done()
}

// dropPrepared closes a registration no writer took (teardown, wmu held,
// txWG waited for).
func (c *Conn) dropPrepared() {
	if p := c.txPrepped.Swap(nil); p != nil && p.err == nil {
		p.m.Close()
	}
	c.txPrep = false
}

// shrinkStaging gives the send staging memory back to its base size when no
// write came since the last keepalive and every write has completed (while
// writes wait for a completion a keepalive is sent, signaled, and tells of
// them by the next tick). A writer, or a held reservation, holds wmu: then
// it is not idle. The smaller region is registered without wmu, and put in
// place only if the ring is still idle then.
func (c *Conn) shrinkStaging() {
	if !c.wmu.TryLock() {
		return
	}
	if c.is(stClosing) { // teardown frees res under wmu, after setting stClosing
		c.wmu.Unlock()
		return
	}
	if err := c.takePrepared(); err != nil {
		c.fail(err)
	}
	tx := c.res.tx
	size := tx.ShrinkWanted(c.sqDone.Load())
	if size == 0 {
		c.unlockW()
		return
	}
	c.txWG.Add(1)
	defer c.txWG.Done()
	c.unlockW()
	c.registering(size)
	m, err := tx.Prepare(size)
	if err != nil {
		return
	}
	if !c.wmu.TryLock() { // a writer came: not idle
		m.Close()
		return
	}
	if c.is(stClosing) {
		c.wmu.Unlock()
		m.Close()
		return
	}
	tx.ShrinkTo(m, c.sqDone.Load())
	c.unlockW()
}

// registering runs the test hook (Options.registering) before a
// registration of size bytes.
func (c *Conn) registering(size int) {
	if h := c.opts.registering; h != nil {
		if f := h.Load(); f != nil {
			(*f)(c, size)
		}
	}
}
