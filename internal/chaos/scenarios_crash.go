package chaos

import (
	"sync"
	"time"
)

// crashLoops kills a random holder and starts it again, 100 times.
func crashLoops(e *Env) error {
	sc := serviceConfig{machines: "0-11", leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence, supervise: true}
	svcs, err := e.startServices(4, sc)
	if err != nil {
		return err
	}
	var libs []*library
	for range 2 {
		l, err := e.addLibrary(libraryConfig{machines: "12-23", generators: 2, rate: 5000, batch: 50,
			leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence})
		if err != nil {
			return err
		}
		libs = append(libs, l)
	}
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	every := scale(e, 250*time.Millisecond, 1500*time.Millisecond)
	const kills = 100
	var restarts sync.WaitGroup
	var slowest struct {
		sync.Mutex
		d                time.Duration
		killed, returned int // service kills, and restarts that served
	}
	for k := range kills {
		victim := e.rng.IntN(len(svcs) + len(libs))
		if victim < len(svcs) {
			s := svcs[victim]
			s.kill()
			if err := s.start(); err != nil {
				return err
			}
			slowest.Lock()
			slowest.killed++
			slowest.Unlock()
			restarts.Go(func() {
				t := time.Now()
				if s.waitServing(e.ctx, 60*time.Second) == nil {
					slowest.Lock()
					slowest.d = max(slowest.d, time.Since(t))
					slowest.returned++
					slowest.Unlock()
				}
			})
		} else {
			l := libs[victim-len(svcs)]
			e.kill(l.proc())
			if err := l.start(); err != nil {
				return err
			}
		}
		if k%20 == 19 {
			e.logf("%d kills", k+1)
		}
		if err := e.wait(every); err != nil {
			return err
		}
	}
	if err := e.waitServices(svcs, 60*time.Second); err != nil {
		return err
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	restarts.Wait()
	e.recovered(slowest.d, "the slowest restarted service to serve again")
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	load.stop()
	e.check("every SIGKILLed service served again", slowest.returned == slowest.killed,
		"%d of %d service restarts served within 60 s (%d kills in all, one every %v; the library holders' restarts are checked by waitReady)",
		slowest.returned, slowest.killed, kills, every)
	return nil
}
