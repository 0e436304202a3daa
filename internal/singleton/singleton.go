// Package singleton holds a process-wide resource that its first user
// starts and its last user stops, so that an idle process runs none of it:
// the RDMA completion-queue reactor (package qp) and the gnet client of
// the TCP engine (package pool).
package singleton

import "sync"

// Shared is one such resource. The zero value holds none; Stop, when set,
// ends the resource once its last user releases it.
type Shared[T any] struct {
	Stop func(T)

	mu    sync.Mutex
	v     T
	users int
}

// Acquire returns the running resource, after starting it with start if
// none runs; every successful Acquire must be paired with a Release. A
// failed start counts no user, and the next Acquire tries again.
func (s *Shared[T]) Acquire(start func() (T, error)) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 {
		v, err := start()
		if err != nil {
			var zero T
			return zero, err
		}
		s.v = v
	}
	s.users++
	return s.v, nil
}

// Release ends one user's hold, and stops the resource after the last.
func (s *Shared[T]) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 {
		panic("singleton: Release without Acquire")
	}
	if s.users--; s.users == 0 {
		if s.Stop != nil {
			s.Stop(s.v)
		}
		var zero T
		s.v = zero
	}
}

// Peek calls f with the resource while it runs, holding it in place, and
// reports whether one ran.
func (s *Shared[T]) Peek(f func(T)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 {
		return false
	}
	f(s.v)
	return true
}
