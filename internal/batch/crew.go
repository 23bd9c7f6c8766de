package batch

import "sync"

// crew is the goroutines that serve one of the batcher's queues (the
// appender's, the lookups'). Its owner guards its queue and stopped with
// mu, kicks after queueing, and a worker that found nothing to take waits
// in idle, unless stopped, when it returns.
type crew struct {
	mu sync.Mutex
	// stopped, under mu: stop was called and nothing more is queued.
	stopped bool
	// wake tells an idle worker the queue changed (one pending wake-up is
	// enough: a worker takes all it can before it idles again); quit,
	// closed by stop, that no more work comes.
	wake, quit chan struct{}
	workers    sync.WaitGroup
}

// start runs n workers of work.
func (c *crew) start(n int, work func()) {
	c.wake, c.quit = make(chan struct{}, 1), make(chan struct{})
	for range n {
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			work()
		}()
	}
}

// kick wakes an idle worker, if none is waking already.
func (c *crew) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// idle waits for a kick or for stop.
func (c *crew) idle() {
	select {
	case <-c.wake:
	case <-c.quit:
	}
}

// stop marks the crew stopped and waits for its workers, which finish
// what is queued first. Calling it again only waits.
func (c *crew) stop() {
	c.mu.Lock()
	first := !c.stopped
	c.stopped = true
	c.mu.Unlock()
	if first {
		close(c.quit)
	}
	c.workers.Wait()
}
