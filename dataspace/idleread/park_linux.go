package idleread

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Parking: a stream with nothing pending waits with no goroutine at all.
// Read still holds the waiting goroutine's stack (a relay reader's has
// grown to 8 kB running the turns of a handshake by the time it waits);
// a thousand idle peers hold 6–8 MB that way. A parked stream is instead
// registered, one-shot, with an epoll set of this package's, which one
// goroutine watches for all of them; when input (or the end of input)
// arrives, the stream's resume function runs on a new goroutine.
//
// The runtime's poller keeps its own registration of the descriptor;
// the two do not interfere (epoll sets are independent, and a parked
// stream has no reader in the runtime's poller). Closing a descriptor
// removes it from every epoll set, silently: whoever closes a parked
// stream must call Unpark afterwards, so that its reader runs, finds the
// stream closed, and ends. Tokens, not descriptors, name parked streams,
// so an event for a stream closed and replaced under the same number is
// dropped.

// ErrNoParking: the stream cannot be parked (it has no descriptor, or
// the system has no epoll); the caller waits in Read instead.
var ErrNoParking = errors.New("idleread: stream cannot be parked")

// poller is the one epoll set and the goroutine watching it, which runs
// only while some stream is parked (so a process, or a test, with none
// parked has no goroutine of this package).
type poller struct {
	once    sync.Once
	epfd    int
	wakefd  int // an eventfd in the set, token 0: stops the watch early
	err     error
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]*Waiter
	running bool // a loop goroutine watches the set
}

var thePoller poller

// OpenPoller opens the poller's two descriptors (an epoll set and an
// eventfd, kept for the process's life) now rather than at the first
// Park: for tests that count a process's descriptors before and after.
func OpenPoller() error { return thePoller.init() }

func (p *poller) init() error {
	p.once.Do(func() {
		if p.epfd, p.err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); p.err != nil {
			return
		}
		if p.wakefd, p.err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); p.err != nil {
			return
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN}
		p.err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, p.wakefd, &ev)
		p.waiting = make(map[uint64]*Waiter)
	})
	return p.err
}

// sweepEvery is how often the poller looks for parked streams closed
// behind their reader's back (by a Close that did not Unpark): such a
// stream's registration is gone, so no event would ever resume it.
const sweepEvery = 5 * time.Second

func (p *poller) loop() {
	events := make([]unix.EpollEvent, 128)
	last := time.Now()
	for {
		n, err := unix.EpollWait(p.epfd, events, int(sweepEvery/time.Millisecond))
		if time.Since(last) >= sweepEvery {
			p.sweep()
			last = time.Now()
		}
		if err != nil {
			n = 0
			if !errors.Is(err, unix.EINTR) {
				// Nothing else can fail on a valid set; should it ever,
				// the loop must not spin on a core of a PID 1.
				time.Sleep(10 * time.Millisecond)
			}
		}
		var resume []*Waiter
		p.mu.Lock()
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if tok == 0 {
				var b [8]byte
				_, _ = unix.Read(p.wakefd, b[:])
				continue
			}
			if w := p.waiting[tok]; w != nil {
				delete(p.waiting, tok)
				w.token = 0
				resume = append(resume, w)
			}
		}
		stop := len(p.waiting) == 0
		if stop {
			p.running = false
		}
		p.mu.Unlock()
		for _, w := range resume {
			go w.resume()
		}
		if stop {
			return
		}
	}
}

// sweep resumes the parked streams that are closed.
func (p *poller) sweep() {
	var closed []*Waiter
	p.mu.Lock()
	for tok, w := range p.waiting {
		if w.rc.Control(func(uintptr) {}) != nil {
			delete(p.waiting, tok)
			w.token = 0
			closed = append(closed, w)
		}
	}
	p.mu.Unlock()
	for _, w := range closed {
		go w.resume()
	}
}

// A Waiter parks one stream. Its methods may be called from any
// goroutine; resume runs once per Park that returned nil, on a new
// goroutine.
type Waiter struct {
	rc syscall.RawConn
	// Guarded by thePoller.mu.
	resume func() // the current park's
	token  uint64 // of the current park; 0: not parked
	added  bool   // the descriptor is in the set (disarmed once it fired)
}

// NewWaiter returns a Waiter for the stream rc.
func NewWaiter(rc syscall.RawConn) *Waiter {
	return &Waiter{rc: rc}
}

// Park arms w: resume runs once input or the end of input is there, or
// once Unpark is called. The caller must have found nothing to read
// (EAGAIN) and must not touch the stream's reading state after Park
// returns nil, since resume may already be running. An error (the stream
// is closed, or cannot be parked: ErrNoParking) means resume will not
// run for this park.
func (w *Waiter) Park(resume func()) error {
	p := &thePoller
	if err := p.init(); err != nil {
		return ErrNoParking
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	tok := p.next
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT,
		Fd:     int32(uint32(tok)),
		Pad:    int32(uint32(tok >> 32)),
	}
	var cerr error
	err := w.rc.Control(func(fd uintptr) {
		op := unix.EPOLL_CTL_ADD
		if w.added {
			op = unix.EPOLL_CTL_MOD
		}
		cerr = unix.EpollCtl(p.epfd, op, int(fd), &ev)
	})
	if err != nil {
		return err // closed
	}
	if cerr != nil {
		if errors.Is(cerr, unix.EPERM) {
			return ErrNoParking // a file epoll cannot watch
		}
		return cerr
	}
	w.added = true
	w.token = tok
	w.resume = resume
	p.waiting[tok] = w
	if !p.running {
		p.running = true
		go p.loop()
	}
	return nil
}

// Unpark ends w's park, if it is parked, by running resume now (on a new
// goroutine), whether or not input is there. It reports whether it did.
// Called after the stream is closed, it makes the parked reader find the
// stream closed; the descriptor's registration went with it.
func (w *Waiter) Unpark() bool {
	p := &thePoller
	p.mu.Lock()
	tok := w.token
	if tok != 0 {
		delete(p.waiting, tok)
		w.token = 0
		if len(p.waiting) == 0 && p.running {
			// Let the watch end now rather than at its next sweep.
			_, _ = unix.Write(p.wakefd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		}
	}
	p.mu.Unlock()
	if tok == 0 {
		return false
	}
	go w.resume()
	return true
}

// Parked returns how many streams are parked (for tests and stats).
func Parked() int {
	p := &thePoller
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}
