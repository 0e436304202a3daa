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
// cq.Inline). A re-arm of the receive buffer registers with rmu let go
// (registerRx). regWG counts the registrations and closes under way, which
// teardown waits for, holding rmu, wmu and smu, before it frees the PD: so
// nothing regWG counts waits for one of those locks (registerRx is done
// before it takes rmu back; the shrink only tries wmu).

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
	c.regWG.Add(1)
	go func() {
		defer c.regWG.Done()
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
	c.regWG.Add(1)
	c.wmu.Unlock()
	for _, m := range dead {
		m.Close()
	}
	c.regWG.Done()
}

// dropPrepared closes the registrations no writer or reader took
// (teardown, every lock held, regWG waited for).
func (c *Conn) dropPrepared() {
	if p := c.txPrepped.Swap(nil); p != nil && p.err == nil {
		p.m.Close()
	}
	c.txPrep = false
	if r := c.rxPrepped.Swap(nil); r != nil {
		r.Close()
	}
}

// registerRx registers a receive buffer of size bytes for a re-arm, with
// rmu let go meanwhile (held on entry and on return): a reader that comes
// then waits outside rmu until it is done (readable), so that none holds
// rmu while it waits for data that cannot come before the re-arm. It
// returns nil if the registration failed, or if the teardown, which waits
// for it, took the region.
func (c *Conn) registerRx(size int) *mr.Region {
	done := make(chan struct{})
	c.rxRearm = done
	c.regWG.Add(1)
	c.rmu.Unlock()
	c.registering(size)
	if r, err := mr.Register(c.res.mpd, size, mr.LocalWrite|mr.RemoteWrite); err == nil {
		c.rxPrepped.Store(r)
	}
	c.regWG.Done() // before rmu: the teardown waits for it holding rmu
	c.rmu.Lock()
	c.rxRearm = nil
	close(done)
	return c.rxPrepped.Swap(nil)
}

// unlockR lets go of rmu, then closes the receive buffer a re-arm replaced.
func (c *Conn) unlockR() {
	old := c.rxOld
	if old == nil {
		c.rmu.Unlock()
		return
	}
	c.rxOld = nil
	c.regWG.Add(1)
	c.rmu.Unlock()
	old.Close()
	c.regWG.Done()
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
	if c.life.ended() { // teardown frees res under wmu, after the life ended
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
	c.regWG.Add(1)
	defer c.regWG.Done()
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
	if c.life.ended() {
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
