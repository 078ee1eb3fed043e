package listen

import (
	"net"
	"sync"
	"sync/atomic"
)

// capped is a listener that keeps at most cap(sem) connections open: a
// slot is taken before each Accept and given back when the connection is
// closed, exactly once however often it is closed. While every slot is
// taken, Accept waits, and new connections wait in the kernel's accept
// queue (they cost the process no file descriptor); Close ends the wait.
type capped struct {
	net.Listener
	sem  chan struct{}
	full func() // called each time Accept has to wait for a slot
	open atomic.Int64

	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed by Close
}

func newCapped(l net.Listener, n int, full func()) *capped {
	return &capped{Listener: l, sem: make(chan struct{}, n), full: full, done: make(chan struct{})}
}

func (l *capped) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.full()
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	return &cappedConn{Conn: c, release: func() { l.open.Add(-1); <-l.sem }}, nil
}

// Close closes the listener, ending a wait in Accept; it may be called
// more than once.
func (l *capped) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

// cappedConn gives its slot back on its first Close.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes a TCP connection, as net/http does before
// closing one it refuses, so that the client reads the answer first.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
